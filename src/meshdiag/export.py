"""Named (mesh-axis) sharding → tiled HloSharding, exactly as XLA's Shardy export does it.

`named_to_hlo` follows `convertToHloSharding` (xla/service/spmd/shardy/stablehlo_round_trip/
export_shardings.cc), extended the way XLA's V3 → V2 conversion extends it (unreduced and
sub-axis manual axes), and `subgroup` follows `HloSharding::Subgroup` / `PartialTile`, so the
result compares and prints like XLA's. Example: mesh `batch=2,model=4`, `[{}, {"model"}]` →
`{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}`.
"""

from __future__ import annotations

import math

from .errors import MeshdiagError
from .mesh import Mesh
from .sharding import SUBGROUP_ORDER, AxisRef, HloSharding, NamedSharding
from .tiles import TileAssignment

__all__ = ["named_to_hlo", "normalize_hlo", "ordered_axis_refs", "subgroup"]


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
    from .formats.shardy import verify_mesh, verify_named

    problems = verify_mesh(mesh)
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
    return subgroup(tile, tuple(types))


# -- XLA's HloSharding normalisation -------------------------------------------------------


def subgroup(tile: TileAssignment, types: tuple[str, ...]) -> HloSharding:
    """`HloSharding::Subgroup`: the canonical sharding for a tile whose last `len(types)` dims
    are subgroups. Drops size-1 subgroup dims, merges and sorts the types (manual < unreduced <
    replicated), turns pure replication into `{replicated}` / `last_tile_dim_replicate` (with
    sorted replica groups) and pure manual into `{manual}`."""
    if not types:
        if tile.num_devices == 1:  # one device: what XLA's V3→V2 and JAX give
            return HloSharding.replicated()
        return HloSharding.tiled(tile)
    data_rank = tile.rank - len(types)
    data = tile.dims[:data_rank]
    if len(set(types)) == 1 and math.prod(data) == 1:
        if types[0] in ("manual", "replicated", "unreduced"):
            return HloSharding(types[0])  # type: ignore[arg-type]
    keep = [i for i, t in enumerate(types) if tile.dims[data_rank + i] != 1]
    kinds = [types[i] for i in keep]
    order = sorted(set(kinds), key=SUBGROUP_ORDER.index)
    if len(keep) != len(types) or kinds != order:
        groups = [[data_rank + i for i in keep if types[i] == k] for k in order]
        perm = list(range(data_rank)) + [d for g in groups for d in g]
        dropped = [data_rank + i for i in range(len(types)) if i not in keep]
        new_dims = list(data) + [math.prod(tile.dims[d] for d in g) for g in groups]
        tile = _transpose_reshape(tile, perm + dropped, new_dims)
        kinds = order
    return _create(tile, tuple(kinds))


def _transpose_reshape(
    tile: TileAssignment, perm: list[int], new_dims: list[int]
) -> TileAssignment:
    if perm == sorted(perm) and tile.is_iota:  # only size-1 dims move: a pure reshape
        return TileAssignment.iota(new_dims, tile.reshape, tile.perm)
    arr = tile.array().transpose(perm).reshape(new_dims)
    return TileAssignment.from_devices(new_dims, arr.reshape(-1).tolist())


def _create(tile: TileAssignment, kinds: tuple[str, ...]) -> HloSharding:
    if kinds == ("replicated",):
        return _partial_tile(tile)
    if kinds == ("manual",) and tile.num_devices == tile.dims[-1]:
        return HloSharding("manual")
    if kinds and kinds[-1] == "replicated":
        p = _partial_tile(tile)
        if not p.is_tiled:
            return p
        return HloSharding.tiled(p.tile, subgroup_types=kinds)  # type: ignore[arg-type]
    return HloSharding.tiled(tile, subgroup_types=kinds)


def _partial_tile(tile: TileAssignment) -> HloSharding:
    """`HloSharding::PartialTile`: last dim is a replica group, whose devices XLA sorts."""
    if tile.rank == 1 or tile.dims[-1] == tile.num_devices:
        return HloSharding.replicated()
    if tile.dims[-1] == 1:
        return subgroup(
            TileAssignment.iota(tile.dims[:-1], tile.reshape, tile.perm)
            if tile.is_iota
            else TileAssignment.from_devices(tile.dims[:-1], tile.devices()),
            (),
        )
    arr = tile.array().reshape(-1, tile.dims[-1])
    import numpy as np

    if bool((np.diff(arr, axis=1) > 0).all()):
        return HloSharding.tiled(tile, replicate_on_last=True)
    srt = np.sort(arr, axis=1)
    return HloSharding.tiled(
        TileAssignment.from_devices(tile.dims, srt.reshape(-1).tolist()), replicate_on_last=True
    )


def normalize_hlo(h: HloSharding) -> HloSharding:
    """Re-canonicalise a tiled sharding as XLA's constructors would (tuples element-wise)."""
    if h.is_tuple:
        from dataclasses import replace

        return replace(h, elements=tuple(normalize_hlo(e) for e in h.elements))
    if not h.is_tiled or h.tile is None:
        return h
    from dataclasses import replace

    out = subgroup(h.tile, h.subgroup_kinds())
    return replace(out, shard_group=h.shard_group, metadata=h.metadata, named=h.named)
