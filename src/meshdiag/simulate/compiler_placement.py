"""Step 1 for compiler notations (GSPMD, Shardy, PartitionSpec): each device's slice comes from
`meshdiag.layouts.engine.layout`, so simulate-copy places them exactly as `meshdiag layout`
shows them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from meshdiag.checks.md105_uneven_shard import uneven_findings
from meshdiag.errors import MeshdiagError
from meshdiag.layouts.engine import layout
from meshdiag.model.copy import Ranges, Shape
from meshdiag.model.splits import split_dim
from meshdiag.notation.detect import parse_sharding
from meshdiag.notation.ttnn import Composer
from meshdiag.simulate.placement import Placement

if TYPE_CHECKING:
    from meshdiag.model.mesh import Mesh


def compiler_placement(mesh: Mesh, shape: Shape, text: str, split: str) -> Placement:
    lay = layout(parse_sharding(text, mesh=mesh, rank=len(shape)), shape, split=split, mesh=mesh)
    if lay.kind in ("manual", "unknown", "unreduced") or lay.partial or lay.manual:
        raise MeshdiagError(
            f"simulate-copy cannot place a {lay.kind} sharding '{text}': it does not say which "
            "slice of the tensor each device holds"
        )
    pos_of_id = {d: p for p, d in enumerate(mesh.ids)}
    n = mesh.size
    regions: list[Ranges | None] = [None] * n
    empty_shapes: list[Shape | None] = [None] * n
    starts, stops = lay.starts.tolist(), lay.stops.tolist()
    present, tiles = lay.present.tolist(), lay.tile_index.tolist()
    splits = [split_dim(shape[d], lay.tiles[d], split, dim=d) for d in range(len(shape))]
    for dev in range(lay.num_devices):
        if dev not in pos_of_id:
            raise MeshdiagError(f"sharding '{text}' names device {dev}, not in the mesh")
        p = pos_of_id[dev]
        if present[dev]:
            regions[p] = tuple(zip(starts[dev], stops[dev], strict=True))
        elif tiles[dev] and tiles[dev][0] >= 0:  # `chunk`: a tile past the last chunk
            empty_shapes[p] = tuple(
                int(splits[d].stops[t] - splits[d].starts[t]) for d, t in enumerate(tiles[dev])
            )
    findings = uneven_findings(lay.sharding, shape, split, where={}) if lay.kind == "tiled" else []
    return Placement(
        regions, empty_shapes, [], findings, Composer("tiles", (None,), None, True, "tiles"), lay
    )
