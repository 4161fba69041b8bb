"""Composers (on shapes): the read-back tensor's shape and where each listed device's buffer
lands in it, for `concat:D`, `concat2d:R,C[@RxC]`, `first` and `tiles`.

Every composer ends in one N-D concatenation (xtensor `concat_ndim`): grid axis a joins
along tensor dim dims[a].
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from meshdiag.errors import MeshdiagError
from meshdiag.model.copy import Ranges, Shape
from meshdiag.model.splits import split_dim
from meshdiag.notation.ttnn import Composer, resolve_dim
from meshdiag.simulate.distribution import distribution, grid_positions
from meshdiag.simulate.regions import region_text, tile_region

if TYPE_CHECKING:
    from meshdiag.layouts.engine import Layout
    from meshdiag.model.mesh import Mesh

#: (grid index, piece shape, mesh position or None for a zero-size gap)
Cell = tuple[tuple[int, ...], Shape, int | None]
#: (mesh position or None, region in read-back coordinates)
Placed = list[tuple[int | None, Ranges]]


def compose(
    mesh: Mesh,
    shape: Shape,
    comp: Composer,
    specs: list[Shape | None],
    layout: Layout | None,
) -> tuple[Shape, Placed]:
    """Read-back shape and where each listed device's buffer (spec per mesh position, None:
    not listed) lands in it. `layout` is the compiler sharding's, for `tiles`."""
    if comp.kind == "tiles":
        return _tiles(mesh, shape, comp, specs, layout)
    return _grid(mesh, shape, comp, specs)


def _tiles(
    mesh: Mesh, shape: Shape, comp: Composer, specs: list[Shape | None], lay: Layout | None
) -> tuple[Shape, Placed]:
    """Each tile of the compiler layout from the first listed device that holds it."""
    rank = len(shape)
    ids = mesh.ids
    if lay is None:
        raise MeshdiagError(
            "the 'tiles' composer needs a compiler sharding (GSPMD, Shardy or PartitionSpec) "
            "as the mapper; use concat:D or concat2d:R,C for TTNN mappers"
        )
    pos_of_id = {d: p for p, d in enumerate(ids)}
    owner: dict[tuple[int, ...], int] = {}
    for dev, t in enumerate(lay.tile_index.tolist()):
        p = pos_of_id[dev]
        if specs[p] is not None and t and t[0] >= 0:
            owner.setdefault(tuple(t), p)
    splits = [split_dim(shape[d], lay.tiles[d], lay.split, dim=d) for d in range(rank)]
    cells: list[Cell] = []
    for g in np.ndindex(*lay.tiles):
        ext = tuple(int(splits[d].stops[i] - splits[d].starts[i]) for d, i in enumerate(g))
        if g in owner:
            cells.append((g, specs[owner[g]], owner[g]))
        elif math.prod(ext) == 0:
            cells.append((g, ext, None))  # an empty tile: nothing to read
        else:
            raise MeshdiagError(
                f"cannot assemble the read-back: no device with a buffer holds tile "
                f"{list(g)} (source {region_text(tile_region(splits, g))})"
            )
    return concat(cells, tuple(range(rank)), rank, comp.text, ids)


