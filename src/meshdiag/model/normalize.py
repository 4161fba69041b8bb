"""XLA's HloSharding constructors: the canonical form of a tiled sharding (math only).

`subgroup` is `HloSharding::Subgroup` (size-1 subgroup dims dropped, same types merged, types
sorted maximal < manual < unreduced < replicated, one type over no data tiling → that kind),
`partial_tile` is `HloSharding::PartialTile` (a replicated last dim with each replica group's
devices sorted), and the iota helpers follow `IotaTileAssignment::Transpose` /
`GroupMinorIotaDimsSorted`, so an iota assignment stays iota exactly when XLA keeps it iota.
`normal_form` applies them to an already-built sharding. Parsing and printing live in
`formats/gspmd.py`; every module that needs XLA's canonical form comes here.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from meshdiag.model.sharding import SUBGROUP_ORDER, HloSharding
from meshdiag.model.tiles import TileAssignment, canonicalize_iota

if TYPE_CHECKING:
    import numpy as np

__all__ = ["group_subgroup_dims", "iota_tile", "normal_form", "partial_tile", "subgroup"]


def normal_form(s: HloSharding) -> HloSharding:
    """`s` as XLA's constructors would hold it (tuples element-wise); shard group, metadata
    and the named form it was read from are kept."""
    if s.is_tuple:
        return replace(s, elements=tuple(normal_form(e) for e in s.elements))
    if not s.is_tiled or s.tile is None:
        return s
    kinds = s.subgroup_kinds()
    out = subgroup(s.tile, kinds)
    return replace(out, shard_group=s.shard_group, metadata=s.metadata, named=s.named)


def _merge_plan(
    dims: tuple[int, ...], types: tuple[str, ...]
) -> tuple[list[int], list[int], list[str]] | None:
    """How `Subgroup` regroups the last `len(types)` dims: (transpose perm, merged shape,
    merged types), the dropped size-1 dims last in perm; None when nothing changes."""
    data_dims = len(dims) - len(types)
    type_to_dims: dict[str, list[int]] = {}
    removed: list[int] = []
    needs_merging = False
    for i, t in enumerate(types):
        d = i + data_dims
        if dims[d] == 1:
            removed.append(d)
            needs_merging = True
            continue
        group = type_to_dims.setdefault(t, [])
        needs_merging |= bool(group)
        group.append(d)
    needs_merging |= len(type_to_dims) > 1
    if not needs_merging:
        return None
    perm = list(range(data_dims))
    merged_shape = list(dims[:data_dims])
    merged_types: list[str] = []
    for t in SUBGROUP_ORDER:
        group = type_to_dims.get(t)
        if not group:
            continue
        perm.extend(group)
        merged_shape.append(math.prod(dims[d] for d in group))
        merged_types.append(t)
    perm.extend(removed)
    return perm, merged_shape, merged_types


def subgroup(tile: TileAssignment, types: tuple[str, ...]) -> HloSharding:
    """XLA's `HloSharding::Subgroup`: the canonical sharding for a tile whose last
    `len(types)` dims are subgroups of those types."""
    if not types:
        return HloSharding.tiled(tile)
    dims = tile.dims
    data_dims = len(dims) - len(types)
    if all(t == types[0] for t in types) and math.prod(dims[:data_dims]) == 1:
        if types[0] in ("manual", "replicated", "unreduced"):
            return HloSharding(types[0])  # type: ignore[arg-type]
    plan = _merge_plan(dims, types)
    if plan is None:
        return _create_subgrouped(tile, types)
    perm, merged_shape, merged_types = plan
    new_tile = None
    if tile.is_iota:
        transposed = _iota_transpose(dims, tile.reshape, tile.perm, perm)  # type: ignore[arg-type]
        if transposed is not None:
            new_tile = iota_tile(merged_shape, *transposed)
    if new_tile is None:
        arr = tile.array().transpose(perm).reshape(merged_shape)
        new_tile = TileAssignment.from_array(arr)
    return _create_subgrouped(new_tile, tuple(merged_types))


def group_subgroup_dims(
    arr: np.ndarray, kinds: tuple[str, ...]
) -> tuple[np.ndarray, tuple[str, ...]]:
    """`Subgroup`'s regrouping applied to any array shaped like a tile assignment (e.g. mesh
    positions instead of device ids): the array and types after the merge. No special kinds
    and no sorting of replica groups (the caller sorts in its own numbering)."""
    plan = _merge_plan(tuple(arr.shape), kinds) if kinds else None
    if plan is None:
        return arr, kinds
    perm, merged_shape, merged_types = plan
    return arr.transpose(perm).reshape(merged_shape), tuple(merged_types)


def _create_subgrouped(tile: TileAssignment, types: tuple[str, ...]) -> HloSharding:
    """XLA's `HloSharding(tile, subgroup_types)` after `Subgroup` has merged the types."""
    if types == ("replicated",):
        return partial_tile(tile)
    if types == ("manual",) and tile.num_devices == tile.dims[-1]:
        return HloSharding("manual")
    if types and types[-1] == "replicated":
        s = partial_tile(tile)  # replica groups sorted as PartialTile sorts them
        if not s.is_tiled:
            return s
        return replace(s, replicate_on_last=False, subgroup_types=types)
    return HloSharding.tiled(tile, subgroup_types=types)


