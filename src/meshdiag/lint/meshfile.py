"""Mesh config files (`*.toml` / `*.json` holding a `[mesh]` table or an `axes` key).

Lint checks the mesh such a file declares against the target (MD103/MD104) by presenting it
to the checks as a module with one inline mesh declaration; a file that holds a mesh but does
not parse is an MD001 finding. Project config files (`meshdiag.toml`, `pyproject.toml`) are
configuration, never mesh files.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass

from meshdiag.checks.mesh_target import MESH_ONLY_CODES
from meshdiag.errors import MeshdiagError

MESH_SUFFIXES = (".toml", ".json")
#: mesh files are small; anything bigger is not a mesh config
MAX_MESH_FILE_BYTES = 1 << 20
#: the rules that apply to a mesh on its own (no module, no values)
MESH_FILE_CODES = MESH_ONLY_CODES
_HINT_RE = re.compile(r"""^\s*(\[\s*mesh\s*\]|"?axes"?\s*[=:]|"mesh"\s*:)""", re.MULTILINE)


@dataclass
class MeshFile:
    path: str
    mesh: object | None  # Mesh, or None when it did not parse
    line: int  # where the mesh is declared (the `[mesh]` header or the `axes` key)
    column: int
    error: str | None = None  # why it did not parse


def _declaration_line(text: str) -> tuple[int, int]:
    m = _HINT_RE.search(text)
    if m is None:
        return 1, 1
    line = text.count("\n", 0, m.start(1)) + 1
    column = m.start(1) - (text.rfind("\n", 0, m.start(1)) + 1) + 1
    return line, column


def _holds_mesh(doc: object) -> bool:
    return isinstance(doc, dict) and (isinstance(doc.get("mesh"), dict) or "axes" in doc)


def read_mesh_file(path: str, name: str | None = None) -> MeshFile | None:
    """The mesh a config file declares; None when the file holds no mesh (not ours).
    `name` is what the file is called when `path` is a copy (a FIFO's, stdin's)."""
    name = name or path
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_MESH_FILE_BYTES + 1)
    except OSError as e:
        from meshdiag.fileio import describe_os_error

        return MeshFile(path, None, 1, 1, f"cannot read {name}: {describe_os_error(e)}")
    text = raw.decode("utf-8", errors="replace")
    if len(raw) > MAX_MESH_FILE_BYTES:
        if not _HINT_RE.search(text):
            return None  # a big data file, not a mesh config
        line, column = _declaration_line(text)
        return MeshFile(
            path,
            None,
            line,
            column,
            f"mesh file is over {MAX_MESH_FILE_BYTES} bytes, more than a mesh config holds; "
            "not read",
        )
    line, column = _declaration_line(text)
    kind = "JSON" if name.endswith(".json") else "TOML"
    import json  # (here: 2 ms of every lint's start-up, for the few mesh files it reads)

    try:
        doc = json.loads(text) if name.endswith(".json") else tomllib.loads(text)
    except RecursionError:
        if not _HINT_RE.search(text):
            return None
        return MeshFile(path, None, line, column, f"mesh file is {kind} nested too deeply")
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as e:
        if not _HINT_RE.search(text):
            return None  # a broken file that does not even look like a mesh is not ours
        if isinstance(e, json.JSONDecodeError):
            line, column = e.lineno, e.colno
        return MeshFile(path, None, line, column, f"mesh file is not valid {kind}: {e}")
    if not _holds_mesh(doc):
        return None
    from meshdiag.inputs.mesh_input import read_mesh_file as read_validated

    try:  # the bytes already read (a FIFO's or stdin's copy cannot be read twice)
        mesh = read_validated(name, raw)
    except MeshdiagError as e:
        where = getattr(e, "line", None) if getattr(e, "path", None) == name else None
        if where is not None:  # located by the mesh model: that key's line
            return MeshFile(path, None, where, 1, f"cannot parse the mesh: {e.detail}")
        return MeshFile(path, None, line, column, f"cannot parse the mesh: {e}")
    return MeshFile(path, mesh, line, column)


def as_module(mf: MeshFile):
    """The mesh file as a one-mesh module, so the module checks can run over it."""
    from meshdiag.checks.mesh_target import mesh_as_module

    return mesh_as_module(mf.mesh, mf.line, mf.column)
