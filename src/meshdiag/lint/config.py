"""Lint configuration: find the project config, validate it, merge it with the command line.

Like ruff: the closest `meshdiag.toml` or `pyproject.toml` with a `[tool.meshdiag]` table,
searching from the working directory upward, wins alone (no merging across files); a
`pyproject.toml` without the table does not count; in one directory `meshdiag.toml` beats
`pyproject.toml`. `--config FILE` names the file, `--isolated` ignores every config file.
Command-line options override the file. TOML is read with `tomllib` only.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from meshdiag.errors import MeshdiagError
from meshdiag.lint.select import (
    PathGlob,
    PerFileIgnore,
    SelectionLayer,
    parse_per_file_ignores,
    resolve_selection,
    table_per_file_ignores,
)
from meshdiag.memo import RunMemos
from meshdiag.model.findings import SEVERITIES
from meshdiag.model.splits import SPLIT_RULES

if TYPE_CHECKING:
    from meshdiag.model.mesh import Mesh

CONFIG_NAMES = ("meshdiag.toml", "pyproject.toml")  # priority inside one directory
#: rules a `select` cannot leave out, only an `ignore` (`lint.select`): input that cannot be
#: read, which every other rule then did not see
ALWAYS_ON = ("MD001",)

#: the default of remat-min-bytes (MD202 reports gathers of whole tensors from this size)
REMAT_MIN_BYTES = 1 << 20


@dataclass(frozen=True)
class FileConfig:
    path: str  # absolute path of the file
    values: dict  # the keys the file sets, validated (`inputs/config_model.py`)
    text: str = ""  # the file's text, to locate errors found later (the mesh)

    @property
    def base(self) -> str:
        """Directory that relative paths and globs in the file are anchored at."""
        return os.path.dirname(self.path)

    @property
    def label(self) -> str:
        return _label(self.path)


def _label(path: str) -> str:
    """How messages name a config file: its meshdiag table in a pyproject.toml, else the file."""
    return f"[tool.meshdiag] in {path}" if os.path.basename(path) == "pyproject.toml" else path


def _read_toml(path: str) -> tuple[str, dict]:
    """The config file's text and what it parses to."""
    from meshdiag.fileio import parse_nested, read_text

    text = read_text(path, "config")
    try:
        return text, parse_nested(tomllib.loads, text, f"config {path}")
    except tomllib.TOMLDecodeError as e:
        raise MeshdiagError(f"config {path} is not valid TOML: {e}") from None


def _table(path: str, doc: dict) -> dict | None:
    """The meshdiag settings in a parsed file (None: a pyproject.toml without the table)."""
    if os.path.basename(path) != "pyproject.toml":
        return doc
    tool = doc.get("tool")
    table = tool.get("meshdiag") if isinstance(tool, dict) else None
    if table is None:
        return None
    if not isinstance(table, dict):
        raise MeshdiagError(f"[tool.meshdiag] in {path} must be a table")
    return table


def find_config(start: str | None = None) -> str | None:
    """The closest config file at or above `start` (default: the working directory)."""
    found = _find_config(start)
    return None if found is None else found[0]


def _find_config(start: str | None) -> tuple[str, tuple[str, dict] | None] | None:
    """`find_config`'s file, with the (text, parsed) of a pyproject.toml it read to tell
    whether it holds the table (None for a meshdiag.toml, which it did not read)."""
    directory = os.path.abspath(start or os.getcwd())
    while True:
        for name in CONFIG_NAMES:
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate):
                if name != "pyproject.toml":
                    return candidate, None
                read = _read_toml(candidate)
                if _table(candidate, read[1]) is not None:
                    return candidate, read
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def _source(path: str, text: str):
    from meshdiag.inputs.problems import Source

    prefix = ("tool", "meshdiag") if os.path.basename(path) == "pyproject.toml" else ()
    return Source(path, text, False, prefix)


def load_config(path: str, read: tuple[str, dict] | None = None) -> FileConfig:
    """Read and validate one config file (`meshdiag.toml`-style or a pyproject.toml);
    `read`: its (text, parsed) when the caller has read it already (`_find_config`).

    A table of plain values is read as it is (`inputs/plain_config.py`); any other is
    validated by its model (`inputs/config_model.py`, pydantic), whose errors name the
    file, the key and its line."""
    from meshdiag.inputs.plain_config import plain_values

    path = os.path.abspath(path)
    # (the text also locates a value's problem: the file is read once)
    text, doc = read if read is not None else _read_toml(path)
    table = _table(path, doc)
    if table is None:
        raise MeshdiagError(f"{path} has no [tool.meshdiag] table")
    values = plain_values(table)
    if values is None:
        from meshdiag.inputs.config_model import config_values, validate_config

        values = config_values(validate_config(table, _source(path, text)))
    return FileConfig(path, values, text)


# -- merging with the command line ---------------------------------------------------------


