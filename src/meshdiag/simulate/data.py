"""Data mode: the elements themselves, moved at memory speed once the ranges are decided.

The source is `arange(prod(shape))` as float32 (every element recognisable); each device gets
a flat buffer that starts stale (NaN for `sentinel`, -1, -2, ... running over devices in id
order for `previous`), its shard copied to the start; the read-back is composed from the
buffers with numpy slicing and `np.copyto` into preallocated arrays.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from meshdiag.errors import LimitError
from meshdiag.limits import MAX_MATERIALISED_ELEMENTS
from meshdiag.model.copy import Ranges, Shape
from meshdiag.simulate.compose import Placed
from meshdiag.simulate.regions import extent

if TYPE_CHECKING:
    from meshdiag.model.mesh import Mesh


def choose_symbolic(
    shape: Shape, allocated: list[Shape | None], out_shape: Shape, symbolic: bool | None
) -> bool:
    """Whether to stay on ranges: asked for (True), or the largest array (source, all buffers,
    read-back) exceeds `limits.MAX_MATERIALISED_ELEMENTS` — refused when data mode was asked
    for (False)."""
    src_n = math.prod(shape)
    buf_n = sum(math.prod(a) for a in allocated if a is not None)
    out_n = math.prod(out_shape)
    big = max(src_n, buf_n, out_n) > MAX_MATERIALISED_ELEMENTS
    if symbolic is False and big:
        raise LimitError(
            f"materialising this copy needs {max(src_n, buf_n, out_n)} elements in one array, "
            f"more than the limit of {MAX_MATERIALISED_ELEMENTS} (raise MESHDIAG_MAX_ELEMENTS "
            "or use symbolic mode)"
        )
    return bool(symbolic) or big


def arange_f32(n: int, block: int = 1 << 16) -> np.ndarray:
    """`np.arange(n, dtype=float32)`, element for element, at memory speed.

    numpy computes a float arange one multiply per element (slower than a copy); here one
    block is made and the rest are that block plus a block offset. Offsets are multiples of
    2**16, exact in float32 for any n we materialise, so each sum rounds once from the exact
    integer, as numpy's arange does.
    """
    out = np.empty(n, dtype=np.float32)
    head = out[: min(n, block)]
    head[:] = np.arange(head.size, dtype=np.float32)
    for start in range(block, n, block):
        stop = min(n, start + block)
        np.add(head[: stop - start], np.float32(start), out=out[start:stop])
    return out


def materialise(
    shape: Shape,
    regions: list[Ranges | None],
    allocated: list[Shape | None],
    final: list[Shape | None],
    placed: Placed,
    out_shape: Shape,
    stale: str,
    mesh: Mesh,
) -> tuple[dict[int, np.ndarray], np.ndarray]:
    """Move the elements: source → device buffers → read-back, at memory speed.

    Returns each device's flat buffer (by device id) and the read-back tensor. Once the
    buffers hold their copies the source is dead, so the read-back reuses its memory when it
    fits: one fresh tensor-sized allocation less (page faults cost as much as a copy).
    """
    ids = mesh.ids
    source = arange_f32(math.prod(shape)).reshape(shape)
    buffers = _fill_buffers(source, regions, allocated, stale, mesh)
    n_out = math.prod(out_shape)
    if n_out <= source.size:
        out = source.reshape(-1)[:n_out].reshape(out_shape)
    else:
        out = np.empty(out_shape, dtype=np.float32)
    del source
    for pos, region in placed:
        if pos is None:
            continue
        spec = final[pos]
        assert spec is not None
        buf = buffers[ids[pos]]
        np.copyto(
            out[tuple(slice(lo, hi) for lo, hi in region)], buf[: math.prod(spec)].reshape(spec)
        )
    return buffers, out


def _fill_buffers(
    source: np.ndarray,
    regions: list[Ranges | None],
    allocated: list[Shape | None],
    stale: str,
    mesh: Mesh,
) -> dict[int, np.ndarray]:
    """Each allocated device's flat buffer: its shard at the start, stale memory after it."""
    ids = mesh.ids
    buffers: dict[int, np.ndarray] = {}
    prev = 0  # running offset of the `previous` pattern, in device-id order
    for p in sorted(range(mesh.size), key=lambda q: ids[q]):
        a = allocated[p]
        if a is None:
            continue
        size = math.prod(a)
        buf = np.empty(size, dtype=np.float32)
        r = regions[p]
        written = 0
        if r is not None:
            w = extent(r)
            written = math.prod(w)
            np.copyto(buf[:written].reshape(w), source[tuple(slice(lo, hi) for lo, hi in r)])
        tail = buf[written:]
        if tail.size:  # only memory nothing was written to is stale
            if stale == "sentinel":
                tail.fill(np.nan)
            else:
                tail[:] = np.arange(prev + written + 1, prev + size + 1, dtype=np.float32)
                np.negative(tail, out=tail)
        prev += size
        buffers[ids[p]] = buf
    return buffers
