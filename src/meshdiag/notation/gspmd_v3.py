"""XLA's V3 (named) HloSharding text: `{mesh['a'=2,'b'=4], [{'a'}, {'b', ?}], replicated={..}}`.

As jaxlib 0.10.2's XLA parses and prints it: axis names are quoted (`'a'` printed; `"a"`
accepted); meshdiag also accepts bare names as older XLA printed them. `device_ids=(...)` is an
explicit list or an iota `([4,16]T(1,0))`. Priorities do not exist in V3; `unreduced=max{..}`
is accepted as newer XLA writes it. Parsing returns the tiled (V2) sharding XLA's
`v3_to_v2_sharding` gives, with the named form attached as `.named`.
"""

from __future__ import annotations

import math
from dataclasses import replace

from meshdiag.errors import MeshdiagError, ParseError
from meshdiag.limits import MAX_RANK, check_device_count
from meshdiag.model.mesh import Mesh
from meshdiag.model.named_to_tiled import named_to_hlo
from meshdiag.model.sharding import AxisRef, DimSharding, HloSharding, NamedSharding
from meshdiag.model.tiles import TileAssignment, iota_form_of
from meshdiag.notation._cursor import Cursor, matching_end

__all__ = ["parse_v3_leaf", "print_v3"]


def _mesh_axes(cur: Cursor, close: str, what: str) -> list[tuple[str, int]]:
    """`'x'=2, 'y'=4` up to and including `close`, the mesh's device count bounded (`what`
    names it in the error)."""
    axes: list[tuple[str, int]] = []
    while not cur.accept(close):
        if axes:
            cur.expect(",", f"',' or '{close}' in the mesh axes")
        if len(axes) >= MAX_RANK:
            raise cur.error(f"at most {MAX_RANK} mesh axes (MESHDIAG_MAX_RANK)")
        name = _name(cur)
        cur.expect("=", "'='")
        size_pos = cur.ws().pos
        size = cur.integer("an axis size")
        if size < 1:
            raise ParseError("a positive axis size", cur.text, size_pos)
        axes.append((name, size))
    n = 1
    for _, s in axes:
        n *= s
        check_device_count(n, what)
    return axes


def _name(cur: Cursor) -> str:
    if cur.peek() in ("'", '"'):
        return cur.quoted()
    return cur.ident("an axis name ('x')")


def _axis_ref(cur: Cursor) -> AxisRef:
    name = _name(cur)
    if cur.accept(":"):
        cur.expect("(", "'(' and the sub-axis pre-size")
        pre = cur.integer("a sub-axis pre-size")
        cur.expect(")", "')'")
        return AxisRef(name, pre, cur.integer("a sub-axis size"))
    return AxisRef(name)


def _axis_list(cur: Cursor) -> tuple[AxisRef, ...]:
    cur.expect("{", "'{'")
    refs: list[AxisRef] = []
    while not cur.accept("}"):
        if refs:
            cur.expect(",", "',' or '}'")
        refs.append(_axis_ref(cur))
    return tuple(refs)


def _dim(cur: Cursor) -> DimSharding:
    cur.expect("{", "'{' to start a dimension sharding")
    if cur.accept("?"):
        cur.expect("}", "'}' after '?'")
        return DimSharding((), True)
    axes: list[AxisRef] = []
    while not cur.accept("}"):
        if axes:
            cur.expect(",", "',' or '}'")
            if cur.accept("?"):
                cur.expect("}", "'}' after '?' (it must be last)")
                return DimSharding(tuple(axes), True)
        axes.append(_axis_ref(cur))
    return DimSharding(tuple(axes))


def _int_list(cur: Cursor, close: str, what: str) -> list[int]:
    out: list[int] = []
    while not cur.accept(close):
        if out:
            cur.expect(",", f"',' or '{close}'")
        out.append(cur.integer(what))
    return out


