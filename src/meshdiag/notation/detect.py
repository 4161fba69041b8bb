"""Auto-detect the notation of a sharding string and parse it.

`{...}` → GSPMD (V1/V2/V3) · `#sdy.sharding<`, `<@`, `<mesh<` → Shardy · `[{...}, ...]` →
Shardy dims shorthand (needs a mesh) · anything else → PartitionSpec (needs a mesh).
"""

from __future__ import annotations

from meshdiag.errors import MeshdiagError, ParseError
from meshdiag.model.mesh import Mesh
from meshdiag.model.named_to_tiled import named_to_hlo
from meshdiag.model.sharding import HloSharding, NamedSharding
from meshdiag.notation._cursor import Cursor, unescape
from meshdiag.notation.gspmd import parse_gspmd
from meshdiag.notation.pspec import parse_pspec, pspec_to_named
from meshdiag.notation.shardy import _dims_list, parse_sdy_sharding, parse_sharding_per_value

__all__ = ["parse_sharding", "to_hlo"]


def _needs_mesh(what: str, example: str) -> MeshdiagError:
    return MeshdiagError(
        f"a {what} names mesh axes but no mesh was given; pass one with --mesh (e.g. {example})"
    )


#: how a GSPMD or Shardy sharding starts (PartitionSpecs are left as they are)
_ANNOTATION_START = ("{", "#sdy", "<")


def pasted(text: str) -> str:
    """A sharding as copied out of a dump, as its parser reads it: surrounding whitespace
    dropped; a GSPMD or Shardy string copied with its quotes (`"{devices=[2]<=[2]}"`)
    unquoted; MLIR and HLO string escapes (`\\22`, `\\"`) decoded, as they are inside the
    dump's string attributes (`xla.sdy.sharding = "#sdy.sharding<@mesh, [{\\22x\\22}]>"`)."""
    t = text.strip()
    if (
        len(t) >= 2
        and t[0] == t[-1]
        and t[0] in "\"'"
        and t[1:].lstrip().startswith(_ANNOTATION_START)
    ):
        t = t[1:-1].strip()
    if t.startswith(_ANNOTATION_START) and _escaped(t):
        t = unescape(t)
    return t


def _escaped(t: str) -> bool:
    """`t` is a string attribute's content as a dump prints it: its quotes are escaped
    (`\\22` or `\\"`) and none is bare (a plain Shardy sharding may escape characters
    inside its own strings; those are the parser's to read)."""
    if "\\22" not in t and '\\"' not in t:
        return False
    return all(i > 0 and t[i - 1] == "\\" for i, c in enumerate(t) if c == '"')


def parse_sharding(
    text: str,
    mesh: Mesh | None = None,
    meshes: dict[str, Mesh] | None = None,
    rank: int | None = None,
) -> HloSharding | NamedSharding:
    """Any sharding notation, detected by its syntax. `rank` is the tensor's rank when known:
    a PartitionSpec shorter than it leaves the trailing dims replicated, as JAX does
    (`P('x')` on a 2-D array is `P('x', None)`); the other notations state every dim."""
    t = pasted(text)
    if not t:
        raise ParseError("a sharding", text, 0, found="nothing")
    if t.startswith("{"):
        return parse_gspmd(t)
    if t.startswith(("#sdy.sharding_per_value", "#sdy.sharding<", "<")) or t.startswith("#sdy"):
        if t.startswith("#sdy.sharding_per_value"):
            values = parse_sharding_per_value(t, meshes)
            if len(values) != 1:
                raise MeshdiagError(
                    f"the sharding_per_value holds {len(values)} shardings; give one of them"
                )
            s = values[0]
        else:
            s = parse_sdy_sharding(t, meshes)
        if s.mesh is None and mesh is not None:
            s = s.with_mesh(mesh)
        return s
    if t.startswith("[") and t[1:].lstrip().startswith("{"):
        if mesh is None:
            raise _needs_mesh("Shardy dimension list", "--mesh batch=2,model=4")

        cur = Cursor(t)
        dims = _dims_list(cur)
        if not cur.at_end():
            raise cur.error("end of the dimension shardings")
        return NamedSharding(mesh=mesh, dims=dims, mesh_ref=mesh.name)

    spec = parse_pspec(t)
    if mesh is None:
        raise _needs_mesh("PartitionSpec", "--mesh batch=2,model=4")
    if rank is not None and len(spec) < rank:
        spec = (*spec, *([None] * (rank - len(spec))))
    return pspec_to_named(spec, mesh)


def to_hlo(s: HloSharding | NamedSharding, mesh: Mesh | None = None) -> HloSharding:
    """The tiled (GSPMD) form: an HloSharding as is, a named sharding exported like XLA."""
    if isinstance(s, HloSharding):
        return s

    return named_to_hlo(s, mesh)
