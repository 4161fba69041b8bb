"""`cli.direct`: the command lines it runs without typer are read exactly as typer reads
them, and its table of parameters is the one typer builds from each command's signature."""

from __future__ import annotations

import functools
import importlib
import inspect as pyinspect
import io
import typing
from contextlib import redirect_stderr, redirect_stdout

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from meshdiag.cli import direct
from meshdiag.cli.direct import COMMANDS, FLAG, INT, LIST, STR

NAMES = sorted(COMMANDS)


def _typer_command(name: str):
    import typer

    from meshdiag.cli.app import build_app

    return typer.main.get_command(build_app(name)).commands[name]


def _kind(annotation) -> str:
    args = set(typing.get_args(annotation)) - {type(None)} or {annotation}
    if args == {bool}:
        return FLAG
    if args == {int}:
        return INT
    if args == {str}:
        return STR
    if args == {list[str]}:
        return LIST
    raise AssertionError(f"not a plain parameter: {annotation}")


@pytest.mark.parametrize("name", NAMES)
def test_the_table_is_what_typer_builds_from_the_signature(name):
    cmd = COMMANDS[name]
    typer_cmd = _typer_command(name)  # (registering binds the names the annotations use)
    fn = getattr(importlib.import_module(cmd.module), cmd.function)
    hints = typing.get_type_hints(fn)
    options = {}
    arguments = []
    for p in typer_cmd.params:
        assert p.envvar is None and p.callback is None and not p.is_eager and p.expose_value
        if p.param_type_name == "argument":
            arguments.append((p.name, p.nargs, p.required))
            continue
        assert not p.secondary_opts and not p.count and p.prompt is None
        assert p.nargs == 1
        kind = FLAG if p.is_flag else LIST if p.multiple else _kind(hints[p.name])
        assert kind == _kind(hints[p.name])
        options.update({flag: (p.name, kind) for flag in p.opts})
    assert arguments == [(cmd.paths, -1, cmd.paths_required)]
    assert options == cmd.options
    assert set(pyinspect.signature(fn).parameters) == {cmd.paths} | {n for n, _ in options.values()}


class _Recorded(Exception):
    """What the command was called with (raised so that nothing runs)."""

    def __init__(self, kwargs: dict) -> None:
        super().__init__()
        self.kwargs = kwargs


def _typer_reading(name: str, argv: list[str]) -> dict | None:
    """The arguments typer calls command `name` with for `argv`, or None when it does not
    call it (a usage error, --help)."""
    import typer

    from meshdiag.cli.app import build_app

    cmd = COMMANDS[name]
    module = importlib.import_module(cmd.module)
    real = getattr(module, cmd.function)

    @functools.wraps(real)
    def record(**kwargs):
        raise _Recorded(kwargs)

    setattr(module, cmd.function, record)
    try:
        app = build_app(name)
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            app(args=argv, prog_name="meshdiag", standalone_mode=False)
    except _Recorded as r:
        return r.kwargs
    except (typer.TyperException, typer.Abort, typer.Exit):
        return None
    finally:
        setattr(module, cmd.function, real)
    return None


def _pieces(name: str) -> tuple[list[list[str]], list[list[str]]]:
    """What a command line of `name` is drawn from: its options each with a plain value
    and paths, and words typer reads its own way (options written every other way, odd
    values, `--`, help, bundled flags, unknown options, integers typer reads otherwise)."""
    cmd = COMMANDS[name]
    plain = [["d.mlir"], ["dir"], ["-"], [""]]
    odd = [[w] for w in ("--", "-h", "--help", "--nope", "-Z", "--version", "-qj2", "=x")]
    odd += [[w] for w in ("x y", "4", "0", "007", "-1", "1_0", " 3", "a=b")]
    for flag, (_, kind) in cmd.options.items():
        if kind == FLAG:
            plain.append([flag])
            odd += [[f"{flag}=1"], [f"{flag}x"], [f"--no-{flag.lstrip('-')}"]]
            continue
        values = ["4", "12"] if kind == INT else ["v", "a=b", "4", ""]
        plain += [[flag, v] for v in values]
        plain += [[f"{flag}={v}"] if flag.startswith("--") else [flag + v] for v in values]
        odd += [[flag], [flag, "-x"], [flag, "007"], [f"{flag}=-x"], [f"{flag}=3"]]
        if not flag.startswith("--"):
            odd += [[f"{flag}=7"], [f"{flag}-2"], [f"{flag}v"]]
    return plain, odd


