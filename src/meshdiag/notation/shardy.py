"""Shardy (`sdy`) attributes: meshes and tensor shardings, parsed and printed as Shardy does.

Grammar and printing follow Shardy's `parsers.cc` / `printers.cc` (see the reference notes,
shardy_ttmlir.md §1): axis names are MLIR string literals (always double-quoted), a dim is
`{"a", "b":(2)2, ?}` with an optional priority `pN`, and `replicated=` / `unreduced=` may come in
either order but print replicated first. `verify_named` / `verify_mesh` report the facts Shardy's
verifier reports (§3), as messages; the parser itself only rejects what does not parse or what
cannot form a mesh at all.
"""

from __future__ import annotations

from meshdiag.errors import MeshdiagError, ParseError
from meshdiag.limits import MAX_RANK
from meshdiag.model.mesh import Mesh
from meshdiag.model.sharding import AxisRef, DimSharding, NamedSharding
from meshdiag.model.text import axis_ref_text, mlir_escape
from meshdiag.model.verify import mesh_problems, verify_named
from meshdiag.notation._cursor import Cursor, matching_end

__all__ = [
    "find_sdy_sharding_end",
    "parse_mesh_attr",
    "parse_mesh_attr_at",
    "parse_sdy_sharding",
    "parse_sdy_sharding_at",
    "parse_sharding_per_value",
    "print_mesh_attr",
    "print_sdy_sharding",
    "print_sharding_per_value",
    "verify_mesh",
    "verify_named",
]

_REDUCTIONS = ("sum", "max", "min")


# -- meshes ------------------------------------------------------------------------------


def _mesh_body(cur: Cursor, name: str | None = None) -> Mesh:
    """`<[...], device_ids=[...]>` at the cursor."""
    start = cur.ws().pos
    cur.expect("<", "'<' to start a mesh")
    cur.expect("[", "'[' to start the mesh axes")
    axes: list[tuple[str, int]] = []
    axis_pos: list[int] = []
    if not cur.accept("]"):
        while True:
            axis_pos.append(cur.ws().pos)
            if len(axes) >= MAX_RANK:
                raise cur.error(f"at most {MAX_RANK} mesh axes (MESHDIAG_MAX_RANK)")
            axis = cur.mlir_string()
            cur.expect("=", "'='")
            size_pos = cur.ws().pos
            size = cur.integer("an axis size")
            if size < 1:
                raise ParseError(
                    f"a positive axis size (axis size must be at least 1, got: {size})",
                    cur.text,
                    size_pos,
                )
            axes.append((axis, size))
            if cur.accept("]"):
                break
            cur.expect(",", "',' or ']' in the mesh axes")
    ids: list[int] | None = None
    ids_pos = cur.pos
    if cur.accept(","):
        ids_pos = cur.ws().pos
        if not cur.accept_word("device_ids"):
            raise cur.error("'device_ids'")
        cur.expect("=", "'='")
        cur.expect("[", "'[' to start the device ids")
        ids = []
        while True:
            ids.append(cur.integer("a device id"))
            if cur.accept("]"):
                break
            cur.expect(",", "',' or ']' in the device ids")
    cur.expect(">", "'>' to end the mesh")
    # duplicate names first: their error points at the second occurrence
    seen: set[str] = set()
    for (a, _), p in zip(axes, axis_pos, strict=True):
        if a in seen:
            raise ParseError(f'unique axis names (duplicate axis name: "{a}")', cur.text, p)
        seen.add(a)
    try:
        return Mesh(tuple(axes), tuple(ids) if ids is not None else None, name)
    except MeshdiagError as e:
        if isinstance(e, ParseError):
            raise
        raise ParseError(f"a valid mesh ({e})", cur.text, ids_pos if ids else start) from None


def parse_mesh_attr_at(text: str, pos: int = 0) -> tuple[Mesh, int]:
    """Parse a mesh attribute starting at `pos`; return it and the index after its `>`."""
    cur = Cursor(text, pos)
    cur.accept("#sdy.mesh")
    mesh = _mesh_body(cur)
    return mesh, cur.pos


def parse_mesh_attr(text: str, pos: int = 0) -> Mesh:
    """`<["x"=2, "y"=4], device_ids=[...]>` (optionally `#sdy.mesh<...>`); nothing may follow."""
    mesh, end = parse_mesh_attr_at(text, pos)
    cur = Cursor(text, end)
    if not cur.at_end():
        raise cur.error("end of the mesh attribute")
    return mesh


def print_mesh_attr(mesh: Mesh) -> str:
    axes = ", ".join(f'"{mlir_escape(a)}"={s}' for a, s in mesh.axes)
    text = f"<[{axes}]"
    if mesh.device_ids is not None:
        text += f", device_ids=[{', '.join(map(str, mesh.device_ids))}]"
    return text + ">"


