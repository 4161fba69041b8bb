"""Compare two layouts by what every device holds, not by how the shardings are written.

Verdicts:
- `same`: every device holds the same slice (and the same kind of data: partial sums,
  manual) under both;
- `permuted`: the same set of slices (same tiling), but on other devices;
- `different`: anything else.

Pure: two `Layout`s in, a `LayoutDiff` out. With no shape given the shardings are compared at
tile granularity: each dim gets the least common multiple of both tile counts, so every tile
boundary of either sharding is a boundary of the comparison.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from meshdiag.errors import MeshdiagError
from meshdiag.layouts.engine import Layout, layout
from meshdiag.limits import check_annotation_length
from meshdiag.model.sharding import HloSharding
from meshdiag.notation.detect import parse_sharding, to_hlo

SAME, PERMUTED, DIFFERENT = "same", "permuted", "different"

Slices = tuple[tuple[int, int], ...] | None


@dataclass(frozen=True)
class DeviceDiff:
    device: int
    a: Slices
    b: Slices
    #: devices that hold, under A, the slice this device holds under B (permuted/different)
    a_holders: tuple[int, ...]

    @property
    def same(self) -> bool:
        return self.a == self.b


@dataclass(frozen=True)
class LayoutDiff:
    verdict: str
    shape: tuple[int, ...]
    num_devices: int
    devices: tuple[DeviceDiff, ...]
    #: why the data differs although the slices agree (partial sums vs values, ...)
    note: str | None = None

    @property
    def differing(self) -> tuple[int, ...]:
        """Devices whose data differs (every device when the kinds of data differ)."""
        if self.note is not None:
            return tuple(d.device for d in self.devices)
        return tuple(d.device for d in self.devices if not d.same)


def _slices(lay: Layout, d: int) -> Slices:
    if d >= lay.num_devices or not lay.present[d]:
        return None
    return tuple(zip(lay.starts[d].tolist(), lay.stops[d].tolist(), strict=True))


def _data_kind(lay: Layout) -> str:
    if lay.partial:
        return "partial sums"
    if lay.manual:
        return "manual (per-device) data"
    return "values"


def compare_layouts(a: Layout, b: Layout) -> LayoutDiff:
    if a.shape != b.shape:
        raise MeshdiagError(f"the layouts are of different shapes: {a.shape} and {b.shape}")
    n = max(a.num_devices, b.num_devices)
    sa = [_slices(a, d) for d in range(n)]
    sb = [_slices(b, d) for d in range(n)]
    where: dict[Slices, list[int]] = {}
    for d, s in enumerate(sa):
        where.setdefault(s, []).append(d)
    devices = tuple(
        DeviceDiff(d, sa[d], sb[d], () if sa[d] == sb[d] else tuple(where.get(sb[d], ())))
        for d in range(n)
    )
    note = None
    if _data_kind(a) != _data_kind(b):
        note = f"A holds {_data_kind(a)}, B holds {_data_kind(b)}"
        verdict = DIFFERENT
    elif sa == sb:
        verdict = SAME
    elif sorted(sa, key=repr) == sorted(sb, key=repr):
        verdict = PERMUTED
    else:
        verdict = DIFFERENT
    return LayoutDiff(verdict, a.shape, n, devices, note)


def tile_shape(a: HloSharding, b: HloSharding, rank: int) -> tuple[int, ...]:
    """Per dim the lcm of both tile counts: the coarsest shape on which every tile boundary of
    either sharding falls between elements."""
    out = []
    for d in range(rank):
        k = 1
        for s in (a, b):
            if s.kind == "tiled" and s.data_rank is not None and d < s.data_rank:
                k = math.lcm(k, s.data_dims[d])
        out.append(k)
    return tuple(out)


def rank_of(a: HloSharding, b: HloSharding) -> int:
    ranks = {s.data_rank for s in (a, b) if s.kind == "tiled" and s.data_rank is not None}
    if len(ranks) > 1:
        raise MeshdiagError(
            f"the shardings tile tensors of different ranks ({' and '.join(map(str, sorted(ranks)))})"
        )
    return ranks.pop() if ranks else 0


@dataclass(frozen=True)
class ShardingDiff:
    a: HloSharding
    b: HloSharding
    diff: LayoutDiff
    #: the shape was given (False: compared at tile granularity)
    has_shape: bool


def diff_shardings(
    text_a: str,
    text_b: str,
    *,
    mesh=None,
    shape: tuple[int, ...] | None = None,
    split: str = "xla",
) -> ShardingDiff:
    """Parse two shardings (any notations) and compare their per-device slices."""

    parsed = [
        parse_sharding(
            check_annotation_length(t, "sharding"),
            mesh=mesh,
            rank=len(shape) if shape is not None else None,
        )
        for t in (text_a, text_b)
    ]
    hlo = [to_hlo(p, mesh) for p in parsed]
    for h, name in zip(hlo, "AB", strict=True):
        if h.kind == "tuple":
            raise MeshdiagError(f"sharding {name} is a tuple; compare one element at a time")
    sizes = [mesh.size] if mesh is not None else []
    sizes += [p.mesh.size for p in parsed if getattr(p, "mesh", None) is not None]
    sizes += [h.num_devices for h in hlo if h.num_devices is not None]
    sizes += [h.device + 1 for h in hlo if h.kind == "maximal" and h.device is not None]
    n = max(sizes, default=1)
    dims = shape if shape is not None else tile_shape(hlo[0], hlo[1], rank_of(hlo[0], hlo[1]))
    la = layout(hlo[0], dims, split=split, num_devices=n)
    lb = layout(hlo[1], dims, split=split, num_devices=n)
    return ShardingDiff(hlo[0], hlo[1], compare_layouts(la, lb), shape is not None)