def _device_ids(cur: Cursor, n: int) -> tuple[int, ...]:
    """After `device_ids=`: `(3,2,1,0)` or the iota `([4,16]T(1,0))`."""
    cur.expect("(", "'(' to start the device ids")
    start = cur.pos
    if cur.accept("["):
        reshape = _int_list(cur, "]", "an iota dimension")
        perm = list(range(len(reshape)))
        if cur.accept("T"):
            cur.expect("(", "'(' after 'T'")
            perm = _int_list(cur, ")", "a transpose index")
        cur.expect(")", "')' to end the device ids")
        if any(r < 1 for r in reshape) or len(reshape) > MAX_RANK:
            raise ParseError("positive iota dimensions", cur.text, start)
        total = 1
        for r in reshape:
            total *= r
            check_device_count(total, "mesh device_ids")
        if total != n:
            raise ParseError(f"an iota of {n} device ids (the mesh size)", cur.text, start)
        if sorted(perm) != list(range(len(reshape))):
            raise ParseError("a transpose that is a permutation of the iota dims", cur.text, start)
        # (listed in Python up to `tiles.LISTED_IOTA_DEVICES`: no numpy import)
        return TileAssignment.iota((n,), reshape, perm).devices()
    ids_list = _int_list(cur, ")", "a device id")
    return tuple(ids_list)


def _metadata(cur: Cursor) -> tuple[str, ...]:
    """`metadata={{op_name="a"}, {..}}` or `metadata={op_name="a"}`: the entries' text."""
    cur.ws()
    end = matching_end(cur.text, cur.pos, "{", "}")
    inner = cur.text[cur.pos + 1 : end - 1].strip()
    cur.pos = end
    if not inner.startswith("{"):
        return (inner,) if inner else ()
    entries = []
    p = 0
    while p < len(inner):
        if inner[p] == "{":
            q = matching_end(inner, p, "{", "}")
            entries.append(inner[p + 1 : q - 1].strip())
            p = q
        else:
            p += 1
    return tuple(entries)


def parse_v3_leaf(text: str, pos: int) -> tuple[HloSharding, int]:
    """Parse one V3 leaf starting at `text[pos] == '{'`; return it (tiled, `.named` set) and
    the index after its closing `}`."""
    cur = Cursor(text, pos)
    cur.expect("{", "'{' to start a sharding")
    metadata: tuple[str, ...] = ()
    mesh_pos = cur.ws().pos
    if cur.accept_word("maximal_mesh"):
        cur.expect("[", "'['")
        if not cur.accept_word("device_id"):
            raise cur.error("'device_id'")
        cur.expect("=", "'='")
        device = cur.integer("a device id")
        cur.expect("]", "']'")
        if cur.accept(","):
            if not cur.accept_word("metadata"):
                raise cur.error("'metadata='")
            cur.expect("=", "'='")
            metadata = _metadata(cur)
        cur.expect("}", "'}' to end the sharding")
        named = NamedSharding(Mesh((), (device,)), ())
        return HloSharding("maximal", device=device, metadata=metadata, named=named), cur.pos
    if not cur.accept_word("mesh"):
        raise cur.error("'mesh[' or 'maximal_mesh['")
    cur.expect("[", "'[' to start the mesh axes")
    axes = _mesh_axes(cur, "]", "mesh")
    cur.expect(",", "',' after the mesh")
    ids: tuple[int, ...] | None = None
    if cur.accept_word("device_ids"):
        cur.expect("=", "'='")
        ids = _device_ids(cur, math.prod(s for _, s in axes))
        cur.expect(",", "',' after the device ids")
    try:
        mesh = Mesh(tuple(axes), ids)
    except MeshdiagError as e:
        raise ParseError(f"a valid mesh ({e})", text, mesh_pos) from None

    whole = None
    dims: tuple[DimSharding, ...] = ()
    lists: dict[str, tuple[AxisRef, ...]] = {}
    op: str | None = None
    body_pos = cur.ws().pos
    for kw in ("replicated", "manual", "unreduced"):
        save = cur.pos
        if cur.accept_word(kw) and not cur.startswith("="):
            whole = kw
            break
        cur.pos = save
    if whole is None:
        cur.expect("[", "'[' and the dimension shardings, or replicated / manual / unreduced")
        dl: list[DimSharding] = []
        while not cur.accept("]"):
            if dl:
                cur.expect(",", "',' or ']' in the dimension shardings")
            if len(dl) >= MAX_RANK:
                raise cur.error(f"at most {MAX_RANK} dimensions (MESHDIAG_MAX_RANK)")
            dl.append(_dim(cur))
        dims = tuple(dl)
    while cur.accept(","):
        kw_pos = cur.ws().pos
        if cur.accept_word("metadata"):
            cur.expect("=", "'='")
            metadata = _metadata(cur)
            break
        kw = next((k for k in ("replicated", "unreduced", "manual") if cur.accept_word(k)), None)
        if kw is None or kw in lists or whole is not None:
            raise cur.error("'replicated=', 'unreduced=', 'manual=' or 'metadata='", kw_pos)
        cur.expect("=", "'='")
        if kw == "unreduced":
            for r in ("sum", "max", "min"):
                if cur.accept_word(r):
                    op = None if r == "sum" else r
        lists[kw] = _axis_list(cur)
    cur.expect("}", "'}' to end the sharding")
    named = NamedSharding(
        mesh=mesh,
        dims=dims,
        replicated=lists.get("replicated", ()),
        unreduced=lists.get("unreduced", ()),
        unreduced_op=op,
        manual=lists.get("manual", ()),
        whole=whole,  # type: ignore[arg-type]
    )

    try:
        hlo = named_to_hlo(named)
    except MeshdiagError as e:
        if isinstance(e, ParseError):
            raise
        raise ParseError(f"a valid named sharding ({e})", text, body_pos) from None
    if mesh.device_ids is not None and hlo.tile is not None and not hlo.tile.is_iota:
        iota = iota_form_of(hlo.tile)
        if iota is not None:
            hlo = replace(hlo, tile=iota)
    return replace(hlo, metadata=metadata, named=named), cur.pos