@dataclass
class CliOptions:
    """What the command line said; None / empty = not given."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    mesh: str | None = None
    target: str | None = None
    split: str | None = None
    fail_on: str | None = None
    config: str | None = None
    isolated: bool = False
    collective_budget: str | None = None
    remat_min_bytes: str | None = None
    stdin_filename: str | None = None


@dataclass(frozen=True)
class LintSettings:
    """Everything a worker needs to lint one file (picklable)."""

    codes: frozenset[str]  # enabled rule codes
    per_file_ignores: tuple[PerFileIgnore, ...] = ()
    exclude: tuple[PathGlob, ...] = ()
    mesh: Mesh | None = None
    target: str | None = None
    split: str = "xla"
    fail_on: str = "warning"
    root: str = field(default_factory=os.getcwd)  # config directory, else the cwd
    config_path: str | None = None
    collective_budget: int | None = None  # bytes per device per collective (MD201)
    remat_min_bytes: int = REMAT_MIN_BYTES  # MD202's smallest reported tensor
    #: what a dump on stdin is called (reports, per-file ignores); None: `<stdin>`
    stdin_filename: str | None = None
    #: the run's memos: shared by the files linted in one process (a worker process gets its
    #: own copy with the settings)
    memos: RunMemos = field(default_factory=RunMemos, compare=False, repr=False)


def _parse_mesh(text: str, where: str):
    from meshdiag.inputs.mesh_input import parse_mesh

    try:
        return parse_mesh(text)
    except MeshdiagError as e:
        raise MeshdiagError(f"mesh {text!r} from {where}: {e}") from None


def resolve_settings(cli: CliOptions, codes: Iterable[str], cwd: str | None = None) -> LintSettings:
    """Merge the command line over the config file into the settings for a run."""
    cwd = os.path.abspath(cwd or os.getcwd())
    codes = sorted(codes)
    config: FileConfig | None = None
    if cli.config is not None:
        config = load_config(os.path.join(cwd, cli.config))
    elif not cli.isolated:
        found = _find_config(cwd)
        config = load_config(*found) if found else None
    values = config.values if config else {}
    origin = config.label if config else "config"
    base = config.base if config else cwd

    layers = []
    if config:
        layers.append(
            SelectionLayer(
                select=tuple(values["select"]) if "select" in values else None,
                extend_select=tuple(values.get("extend-select", ())),
                ignore=tuple(values.get("ignore", ())),
                origin=origin,
            )
        )
    layers.append(SelectionLayer(cli.select, tuple(cli.extend_select), tuple(cli.ignore)))
    enabled = resolve_selection(codes, layers, always=ALWAYS_ON)

    pfi = table_per_file_ignores(values.get("per-file-ignores", {}), codes, base, origin)
    pfi += parse_per_file_ignores(cli.per_file_ignores, codes, cwd)
    if cli.exclude:  # the command line replaces the file's list (globs anchored at the cwd)
        exclude = [PathGlob(g, cwd) for g in cli.exclude]
    else:
        exclude = [PathGlob(g, base) for g in values.get("exclude", ())]

    if cli.mesh is not None:
        mesh = _parse_mesh(cli.mesh, "--mesh") if cli.mesh else None
    elif config is not None and "mesh" in values:
        from meshdiag.inputs.mesh_input import config_mesh

        mesh = config_mesh(values["mesh"], _source(config.path, config.text), base)
    else:
        mesh = None

    target = cli.target if cli.target is not None else values.get("target")
    if target:
        from meshdiag.model.targets import get_target

        get_target(target)  # unknown targets fail here, once, with the target's own message
    split = cli.split or values.get("split") or "xla"
    if split not in SPLIT_RULES:
        raise MeshdiagError(f"unknown --split {split!r}; expected one of {', '.join(SPLIT_RULES)}")
    fail_on = cli.fail_on or values.get("fail-on") or "warning"
    if fail_on not in SEVERITIES:
        raise MeshdiagError(
            f"unknown --fail-on {fail_on!r}; expected one of {', '.join(SEVERITIES)}"
        )
    from meshdiag.notation.byte_size import parse_size

    budget = (
        parse_size(cli.collective_budget, "--collective-budget")
        if cli.collective_budget is not None
        else values.get("collective-budget")
    )
    remat = (
        parse_size(cli.remat_min_bytes, "--remat-min-bytes")
        if cli.remat_min_bytes is not None
        else values.get("remat-min-bytes", REMAT_MIN_BYTES)
    )
    return LintSettings(
        codes=enabled,
        per_file_ignores=tuple(pfi),
        exclude=tuple(exclude),
        mesh=mesh,
        target=target or None,
        split=split,
        fail_on=fail_on,
        root=base,
        config_path=config.path if config else None,
        collective_budget=budget,
        remat_min_bytes=remat,
        stdin_filename=cli.stdin_filename,
    )