def _line(name: str):
    plain, odd = _pieces(name)
    piece = st.one_of(st.sampled_from(plain), st.sampled_from(plain), st.sampled_from(odd))
    return st.lists(piece, max_size=6).map(lambda ps: (name, [w for p in ps for w in p]))


_LINES = st.sampled_from(NAMES).flatmap(_line)


@settings(max_examples=400, deadline=None)
@given(_LINES)
@example(("inspect", ["d.mlir"]))
@example(("inspect", ["-j", "4", "--format", "json", "d.mlir", "-q", "dir"]))
@example(("inspect", ["--mesh=a=b", "-mx", "d.mlir", "-j4"]))
@example(("lint", []))
@example(("lint", ["--select", "MD1", "--select", "MD2", "dir", "-o", "out", "--exit-zero"]))
@example(("lint", ["-", "--stdin-filename", "x.mlir", "--color=never", "--jobs=2"]))
def test_a_command_line_taken_is_read_as_typer_reads_it(line):
    name, words = line
    argv = [name, *words]
    mine = direct.parse(argv)
    theirs = _typer_reading(name, argv)
    if mine is None:
        return  # typer's to run: whatever it says is right
    assert theirs is not None, f"{argv} is taken but typer refuses it"
    cmd, kwargs = mine
    fn = getattr(importlib.import_module(cmd.module), cmd.function)
    defaults = {k: p.default for k, p in pyinspect.signature(fn).parameters.items()}
    assert {**defaults, **kwargs} == theirs


@pytest.mark.parametrize(
    "argv",
    [
        ["inspect", "d.mlir"],
        ["inspect", "-j", "4", "--format", "json", "d.mlir", "-q", "dir"],
        ["inspect", "--mesh=a=b", "-mx", "d.mlir", "-j4", "--html", "p.html", "--layouts"],
        ["lint"],
        ["lint", "--select", "MD1", "--select", "MD2", "dir", "-o", "out", "--exit-zero"],
        ["lint", "-", "--stdin-filename", "x.mlir", "--color=never", "--jobs=2", "--isolated"],
    ],
)
def test_everyday_command_lines_are_taken(argv):
    """(the property above holds for any command line left to typer: these must not be)"""
    assert direct.parse(argv) is not None


@pytest.mark.parametrize(
    "argv",
    [
        ["inspect"],  # no paths: typer says which argument is missing
        ["inspect", "--help"],
        ["inspect", "-h", "d.mlir"],
        ["inspect", "--", "-odd-name"],
        ["inspect", "-qj2", "d.mlir"],
        ["inspect", "-j", "007", "d.mlir"],
        ["inspect", "--mesh", "-x", "d.mlir"],
        ["inspect", "--quiet=yes", "d.mlir"],
        ["inspect", "-j=4", "d.mlir"],
        ["inspect", "d.mlir", "--mesh"],
        ["--version"],
        ["layout", "x"],
        [],
    ],
)
def test_other_command_lines_are_left_to_typer(argv):
    assert direct.parse(argv) is None


def test_shell_completion_is_left_to_typer(monkeypatch):
    monkeypatch.setenv(direct.COMPLETION_VAR, "bash_complete")
    assert direct.run(["inspect", "d.mlir"], lambda fn: fn) == (False, None)


@pytest.mark.parametrize(
    "raised, status, says",
    [(EOFError, 2, "\nmeshdiag: aborted\n"), (KeyboardInterrupt, 130, "")],
)
def test_the_command_ending_early_comes_out_as_typer_has_it(
    monkeypatch, capsys, raised, status, says
):
    """An end of input or a KeyboardInterrupt inside the command: the same message and
    exit status whether it ran directly or through typer (`--` makes typer run it)."""
    from meshdiag.cli.app import main
    from meshdiag.cli.commands import inspect as command

    real = command.inspect

    @functools.wraps(real)
    def ends(**kwargs):
        raise raised

    monkeypatch.setattr(command, "inspect", ends)
    seen = []
    for argv in (["inspect", "d.mlir"], ["inspect", "--", "d.mlir"]):
        assert (direct.parse(argv) is not None) == (argv[1] != "--")
        with pytest.raises(SystemExit) as e:
            main(argv)
        seen.append((e.value.code, capsys.readouterr().err))
    assert seen[0] == seen[1] == (status, says)
