"""Step 1 for TTNN mappers: split each sharded dim over the distribution shape, validate the
shards as the TTNN era did, and place each distribution cell on a mesh position.

SUBMESH keeps coordinates when the distribution fits inside the mesh; ROW_MAJOR sends the i-th
populated cell to the i-th device in row-major order (`get_remap_fn`). `chunk` can give fewer
chunks than devices: trailing devices get nothing.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from meshdiag.checks.md105_uneven_shard import sharded_dim_findings
from meshdiag.errors import MeshdiagError
from meshdiag.model.copy import Ranges, Shape, ShardedDim
from meshdiag.model.splits import DimSplit, split_dim
from meshdiag.notation.ttnn import Composer, TtnnMapper, resolve_dim
from meshdiag.simulate.distribution import distribution, grid_positions
from meshdiag.simulate.eras import era_check
from meshdiag.simulate.placement import Placement

if TYPE_CHECKING:
    from meshdiag.model.mesh import Mesh


def ttnn_placement(mesh: Mesh, shape: Shape, m: TtnnMapper, split: str, era: str) -> Placement:
    rank = len(shape)
    pl = _placements(m, rank)
    dist, submesh = distribution(mesh, len(pl), m.flat, m.override, f"mapper '{m.text}'")
    cells = math.prod(dist)
    coords = np.stack(np.unravel_index(np.arange(cells, dtype=np.int64), dist), axis=1)
    starts = np.zeros((cells, rank), dtype=np.int64)
    stops = np.tile(np.asarray(shape, dtype=np.int64), (cells, 1))
    bufs = stops.copy()
    present = np.ones(cells, dtype=bool)
    splits: dict[int, DimSplit] = {}
    for a, d in enumerate(pl):
        if d is None:
            continue
        if era == "current" and split == "chunk" and shape[d] == 0:
            raise MeshdiagError(
                f"TTNN (current) rejects mapper '{m.text}': No chunks were produced "
                f"(dimension {d} has size 0)"
            )
        s = split_dim(shape[d], dist[a], split, dim=d)
        splits[a] = s
        idx = coords[:, a]
        starts[:, d] = s.starts[idx]
        stops[:, d] = s.stops[idx]
        bufs[:, d] = s.buffers[idx]
        present &= s.present[idx]
    # TTNN's spec of each populated shard: the data shape (the padded buffer under `xla`)
    cell_specs = [tuple(r) for r in bufs[present].tolist()]
    era_check(m, shape, era, dist, pl, splits, cell_specs)

    pos_of_cell = _cell_positions(mesh, dist, submesh, present)
    n = mesh.size
    regions: list[Ranges | None] = [None] * n
    empty_shapes: list[Shape | None] = [None] * n
    st, sp, pr, pc = starts.tolist(), stops.tolist(), present.tolist(), pos_of_cell.tolist()
    for c in range(cells):
        if pr[c]:
            regions[pc[c]] = tuple(zip(st[c], sp[c], strict=True))
        else:
            empty_shapes[pc[c]] = tuple(b - a for a, b in zip(st[c], sp[c], strict=True))
    ids = mesh.ids
    sharded = []
    for a, d in enumerate(pl):
        if d is None:
            continue
        by_index = tuple(
            tuple(ids[p] for p in pos_of_cell[coords[:, a] == i].tolist()) for i in range(dist[a])
        )
        sharded.append(ShardedDim(d, shape[d], dist[a], by_index))
    findings = [f for sd in sharded for f in sharded_dim_findings(sd, split, where={})]
    return Placement(regions, empty_shapes, sharded, findings, inverse_composer(m, pl))


def _placements(m: TtnnMapper, rank: int) -> tuple[int | None, ...]:
    """The tensor dim each distribution axis splits (None: replicated), each dim at most once."""
    pl = tuple(
        None if p is None else resolve_dim(p, rank, f"mapper '{m.text}'") for p in m.placements
    )
    used = [p for p in pl if p is not None]
    if len(set(used)) != len(used):
        dup = next(p for p in used if used.count(p) > 1)
        raise MeshdiagError(
            f"mapper '{m.text}' shards tensor dimension {dup} along two mesh axes "
            "(TTNN: dims must be unique)"
        )
    return pl


def _cell_positions(mesh: Mesh, dist: Shape, submesh: bool, present: np.ndarray) -> np.ndarray:
    """The mesh position of each distribution cell (get_remap_fn); unpopulated cells keep a
    position only so findings can name the device that receives nothing."""
    if submesh:
        return grid_positions(mesh, dist, True)
    cells = math.prod(dist)
    order = np.concatenate([np.flatnonzero(present), np.flatnonzero(~present)])
    pos_of_cell = np.empty(cells, dtype=np.int64)
    pos_of_cell[order] = np.arange(cells, dtype=np.int64)
    return pos_of_cell


def inverse_composer(m: TtnnMapper, pl: tuple[int | None, ...]) -> Composer:
    """The composer that undoes mapper `m` (the read-back's default)."""
    if m.kind == "replicate":
        return Composer("first", (None,), None, True, "first")
    if m.kind == "shard":
        return Composer("concat", pl, None, True, f"concat:{pl[0]}")
    dims_text = ",".join("none" if p is None else str(p) for p in pl)
    ov = "@" + "x".join(map(str, m.override)) if m.override else ""
    return Composer("concat2d", pl, m.override, False, f"concat2d:{dims_text}{ov}")
