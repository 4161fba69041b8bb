"""A mesh as a user gives it, in any form: a notation (`notation/meshtext.py`), a mapping
written inline (torch_xla's `Mesh.__str__` dict, JSON) or a `.toml`/`.json` file, and the
mesh a config declares. Mappings and files are validated by the models of `mesh_model.py`
and `config_model.py` (pydantic, imported only when one is read), so an error names the
file, the key and its line.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from meshdiag.errors import MeshdiagError
from meshdiag.fileio import parse_nested
from meshdiag.notation.meshtext import looks_like_mapping_or_file, parse_mesh_notation

if TYPE_CHECKING:
    from meshdiag.inputs.problems import Source
    from meshdiag.model.mesh import Mesh


def parse_mesh(text: str) -> Mesh:
    """A mesh in any form a user may write one (see the module docstring)."""
    t = text.strip()
    if t.startswith(("<", "#sdy.mesh", "sdy.mesh")) or not looks_like_mapping_or_file(t):
        return parse_mesh_notation(text)
    if t.startswith("{"):
        return _inline_mapping(t)
    from meshdiag.fileio import read_small

    return read_mesh_file(t, read_small(t, "mesh file", limit=1 << 22))


def _inline_mapping(t: str) -> Mesh:
    """torch_xla `Mesh.__str__` (Python dict) or JSON `{"axes": ..., "device_ids": ...}`:
    validated by the mesh model, errors unlocated (there is no file)."""
    from meshdiag.inputs.problems import Source
    from meshdiag.notation.pspec import parse_py_literal

    try:
        data = parse_nested(json.loads, t, "the mesh")
    except ValueError:  # torch_xla prints a Python dict (single quotes, tuples)
        data = parse_nested(parse_py_literal, t, "the mesh")
    if not isinstance(data, dict):
        raise MeshdiagError("a mesh object must be a mapping")
    return mesh_from_mapping(data, Source(None), "mesh")


def mesh_from_mapping(data: object, source: Source, what: str = "mesh") -> Mesh:
    """The mesh a parsed mapping declares: `mesh = "text"`, a `mesh` table, or the mapping
    itself as the table."""
    from meshdiag.inputs.mesh_model import MeshFileDoc, MeshTable, build_mesh
    from meshdiag.inputs.problems import validate

    if not isinstance(data, dict):
        raise source.located((), f"{what} must be a table/object")
    if "mesh" in data:
        doc = validate(MeshFileDoc, data, source)
        if isinstance(doc.mesh, str):
            return parse_mesh(doc.mesh)
        return build_mesh(doc.mesh, source, ("mesh",), what)
    table = validate(MeshTable, data, source)
    return build_mesh(table, source, (), what)


def read_mesh_file(path: str, raw: bytes) -> Mesh:
    """The mesh in a `.toml`/`.json` file's bytes (a pyproject.toml: its [tool.meshdiag])."""
    from meshdiag.inputs.problems import Source

    is_json = path.lower().endswith(".json")
    kind = "JSON" if is_json else "TOML"
    try:
        text = raw.decode("utf-8")
        if is_json:
            data = parse_nested(json.loads, text, f"mesh file '{path}'")
        else:
            import tomllib

            data = parse_nested(tomllib.loads, text, f"mesh file '{path}'")
    except (ValueError, UnicodeDecodeError) as e:  # TOMLDecodeError is a ValueError
        raise MeshdiagError(f"mesh file '{path}' is not valid {kind}: {e}") from None
    if not isinstance(data, dict):
        raise MeshdiagError(f"mesh file '{path}' must hold a table/object")
    tool = data.get("tool")
    if os.path.basename(path) == "pyproject.toml" or (
        isinstance(tool, dict) and "meshdiag" in tool
    ):
        from meshdiag.inputs.config_model import validate_config

        source = Source(path, text, is_json, ("tool", "meshdiag"))
        table = tool.get("meshdiag") if isinstance(tool, dict) else None
        if not isinstance(table, dict):
            raise MeshdiagError(f"mesh file '{path}' has no [tool.meshdiag] table")
        config = validate_config(table, source)
        mesh = config_mesh(config.mesh, source, os.path.dirname(os.path.abspath(path)))
        if mesh is None:
            raise source.located((), "[tool.meshdiag] has no 'mesh'")
        return mesh
    return mesh_from_mapping(data, Source(path, text, is_json))


def config_mesh(mesh: object, source: Source, base: str) -> Mesh | None:
    """The mesh of a config's `mesh` value (None without one): mesh text or a mesh file
    (relative to `base`), read without a model; a table, as a `MeshTable` or as the plain
    mapping a config's values keep (validated into one then)."""
    if mesh is None:
        return None
    if not isinstance(mesh, str):
        from meshdiag.inputs.mesh_model import MeshTable, build_mesh

        if not isinstance(mesh, MeshTable):
            from meshdiag.inputs.config_model import validate_config

            mesh = validate_config({"mesh": mesh}, source).mesh
        return build_mesh(mesh, source, ("mesh",), "mesh")  # type: ignore[arg-type]
    text = mesh
    if text.endswith((".toml", ".json")) and not os.path.isabs(text):
        candidate = os.path.join(base, text)
        if os.path.exists(candidate):
            text = candidate
    try:
        return parse_mesh(text)
    except MeshdiagError as e:
        raise source.located(("mesh",), f"mesh {mesh!r}: {e}") from None
