"""`inspect` and `lint` run straight from the command line, without typer, when it is one
that typer would read plainly.

Importing typer (and the command-line library inside it) and building the app took about
22 ms of every run: a quarter of `meshdiag inspect` of a small file, and of the start-up of
each big run. The two commands a user or a CI step runs most have only plain parameters
(`str`, `int`, `bool` flags, repeatable `list[str]` options and one list of paths), which
`parse` reads the way typer's parser does: options anywhere among the paths, `--opt value`,
`--opt=value`, `-o value`, `-ovalue` (so `-o=v` is `=v`), the last of a repeated option,
every repeat of a repeatable one. A command line holding anything else (`--help`, `--`, an
unknown option, bundled flags, a value that starts with `-`, an integer typer reads
otherwise, no paths where they are required, another command) is not taken: `run` says so
and typer runs it, so its answers and error messages stay typer's.

`COMMANDS` restates each command's parameters; tests/test_direct_cli.py checks it against
what typer builds from the command's signature, and every command line of a generated set
against typer's own reading of it.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import NamedTuple

from meshdiag.cli.plain_params import DECIMAL  # an integer typer reads as it is

#: a parameter's kinds: one value kept as it is, a decimal integer, a flag, a repeatable one
STR, INT, FLAG, LIST = "str", "int", "flag", "list"


class Command(NamedTuple):
    """A command's parameters: where its function is, its list of paths (and whether one
    is required), and each option's spellings → (parameter, kind)."""

    module: str
    function: str
    paths: str
    paths_required: bool
    options: dict[str, tuple[str, str]]


def _options(*specs: tuple[str, str, tuple[str, ...]]) -> dict[str, tuple[str, str]]:
    return {flag: (name, kind) for name, kind, flags in specs for flag in flags}


_SHARED = (
    ("mesh", STR, ("--mesh", "-m")),
    ("target", STR, ("--target", "-t")),
    ("split", STR, ("--split",)),
    ("fmt", STR, ("--format", "-f")),
    ("jobs", INT, ("--jobs", "-j")),
)

COMMANDS: dict[str, Command] = {
    "inspect": Command(
        "meshdiag.cli.commands.inspect",
        "inspect",
        "paths",
        True,
        _options(
            *_SHARED,
            ("layouts", FLAG, ("--layouts",)),
            ("quiet", FLAG, ("--quiet", "-q")),
            ("html", STR, ("--html",)),
        ),
    ),
    "lint": Command(
        "meshdiag.cli.commands.lint",
        "lint",
        "paths",
        False,
        _options(
            *_SHARED,
            ("output_format", STR, ("--output-format",)),
            ("output_file", STR, ("--output-file", "-o")),
            ("select", LIST, ("--select",)),
            ("extend_select", LIST, ("--extend-select",)),
            ("ignore", LIST, ("--ignore",)),
            ("per_file_ignores", LIST, ("--per-file-ignores",)),
            ("exclude", LIST, ("--exclude",)),
            ("fail_on", STR, ("--fail-on",)),
            ("exit_zero", FLAG, ("--exit-zero",)),
            ("statistics", FLAG, ("--statistics",)),
            ("baseline", STR, ("--baseline",)),
            ("write_baseline", STR, ("--write-baseline",)),
            ("config", STR, ("--config",)),
            ("isolated", FLAG, ("--isolated",)),
            ("color", STR, ("--color",)),
            ("stdin_filename", STR, ("--stdin-filename",)),
            ("collective_budget", STR, ("--collective-budget",)),
            ("remat_min_bytes", STR, ("--remat-min-bytes",)),
        ),
    ),
}


def parse(argv: list[str]) -> tuple[Command, dict[str, object]] | None:
    """(the command, the arguments typer would call it with, besides those left at their
    defaults) for a command line read plainly; None for any other."""
    if not argv or argv[0] not in COMMANDS:
        return None
    cmd = COMMANDS[argv[0]]
    options = cmd.options
    got: dict[str, object] = {}
    paths: list[str] = []
    i, n = 1, len(argv)
    while i < n:
        arg = argv[i]
        i += 1
        if arg == "-" or not arg.startswith("-"):
            paths.append(arg)
            continue
        if arg.startswith("--"):
            flag, eq, value = arg.partition("=")
            attached = value if eq else None
        else:  # `-o` or `-ovalue` (bundled flags such as `-qj2` are typer's)
            flag, attached = arg[:2], arg[2:] or None
        spec = options.get(flag)
        if spec is None:
            return None
        name, kind = spec
        if kind == FLAG:
            if attached is not None:
                return None
            got[name] = True
            continue
        if attached is None:
            if i >= n or argv[i].startswith("-"):
                return None  # no value, or one typer may read otherwise
            attached = argv[i]
            i += 1
        if kind == INT:
            if not DECIMAL.fullmatch(attached):
                return None
            got[name] = int(attached)
        elif kind == LIST:
            got.setdefault(name, []).append(attached)  # type: ignore[union-attr]
        else:
            got[name] = attached
    if paths:
        got[cmd.paths] = paths
    elif cmd.paths_required:
        return None  # typer's "Missing argument"
    return cmd, got


class Aborted(Exception):
    """The command read past the end of its input: what typer shows as `aborted`
    (`cli.app._run`)."""


#: typer's shell completion runs when this is set: typer's to answer
COMPLETION_VAR = "_MESHDIAG_COMPLETE"


def run(argv: list[str], wrap: Callable[[Callable], Callable]) -> tuple[bool, object]:
    """(True, what the command returned) when `argv` is read plainly and the command ran;
    (False, None) when it is typer's to run. `wrap` is what the app runs a command through
    (its closed-output handling). An end of input or a KeyboardInterrupt in the command
    comes out as typer's does: `Aborted` after an empty line, and exit status 130."""
    parsed = parse(argv) if COMPLETION_VAR not in os.environ else None
    if parsed is None:
        return False, None
    cmd, kwargs = parsed
    fn = getattr(importlib.import_module(cmd.module), cmd.function)
    try:
        return True, wrap(fn)(**kwargs)
    except EOFError:
        print(file=sys.stderr)
        raise Aborted from None
    except KeyboardInterrupt:
        return True, 130