# -- printing ------------------------------------------------------------------------------


def _q(name: str) -> str:
    return f"'{name}'"  # XLA prints the name verbatim between single quotes


def _ref(a: AxisRef) -> str:
    return _q(a.name) + (f":({a.pre}){a.size}" if a.pre is not None else "")


def _ids_text(mesh: Mesh) -> str:
    """`(3,2,1,0)`, or the iota form `([4,16]T(1,0))` when one exists."""

    ids = mesh.device_ids or ()
    iota = None
    if len(ids) > 1 and sorted(ids) == list(range(len(ids))):
        iota = iota_form_of(TileAssignment.from_devices((len(ids),), ids))
    if iota is not None and iota.reshape is not None and len(iota.reshape) > 1:
        r = ",".join(map(str, iota.reshape))
        p = ",".join(map(str, iota.perm or ()))
        return f"([{r}]T({p}))"
    return "(" + ",".join(map(str, ids)) + ")"


def print_v3(s: NamedSharding) -> str:
    """The V3 text XLA prints for `s` (priorities, which V3 lacks, are dropped)."""
    mesh = s.mesh
    if mesh is None:
        raise MeshdiagError("a V3 sharding needs its mesh; pass --mesh")
    if mesh.is_maximal:
        return f"{{maximal_mesh[device_id={mesh.device_ids[0]}]}}"  # type: ignore[index]
    head = "mesh[" + ",".join(f"{_q(a)}={n}" for a, n in mesh.axes) + "]"
    if mesh.device_ids is not None:
        head += ", device_ids=" + _ids_text(mesh)
    parts = [head]
    if s.whole is not None:
        parts.append(s.whole)
    elif not s.dims and not (s.replicated or s.unreduced or s.manual):
        parts.append("replicated")
    else:
        dims = []
        for d in s.dims:
            body = ", ".join(map(_ref, d.axes))
            if d.is_open:
                body = f"{body}, ?" if body else "?"
            dims.append("{" + body + "}")
        parts.append("[" + ", ".join(dims) + "]")
        if s.replicated:
            parts.append("replicated={" + ", ".join(map(_ref, s.replicated)) + "}")
        if s.unreduced:
            op = s.unreduced_op if s.unreduced_op not in (None, "sum") else ""
            parts.append(f"unreduced={op}{{" + ", ".join(map(_ref, s.unreduced)) + "}")
        if s.manual:
            parts.append("manual={" + ", ".join(map(_ref, s.manual)) + "}")
    return "{" + ", ".join(parts) + "}"


# -- shared with the replica-group parser (`comms/groups.py`): XLA prints a mesh-form replica
# group's mesh, device ids and axes with the same grammar as a V3 sharding's
read_name = _name
read_mesh_axes = _mesh_axes
read_axis_list = _axis_list
read_device_ids = _device_ids
