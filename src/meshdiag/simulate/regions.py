"""Index math on regions (half-open ranges per dim) of a row-major tensor: their printed form,
flat offsets, the exact sum of `arange` over a region, mesh coordinates. No numpy."""

from __future__ import annotations

import math

from meshdiag.model.copy import Ranges, Shape


def shape_text(shape: Shape) -> str:
    """`(1,7,32,32)`."""
    return "(" + ",".join(map(str, shape)) + ")"


def extent(region: Ranges) -> Shape:
    """The shape of a region."""
    return tuple(hi - lo for lo, hi in region)


def region_text(region: Ranges, shape: Shape | None = None) -> str:
    """`[0,7,:,:]`: an index where one wide, `:` where the whole dim, else `a:b`."""
    parts = []
    for d, (a, b) in enumerate(region):
        if shape is not None and a == 0 and b == shape[d]:
            parts.append(":")
        elif b == a + 1:
            parts.append(str(a))
        else:
            parts.append(f"{a}:{b}")
    return "[" + ",".join(parts) + "]"


def tile_region(splits, g: tuple[int, ...]) -> Ranges:
    """The source region of tile `g`, given each dim's split (`model.splits.split_dim`)."""
    return tuple((int(splits[d].starts[i]), int(splits[d].stops[i])) for d, i in enumerate(g))


def strides(shape: Shape) -> list[int]:
    """Row-major element strides."""
    out, run = [], 1
    for s in reversed(shape):
        out.append(run)
        run *= s
    return out[::-1]


def flat_index(shape: Shape, idx: tuple[int, ...]) -> int:
    """Row-major offset of element `idx`."""
    return sum(i * s for i, s in zip(idx, strides(shape), strict=True))


def region_sum(shape: Shape, region: Ranges) -> int:
    """Exact sum of `arange(prod(shape)).reshape(shape)[region]`, without the data."""
    lens = [b - a for a, b in region]
    total = math.prod(lens)
    if total == 0:
        return 0
    out = 0
    for st, (a, b), n in zip(strides(shape), region, lens, strict=True):
        out += st * ((a + b - 1) * n // 2) * (total // n)
    return out


def unravel(p: int, shape: Shape) -> list[int]:
    """The coordinate of row-major position `p` in `shape`."""
    out = []
    for s in reversed(shape):
        out.append(p % s)
        p //= s
    return out[::-1]