def verify_mesh(mesh: str | Mesh) -> list[str]:
    """Shardy's mesh verifier (`model/verify.py`) over a mesh or its text: a text that does
    not parse gives its parse error as the single message."""
    if isinstance(mesh, str):
        text = mesh.strip()
        try:
            if text.startswith("sdy.mesh"):
                cur = Cursor(text)
                cur.expect("sdy.mesh")
                cur.expect("@", "'@' and the mesh name")
                cur.ident("a mesh name")
                cur.expect("=", "'='")
                mesh, _ = parse_mesh_attr_at(text, cur.pos)
            else:
                mesh = parse_mesh_attr(text)
        except MeshdiagError as e:
            return [str(e)]
    return mesh_problems(mesh)


# -- tensor shardings ----------------------------------------------------------------------


def _axis_ref(cur: Cursor) -> AxisRef:
    name = cur.mlir_string()
    if cur.accept(":"):
        cur.expect("(", "'(' and the sub-axis pre-size")
        pre = cur.integer("a sub-axis pre-size")
        cur.expect(")", "')'")
        size = cur.integer("a sub-axis size")
        return AxisRef(name, pre, size)
    return AxisRef(name)


def _axis_list(cur: Cursor) -> tuple[AxisRef, ...]:
    cur.expect("{", "'{'")
    refs: list[AxisRef] = []
    if cur.accept("}"):
        return ()
    while True:
        refs.append(_axis_ref(cur))
        if cur.accept("}"):
            return tuple(refs)
        cur.expect(",", "',' or '}' in the axis list")


def _priority(cur: Cursor) -> int | None:
    cur.ws()
    t, p = cur.text, cur.pos
    if not (p < len(t) and t[p] == "p"):
        return None
    q = p + 1
    while q < len(t) and (t[q].isalnum() or t[q] == "_"):
        q += 1
    word = t[p:q]
    digits = word[1:]
    if not digits.isdigit() or not digits.isascii():
        raise ParseError(f"priority in format 'p<number>', got: {word}", t, p)
    if len(digits) > 1 and digits[0] == "0":
        raise ParseError(f"a priority without leading zeros, got: {word}", t, p)
    if len(digits) > 18 or int(digits) > (1 << 63) - 1:
        raise ParseError(f"an integer priority, got: {word}", t, p)
    cur.pos = q
    return int(digits)


def _dim_sharding(cur: Cursor) -> DimSharding:
    cur.expect("{", "'{' to start a dimension sharding")
    axes: list[AxisRef] = []
    is_open = False
    if cur.accept("?"):
        is_open = True
        cur.expect("}", "'}' after '?'")
    elif not cur.accept("}"):
        while True:
            axes.append(_axis_ref(cur))
            if cur.accept("}"):
                break
            cur.expect(",", "',' or '}' in the dimension sharding")
            if cur.accept("?"):
                is_open = True
                cur.expect("}", "'}' after '?' (it must be last)")
                break
    return DimSharding(tuple(axes), is_open, _priority(cur))


def _dims_list(cur: Cursor) -> tuple[DimSharding, ...]:
    cur.expect("[", "'[' to start the dimension shardings")
    dims: list[DimSharding] = []
    if cur.accept("]"):
        return ()
    while True:
        if len(dims) >= MAX_RANK:
            raise cur.error(f"at most {MAX_RANK} dimensions (MESHDIAG_MAX_RANK)")
        dims.append(_dim_sharding(cur))
        if cur.accept("]"):
            return tuple(dims)
        cur.expect(",", "',' or ']' in the dimension shardings")


def _tensor_sharding(cur: Cursor, meshes: dict[str, Mesh] | None) -> NamedSharding:
    """`<@mesh, [...], replicated={...}, unreduced=max{...}>` at the cursor."""
    cur.expect("<", "'<' to start a sharding")
    mesh: Mesh | None = None
    ref: str | None = None
    if cur.accept("@"):
        if cur.peek() == '"':
            ref = cur.mlir_string()
        else:
            ref = cur.ident("a mesh name after '@'")
        if meshes is not None:
            mesh = meshes.get(ref)
    elif cur.accept_word("mesh"):
        mesh = _mesh_body(cur)
    else:
        raise cur.error("MeshAttr or FlatSymbolRefAttr ('@name' or 'mesh<[...]>')")
    cur.expect(",", "',' after the mesh")
    dims = _dims_list(cur)
    replicated: tuple[AxisRef, ...] | None = None
    unreduced: tuple[AxisRef, ...] | None = None
    op: str | None = None
    while cur.accept(","):
        kw_pos = cur.ws().pos
        if cur.accept_word("replicated") and replicated is None:
            cur.expect("=", "'=' after 'replicated'")
            replicated = _axis_list(cur)
        elif cur.accept_word("unreduced") and unreduced is None:
            cur.expect("=", "'=' after 'unreduced'")
            for r in _REDUCTIONS:
                if cur.accept_word(r):
                    op = None if r == "sum" else r
                    break
            unreduced = _axis_list(cur)
        else:
            raise cur.error(
                "valid named axis list after comma ('replicated=' or 'unreduced=')", kw_pos
            )
    cur.expect(">", "'>' to end the sharding")
    return NamedSharding(
        mesh=mesh,
        dims=dims,
        mesh_ref=ref,
        replicated=replicated or (),
        unreduced=unreduced or (),
        # (a reduction of no axes is not printed, by Shardy or here: `unreduced=max{}` is
        # no unreduced axes at all, so that it reads back as it prints)
        unreduced_op=op if unreduced else None,
    )