def partial_tile(tile: TileAssignment) -> HloSharding:
    """XLA's `HloSharding::PartialTile`: last dim is the replication group."""
    dims = tile.dims
    n = tile.num_devices
    if len(dims) == 1 or dims[-1] == n:
        return HloSharding.replicated()
    if dims[-1] == 1:
        return HloSharding.tiled(_reshape(tile, dims[:-1]))
    group = dims[-1]
    if tile.is_iota:
        reshape, perm = tile.reshape, tile.perm
        # a 1-D iota is sorted within every group (GroupMinorIotaDimsSorted gives it back)
        if len(reshape) == 1 or reshape[perm[-1]] == group:
            return HloSharding.tiled(tile, replicate_on_last=True)
        grouped = _group_minor_iota_dims_sorted(reshape, perm, group)
        if grouped is not None:
            return HloSharding.tiled(iota_tile(dims, *grouped), replicate_on_last=True)
    if tile.explicit is not None:  # a listed tile: each group sorted, without numpy
        devs = tile.explicit
        rows = (sorted(devs[i : i + group]) for i in range(0, n, group))
        ids = tuple(d for row in rows for d in row)
        return HloSharding.tiled(TileAssignment(dims, None, None, ids), replicate_on_last=True)
    import numpy as np

    arr = np.sort(tile.array().reshape(-1, group), axis=1).reshape(dims)
    return HloSharding.tiled(TileAssignment.from_array(arr), replicate_on_last=True)


def iota_tile(dims, reshape, perm) -> TileAssignment:
    """Canonical iota assignment; the caller has checked that perm permutes reshape and
    that the sizes agree (skips `TileAssignment.iota`'s re-validation on the hot path)."""
    if len(reshape) == 1:  # already canonical
        return TileAssignment(tuple(dims), (reshape[0],), (0,), None)
    r, p = canonicalize_iota(tuple(reshape), tuple(perm))
    if not r:
        r, p = (math.prod(dims),), (0,)
    return TileAssignment(tuple(dims), r, p, None)


def _reshape(tile: TileAssignment, dims: tuple[int, ...]) -> TileAssignment:
    if tile.is_iota:
        return TileAssignment(tuple(dims), tile.reshape, tile.perm, None)
    return TileAssignment.from_devices(dims, tile.devices())