def _grid(
    mesh: Mesh, shape: Shape, comp: Composer, specs: list[Shape | None]
) -> tuple[Shape, Placed]:
    """TTNN's MeshToTensor composers over the distribution shape."""
    rank = len(shape)
    ids = mesh.ids
    dims = tuple(
        None if d is None else resolve_dim(d, rank, f"composer '{comp.text}'") for d in comp.dims
    )
    used = [d for d in dims if d is not None]
    if len(set(used)) != len(used):
        raise MeshdiagError(
            f"composer '{comp.text}' concatenates one dimension twice: dims must be unique"
        )
    dist, submesh = distribution(
        mesh, len(dims), comp.flat, comp.override, f"composer '{comp.text}'"
    )
    pos = grid_positions(mesh, dist, submesh).reshape(dist)
    listed = np.array([s is not None for s in specs], dtype=bool)
    if len(dims) == 1:  # 1-D: join however many shards exist, in order (MeshToTensor 1D)
        order = [p for p in pos.reshape(-1).tolist() if listed[p]]
        if not order:
            raise MeshdiagError("nothing to read back: no device holds a buffer of the tensor")
        if dims[0] is None:
            order = order[:1]
            return concat([((0,), specs[order[0]], order[0])], (), rank, comp.text, ids)
        cells = [((i,), specs[p], p) for i, p in enumerate(order)]
        return concat(cells, (dims[0],), rank, comp.text, ids)
    # N-D: keep index 0 along `none` axes (meshdiag extension), concatenate the rest
    keep = tuple(a for a, d in enumerate(dims) if d is not None)
    sel = tuple(slice(None) if d is not None else 0 for d in dims)
    sub = pos[sel]
    need = sub.reshape(-1)
    have = int(listed[need].sum())
    if have != need.size:
        if not keep or len(keep) == len(dims):
            total = int(listed[pos.reshape(-1)].sum())
            raise MeshdiagError(
                f"ND composition requires the number of tensors {total} to match the mesh shape "
                f"{'x'.join(map(str, dist))} (composer '{comp.text}'); read back with a 1-D "
                "composer (concat:D) or fix the destination's specs"
            )
        raise MeshdiagError(
            f"composer '{comp.text}' reads {need.size} devices but only {have} hold a buffer"
        )
    if not keep:
        p = int(sub)
        return concat([((0,), specs[p], p)], (), rank, comp.text, ids)
    cells = [(g, specs[int(sub[g])], int(sub[g])) for g in np.ndindex(*sub.shape)]
    return concat(cells, tuple(d for d in dims if d is not None), rank, comp.text, ids)


def concat(
    cells: list[Cell],
    dims: tuple[int, ...],
    rank: int,
    comp: str,
    ids: tuple[int, ...],
) -> tuple[Shape, Placed]:
    """N-D concatenation (xtensor `concat_ndim`): grid axis a joins along tensor dim dims[a].

    Extents along dims[a] must depend only on the index along a; other dims must agree
    everywhere.
    """

    def who(pos: int | None) -> str:
        return "a missing tile" if pos is None else f"device {ids[pos]}'s buffer"

    ext: list[dict[int, tuple[int, int | None]]] = [{} for _ in dims]
    common: dict[int, tuple[int, int | None]] = {}
    for g, shp, pos in cells:
        if len(shp) != rank:
            raise MeshdiagError(
                f"cannot compose with '{comp}': {who(pos)} has rank {len(shp)}, the tensor {rank}"
            )
        for a, d in enumerate(dims):
            prev = ext[a].setdefault(g[a], (shp[d], pos))
            if prev[0] != shp[d]:
                raise MeshdiagError(
                    f"cannot compose with '{comp}': {who(pos)} is {shp[d]} long in dimension {d} "
                    f"but {who(prev[1])} at the same mesh index is {prev[0]}"
                )
        for d in range(rank):
            if d in dims:
                continue
            prev = common.setdefault(d, (shp[d], pos))
            if prev[0] != shp[d]:
                raise MeshdiagError(
                    f"cannot compose with '{comp}': all buffers must have the same shape outside "
                    f"the concatenated dims, but {who(pos)} has {shp[d]} in dimension {d} and "
                    f"{who(prev[1])} has {prev[0]}"
                )
    offsets: list[dict[int, int]] = []
    totals: list[int] = []
    for a in range(len(dims)):
        off, run = {}, 0
        for i in sorted(ext[a]):
            off[i] = run
            run += ext[a][i][0]
        offsets.append(off)
        totals.append(run)
    out = tuple(
        totals[dims.index(d)] if d in dims else common.get(d, (0, None))[0] for d in range(rank)
    )
    placed: Placed = []
    for g, shp, pos in cells:
        region = []
        for d in range(rank):
            if d in dims:
                a = dims.index(d)
                lo = offsets[a][g[a]]
                region.append((lo, lo + shp[d]))
            else:
                region.append((0, shp[d]))
        placed.append((pos, tuple(region)))
    return out, placed
