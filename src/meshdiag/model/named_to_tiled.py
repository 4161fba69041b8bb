"""Named (mesh-axis) sharding → tiled HloSharding, exactly as XLA's Shardy export does it.

`named_to_hlo` follows `convertToHloSharding` (xla/service/spmd/shardy/stablehlo_round_trip/
export_shardings.cc), extended the way XLA's V3 → V2 conversion extends it (unreduced and
sub-axis manual axes), and the result goes through XLA's `HloSharding::Subgroup`
(`meshdiag.model.normalize`), so it compares and prints like XLA's. Example: mesh `batch=2,model=4`, `[{}, {"model"}]` →
`{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}`.
"""

from __future__ import annotations

import math

from meshdiag.errors import MeshdiagError
from meshdiag.model.mesh import Mesh
from meshdiag.model.normalize import subgroup
from meshdiag.model.sharding import AxisRef, HloSharding, NamedSharding
from meshdiag.model.tiles import TileAssignment
from meshdiag.model.verify import mesh_problems, verify_named

#: `subgroup` is re-exported for callers that build a tile and its types themselves
__all__ = ["named_to_hlo", "ordered_axis_refs", "subgroup"]


def ordered_axis_refs(s: NamedSharding, mesh: Mesh) -> list[AxisRef]:
    """Shardy's `getOrderedAxisRefs`: every mesh axis in mesh order, a full axis split into the
    sub-axes the sharding uses. Mesh `x=2,y=16,z=4` with `{"y":(2)2}` gives
    `x, y:(1)2, y:(2)2, y:(4)4, z`."""
    cuts: dict[str, set[int]] = {a: {1, n} for a, n in mesh.axes}
    refs = [a for d in s.dims for a in d.axes]
    refs += list(s.unreduced) + list(s.manual) + list(s.replicated)
    for a in refs:
        if a.is_sub and a.name in cuts:
            cuts[a.name].update((a.pre, a.pre * a.size))  # type: ignore[operator]
    out: list[AxisRef] = []
    for name, size in mesh.axes:
        c = sorted(cuts[name])
        if c == sorted({1, size}):  # no sub-axis of this axis is used
            out.append(AxisRef(name))
        else:
            out.extend(AxisRef(name, lo, hi // lo) for lo, hi in zip(c, c[1:], strict=False))
    return out


def _full(a: AxisRef, mesh: Mesh) -> AxisRef:
    """The canonical key of an axis ref: a sub-axis covering the whole axis is the axis."""
    if a.is_sub and a.pre == 1 and a.size == mesh.axis_size(a.name):
        return AxisRef(a.name)
    return a


def _check(s: NamedSharding, mesh: Mesh, manual: list[AxisRef]) -> None:

    problems = mesh_problems(mesh)
    if not problems:
        fatal = ("unknown axis", "duplicate axis", "overlapping", "sub-axis", "both sub-axis")
        probe = NamedSharding(
            mesh,
            s.dims,
            s.mesh_ref,
            s.replicated,
            s.unreduced,
            s.unreduced_op,
            tuple(manual),
            s.whole,
        )
        problems = [m for m in verify_named(probe, mesh) if m.startswith(fatal) or "sub-axis" in m]
    if problems:
        raise MeshdiagError(f"cannot convert the sharding to GSPMD: {problems[0]}")


def named_to_hlo(
    s: NamedSharding, mesh: Mesh | None = None, manual_axes: tuple[str, ...] = ()
) -> HloSharding:
    """The GSPMD (tiled) form of a named sharding; `mesh` is used when `s` has none resolved.

    `manual_axes` are the axes made manual by an enclosing `sdy.manual_computation`.
    """
    m = s.mesh or mesh
    if m is None:
        ref = f"@{s.mesh_ref}" if s.mesh_ref else "its mesh"
        raise MeshdiagError(
            f"the sharding refers to {ref}, which is not defined here; pass the mesh (--mesh)"
        )
    if s.whole == "manual":
        return HloSharding("manual")
    if s.whole == "unreduced":
        return HloSharding("unreduced")
    if not m.axes:  # empty mesh → replicated, maximal mesh → that device
        return HloSharding.maximal(m.device_ids[0]) if m.device_ids else HloSharding.replicated()
    if s.whole == "replicated":
        return HloSharding.replicated()
    manual = [AxisRef(a) for a in manual_axes] + list(s.manual)
    if len(set(manual_axes)) == len(m.axes):  # XLA checks this before anything else
        return HloSharding("manual")
    _check(s, m, manual)

    size = {a: n for a, n in m.axes}

    def sz(a: AxisRef) -> int:
        return a.size if a.size is not None else size[a.name]

    tile_dims = [1] * len(s.dims)
    pos: dict[AxisRef, int] = {}
    for i, d in enumerate(s.dims):
        for a in d.axes:
            tile_dims[i] *= sz(a)
            pos[_full(a, m)] = len(pos)
    types: list[str] = []
    for kind, refs in (("manual", manual), ("unreduced", list(s.unreduced))):
        if refs:
            types.append(kind)
            tile_dims.append(math.prod(sz(a) for a in refs))
            for a in refs:
                pos[_full(a, m)] = len(pos)

    ordered = ordered_axis_refs(s, m)
    reshape = [sz(a) for a in ordered]
    perm = [0] * len(ordered)
    nxt = len(pos)
    replicated = 1
    for i, a in enumerate(ordered):
        p = pos.get(a)
        if p is None:
            perm[nxt] = i
            nxt += 1
            replicated *= reshape[i]
        else:
            perm[p] = i
    if nxt != len(ordered):  # a used axis did not line up with the mesh's pieces
        raise MeshdiagError("cannot convert the sharding to GSPMD: its axes overlap")
    if replicated > 1:
        tile_dims.append(replicated)
        types.append("replicated")

    if m.device_ids is None:
        tile = TileAssignment.iota(tile_dims, reshape, perm)
    else:
        import numpy as np

        arr = np.asarray(m.ids, dtype=np.int64).reshape(reshape).transpose(perm)
        tile = TileAssignment.from_devices(tile_dims, arr.reshape(-1).tolist())
    if not types and tile.num_devices == 1:  # one device: what XLA's V3→V2 and JAX give
        return HloSharding.replicated()
    return subgroup(tile, tuple(types))
