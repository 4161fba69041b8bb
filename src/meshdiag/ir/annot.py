"""Parse annotation texts found in dumps, each distinct text once (they repeat thousands of
times across passes).

Results are plain records: the parsed sharding (or None), its tiled form when it can be
computed, and the parser's message and offset when the text does not parse.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from meshdiag import limits
from meshdiag.errors import MeshdiagError, ParseError

if TYPE_CHECKING:
    from meshdiag.model.mesh import Mesh
    from meshdiag.model.sharding import HloSharding, NamedSharding

#: a module's meshes as a hashable key: ((name, Mesh), ...)
MeshKey = tuple[tuple[str, "Mesh"], ...]


@dataclass(frozen=True)
class Parsed:
    sharding: HloSharding | NamedSharding | None
    hlo: HloSharding | None = None
    error: str | None = None
    offset: int = 0  # 0-based offset of the error in the text


def _error(e: MeshdiagError) -> tuple[str, int]:
    if isinstance(e, ParseError):
        return str(e), e.pos
    return str(e), 0


def parse_named_mesh(text: str, name: str) -> tuple[Mesh | None, str | None, int]:
    """`parse_mesh(text)` with the mesh named `name` (frozen, so one object serves every
    module that declares it)."""
    mesh, err, off = parse_mesh(text)
    if mesh is not None:
        from dataclasses import replace

        mesh = replace(mesh, name=name)
    return mesh, err, off


def parse_mesh(text: str) -> tuple[Mesh | None, str | None, int]:
    """(mesh, error, offset) for a mesh attribute `<[...]>` / `#sdy.mesh<...>`."""
    from meshdiag.notation.shardy import parse_mesh_attr

    try:
        limits.check_annotation_length(text, "mesh")
        return parse_mesh_attr(text), None, 0
    except MeshdiagError as e:
        msg, off = _error(e)
        return None, msg, off


def _named_hlo(s: NamedSharding, manual_axes: tuple[str, ...]) -> HloSharding | None:
    from meshdiag.model.named_to_tiled import named_to_hlo

    if s.mesh is None:
        return None
    try:
        return named_to_hlo(s, manual_axes=manual_axes)
    except MeshdiagError:  # invalid for its mesh: the checks report why
        return None


def parse_named(text: str, meshes: MeshKey, manual_axes: tuple[str, ...] = ()) -> Parsed:
    """One Shardy sharding: `#sdy.sharding<...>` or the stripped `<@mesh, [...]>`."""
    from meshdiag.notation.shardy import parse_sdy_sharding

    try:
        limits.check_annotation_length(text, "sharding")
        s = parse_sdy_sharding(text, dict(meshes))
    except MeshdiagError as e:
        msg, off = _error(e)
        return Parsed(None, None, msg, off)
    return Parsed(s, _named_hlo(s, manual_axes))


def parse_per_value(
    text: str, meshes: MeshKey, manual_axes: tuple[str, ...] = ()
) -> tuple[list[Parsed], str | None, int]:
    """`#sdy.sharding_per_value<[...]>`: one record per value, or an error."""
    from meshdiag.notation.shardy import parse_sharding_per_value

    try:
        limits.check_annotation_length(text, "sharding")
        items = parse_sharding_per_value(text, dict(meshes))
    except MeshdiagError as e:
        msg, off = _error(e)
        return [], msg, off
    return [Parsed(s, _named_hlo(s, manual_axes)) for s in items], None, 0


def parse_hlo_text(text: str) -> Parsed:
    """A GSPMD HloSharding string (a tuple stays one record; see `leaves`)."""
    from meshdiag.notation.gspmd import parse_gspmd

    try:
        limits.check_annotation_length(text, "sharding")
        s = parse_gspmd(text)
    except MeshdiagError as e:
        msg, off = _error(e)
        return Parsed(None, None, msg, off)
    return Parsed(s, s)


def leaves(p: Parsed) -> list[Parsed]:
    """The per-value records of a GSPMD sharding: tuple elements (flattened), else itself."""
    s = p.sharding
    if s is None or getattr(s, "kind", None) != "tuple":
        return [p]
    return [Parsed(e, e) for e in s.leaves()]  # type: ignore[union-attr]
