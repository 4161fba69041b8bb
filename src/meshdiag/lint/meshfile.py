"""Mesh config files (`*.toml` / `*.json` holding a `[mesh]` table or an `axes` key).

Lint checks the mesh such a file declares against the target (MD103/MD104) by presenting it
to the checks as a module with one inline mesh declaration; a file that holds a mesh but does
not parse is an MD001 finding. Project config files (`meshdiag.toml`, `pyproject.toml`) are
configuration, never mesh files.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from dataclasses import dataclass

from ..checks.mesh_target import MESH_ONLY_CODES
from ..errors import MeshdiagError

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


def read_mesh_file(path: str) -> MeshFile | None:
    """The mesh a config file declares; None when the file holds no mesh (not ours)."""
    try:
        if os.path.getsize(path) > MAX_MESH_FILE_BYTES:
            return None
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError as e:
        return MeshFile(path, None, 1, 1, f"cannot read {path}: {e.strerror or e}")
    line, column = _declaration_line(text)
    try:
        doc = json.loads(text) if path.endswith(".json") else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as e:
        if not _HINT_RE.search(text):
            return None  # a broken file that does not even look like a mesh is not ours
        kind = "JSON" if path.endswith(".json") else "TOML"
        if isinstance(e, json.JSONDecodeError):
            line, column = e.lineno, e.colno
        return MeshFile(path, None, line, column, f"mesh file is not valid {kind}: {e}")
    if not _holds_mesh(doc):
        return None
    from ..formats.meshtext import parse_mesh

    try:
        mesh = parse_mesh(path)
    except MeshdiagError as e:
        where = getattr(e, "line", None) if getattr(e, "path", None) == path else None
        if where is not None:  # located by the mesh model: that key's line
            return MeshFile(path, None, where, 1, f"cannot parse the mesh: {e.detail}")
        return MeshFile(path, None, line, column, f"cannot parse the mesh: {e}")
    return MeshFile(path, mesh, line, column)


def as_module(mf: MeshFile):
    """The mesh file as a one-mesh module, so the module checks can run over it."""
    from ..checks.mesh_target import mesh_as_module

    return mesh_as_module(mf.mesh, mf.line, mf.column)
