"""TTNN's validation of a mapper's shards, as each era of tt-metal did it (notes §1.5):

- `current`: an N-D mapper must produce as many chunks as its mesh axes have devices ("ND
  sharding requires ..."), and every shard must have the same shape ("Shard shape mismatch");
- `2025-05`: the same spec on every shard ("All tensor shards must have the same tensor spec");
- `2025-03`: the 2-D mapper's shard count only ("ShardTensorTo2dMesh: Sharding failed");
- `2024`: the Python 2-D mapper, which checked the count only when columns were sharded.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from meshdiag.errors import MeshdiagError
from meshdiag.model.copy import Shape
from meshdiag.notation.ttnn import TtnnMapper
from meshdiag.simulate.regions import shape_text

if TYPE_CHECKING:
    from meshdiag.model.splits import DimSplit


def ttnn_shape(shape: Shape) -> str:
    """A shape as TTNN prints it: `Shape([1, 1, 32, 32])`."""
    return f"Shape([{', '.join(map(str, shape))}])"


def chunk_sizes(s: DimSplit) -> list[int]:
    """The sizes of the chunks a split produced."""
    return [int(b - a) for a, b, p in zip(s.starts, s.stops, s.present, strict=True) if p]


def era_check(
    mapper: TtnnMapper,
    shape: Shape,
    era: str,
    dist: Shape,
    pl: tuple[int | None, ...],
    splits: dict[int, DimSplit],
    cell_shapes: list[Shape],
) -> None:
    """Refuse the mapped shards as TTNN of `era` refuses them.

    `pl[a]` is the tensor dim split along distribution axis a (None: replicated), `splits[a]`
    that split, `cell_shapes` the spec of every populated shard.
    """
    _check_chunk_count(mapper, shape, era, dist, pl, splits)
    _check_same_spec(mapper, shape, era, dist, pl, splits, cell_shapes)


def _check_chunk_count(
    mapper: TtnnMapper,
    shape: Shape,
    era: str,
    dist: Shape,
    pl: tuple[int | None, ...],
    splits: dict[int, DimSplit],
) -> None:
    shard_axes = [a for a, p in enumerate(pl) if p is not None]
    if len(dist) <= 1 or not shard_axes:
        return
    counts = {a: int(splits[a].present.sum()) for a in shard_axes}
    chunks = math.prod(counts.values())
    wanted = math.prod(dist[a] for a in shard_axes)
    if chunks == wanted:
        return
    detail = ", ".join(
        f"dimension {pl[a]} of size {shape[pl[a]]} gives {counts[a]} chunks for {dist[a]} devices"
        for a in shard_axes
        if counts[a] != dist[a]
    )
    if era == "current":
        msg = (
            f"ND sharding requires the number of chunks {chunks} to match the mesh "
            f"dimension size {wanted}"
        )
    elif era == "2024" and len(dist) == 2:
        shards = math.prod(counts.get(a, dist[a]) for a in range(2))
        msg = None
        if pl[1] is not None:  # the 2024 Python only checked when columns were sharded
            msg = (
                "ShardTensor2dMesh: Sharding failed. Number of shards should match the "
                f"product of the mesh dimensions. Got {shards} shards but expected "
                f"{dist[0] * dist[1]} ({dist[0]} rows * {dist[1]} cols)."
            )
    else:
        shards = math.prod(counts.get(a, dist[a]) for a in range(len(dist)))
        msg = (
            "ShardTensorTo2dMesh: Sharding failed. Number of shards should match the "
            f"product of the mesh dimensions. Size: {shards}, rows: {dist[0]}, "
            f"cols: {math.prod(dist[1:])}"
        )
    if msg is not None:
        raise MeshdiagError(
            f"TTNN ({era}) rejects mapper '{mapper.text}' on shape "
            f"{shape_text(shape)}: {msg} ({detail}); pad the dimension to a multiple "
            "of its mesh axis or shard it over fewer devices"
        )


def _check_same_spec(
    mapper: TtnnMapper,
    shape: Shape,
    era: str,
    dist: Shape,
    pl: tuple[int | None, ...],
    splits: dict[int, DimSplit],
    cell_shapes: list[Shape],
) -> None:
    if not cell_shapes or era in ("2025-03", "2024"):
        return
    first = cell_shapes[0]
    other = next((s for s in cell_shapes if s != first), None)
    if other is None:
        return
    # each uneven dim with its own distribution axis `a` (and so its own chunks)
    detail = "; ".join(
        f"dimension {d} of size {shape[d]} over {dist[a]} devices gives chunks "
        + ",".join(str(int(x)) for x in chunk_sizes(splits[a]))
        for a, d in enumerate(pl)
        if d is not None and shape[d] % dist[a]
    )
    msg = (
        f"Shard shape mismatch: expected {ttnn_shape(first)} but got {ttnn_shape(other)}"
        if era == "current"
        else "All tensor shards must have the same tensor spec"
    )
    raise MeshdiagError(
        f"TTNN ({era}) rejects mapper '{mapper.text}' on shape {shape_text(shape)}: {msg}"
        + (f" ({detail})" if detail else "")
        + "; use --ttnn-era 2025-03 to simulate that era's per-device specs, or pad the "
        "dimension to a multiple of its device count"
    )