def _group_minor_iota_dims_sorted(
    dims: tuple[int, ...], perm: tuple[int, ...], group: int
) -> tuple[list[int], list[int]] | None:
    """XLA's `GroupMinorIotaDimsSorted`: split/sort the minor iota dims so the last tile
    dim (size `group`) is made of whole, ascending reshape dims; None if impossible."""
    grouped = 0
    split: tuple[int, int] | None = None
    for i in range(len(perm) - 1, -1, -1):
        size = dims[perm[i]]
        if size <= group:
            if group % size:
                return None
            group //= size
            grouped += 1
        else:
            if size % group:
                return None
            split = (perm[i], size // group)
            grouped += 1
            break
    if split is None:
        new_dims, new_perm = list(dims), list(perm)
    else:
        si, major = split
        new_dims = [*dims[:si], major, dims[si] // major, *dims[si + 1 :]]
        new_perm = [p if p <= si else p + 1 for p in perm]
        at = new_perm.index(si)
        new_perm.insert(at + 1, si + 1)
    new_perm[len(new_perm) - grouped :] = sorted(new_perm[len(new_perm) - grouped :])
    return new_dims, new_perm


def _transpose_kind(dims: tuple[int, ...], perm: list[int]) -> str:
    kind = "noop"
    prev = -1
    for i, d in enumerate(perm):
        if dims[d] == 1:
            if d != i and dims[i] != 1:
                kind = "reshape"
            continue
        if d <= prev:
            return "transpose"
        prev = d
    return kind


def _iota_transpose(
    dims: tuple[int, ...], reshape: tuple[int, ...], tperm: tuple[int, ...], perm: list[int]
) -> tuple[list[int] | tuple[int, ...], list[int] | tuple[int, ...]] | None:
    """XLA's `IotaTileAssignment::Transpose`: (reshape, perm) of the transposed iota over
    `[dims[p] for p in perm]`, or None when XLA falls back to an explicit array."""
    kind = _transpose_kind(dims, perm)
    if kind in ("noop", "reshape"):
        return reshape, tperm
    if len(reshape) == 1:
        return list(dims), list(perm)
    non_one: list[int] = []
    one_to_non_one = [-1] * len(dims)
    pure = True
    for i, d in enumerate(dims):
        if d == 1:
            continue
        if len(non_one) >= len(reshape) or reshape[tperm[len(non_one)]] != d:
            pure = False
        one_to_non_one[i] = len(non_one)
        non_one.append(d)
    if pure:
        new_perm = [tperm[one_to_non_one[p]] for p in perm if dims[p] != 1]
        return reshape, new_perm
    # split every reshape dim into prime factors and regroup them along the tile dims
    dreshape: list[int] = []
    bounds = [0]
    for size in reshape:
        while size % 2 == 0:
            dreshape.append(2)
            size //= 2
        f = 3
        while f * f <= size:
            while size % f == 0:
                dreshape.append(f)
                size //= f
            f += 2
        if size > 1:
            dreshape.append(size)
        bounds.append(len(dreshape))
    dperm: list[int] = []
    idx_to_orig: list[int] = []
    orig_to_idx: list[list[int]] = [[] for _ in reshape]
    for old in tperm:
        for j in range(bounds[old], bounds[old + 1]):
            dperm.append(j)
            idx_to_orig.append(old)
            orig_to_idx[old].append(len(dperm) - 1)

    def candidate(target: int, tpi: int) -> int | None:
        rdi = dperm[tpi]
        if target % dreshape[rdi] == 0:
            return rdi
        for ctpi in orig_to_idx[idx_to_orig[tpi]]:
            if ctpi > tpi:
                nrdi = dperm[ctpi]
                if target % dreshape[nrdi] == 0:
                    dreshape[rdi], dreshape[nrdi] = dreshape[nrdi], dreshape[rdi]
                    return rdi
        return None

    groups: list[list[int]] = [[] for _ in non_one]
    tpi = 0
    dn = len(dreshape)
    for i, target in enumerate(non_one):
        if tpi >= dn:
            break
        r = candidate(target, tpi)
        while r is not None:
            target //= dreshape[r]
            groups[i].append(r)
            tpi += 1
            if tpi >= dn:
                break
            r = candidate(target, tpi)
        if target != 1:
            return None
    flat: list[int] = []
    for p in perm:
        if one_to_non_one[p] >= 0:
            flat.extend(groups[one_to_non_one[p]])
    if len(flat) != len(dperm):
        return None
    return dreshape, flat