def parse_sdy_sharding_at(
    text: str, pos: int = 0, meshes: dict[str, Mesh] | None = None
) -> tuple[NamedSharding, int]:
    """Parse one sharding (`#sdy.sharding<...>` or stripped `<...>`) at `pos`; return the end."""
    cur = Cursor(text, pos)
    cur.accept("#sdy.sharding")
    s = _tensor_sharding(cur, meshes)
    return s, cur.pos


def parse_sdy_sharding(text: str, meshes: dict[str, Mesh] | None = None) -> NamedSharding:
    """`#sdy.sharding<@mesh, [...]>`, the stripped `<@mesh, [...]>` or an inline `mesh<...>`."""
    s, end = parse_sdy_sharding_at(text, 0, meshes)
    cur = Cursor(text, end)
    if not cur.at_end():
        raise cur.error("end of the sharding")
    return s


def parse_sharding_per_value(
    text: str, meshes: dict[str, Mesh] | None = None
) -> list[NamedSharding]:
    """`#sdy.sharding_per_value<[<@mesh, [...]>, ...]>` (the prefix may be omitted)."""
    cur = Cursor(text)
    prefixed = cur.accept("#sdy.sharding_per_value")
    if prefixed:
        cur.expect("<", "'<'")
    cur.expect("[", "'[' to start the list of shardings")
    out: list[NamedSharding] = []
    if not cur.accept("]"):
        while True:
            out.append(_tensor_sharding(cur, meshes))
            if cur.accept("]"):
                break
            cur.expect(",", "',' or ']' between shardings")
    if prefixed:
        cur.expect(">", "'>'")
    if not cur.at_end():
        raise cur.error("end of the sharding list")
    return out


def find_sdy_sharding_end(text: str, pos: int) -> int:
    """Index after the `>` that closes the Shardy attribute starting at `pos`.

    `pos` may point at `#sdy.sharding...`, `#sdy.mesh`, or directly at `<`; quoted axis names may
    hold `<`/`>`.
    """
    lt = text.find("<", pos)
    if lt < 0:
        raise ParseError("'<' starting a Shardy attribute", text, pos, found="end of text")
    return matching_end(text, lt, "<", ">")


# -- printing ------------------------------------------------------------------------------


_print_axis = axis_ref_text


def _print_dim(d: DimSharding) -> str:
    body = ", ".join(_print_axis(a) for a in d.axes)
    if d.is_open:
        body = f"{body}, ?" if body else "?"
    text = "{" + body + "}"
    if d.priority is not None:
        text += f"p{d.priority}"
    return text


def print_sdy_sharding(s: NamedSharding, *, stripped: bool = False) -> str:
    """Shardy's printing: `#sdy.sharding<@mesh, [{"a", ?}, {}p1], replicated={..}, unreduced=max{..}>`."""
    if s.mesh_ref is not None:
        mesh = "@" + (s.mesh_ref if _is_bare_symbol(s.mesh_ref) else f'"{mlir_escape(s.mesh_ref)}"')
    elif s.mesh is not None:
        mesh = "mesh" + print_mesh_attr(s.mesh)
    else:
        raise MeshdiagError("a Shardy sharding needs a mesh or a mesh name to be printed")
    body = f"<{mesh}, {print_sdy_dims(s)}>"
    return body if stripped else "#sdy.sharding" + body


def print_sdy_dims(s: NamedSharding) -> str:
    """The part after the mesh: `[{"a", ?}, {}p1], replicated={..}, unreduced=max{..}`."""
    parts = ["[" + ", ".join(_print_dim(d) for d in s.dims) + "]"]
    if s.replicated:
        parts.append("replicated={" + ", ".join(map(_print_axis, s.replicated)) + "}")
    if s.unreduced:
        op = s.unreduced_op if s.unreduced_op not in (None, "sum") else ""
        parts.append(f"unreduced={op}{{" + ", ".join(map(_print_axis, s.unreduced)) + "}")
    return ", ".join(parts)


def print_sharding_per_value(shardings: list[NamedSharding]) -> str:
    inner = ", ".join(print_sdy_sharding(s, stripped=True) for s in shardings)
    return f"#sdy.sharding_per_value<[{inner}]>"


def _is_bare_symbol(name: str) -> bool:
    return (
        bool(name)
        and (name[0].isalpha() or name[0] == "_")
        and all(c.isalnum() or c in "_$." for c in name)
        and name.isascii()
    )


# -- shared with the collective scan (`comms/scan.py`): Shardy's collective ops print their
# axes with the same grammar as a sharding's dimensions
read_axis_list = _axis_list
read_dims_list = _dims_list
