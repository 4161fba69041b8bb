"""MD105 uneven-shard: a dimension not divisible by its shard count.

Three entry points share one message builder:
- `uneven_findings(hlo, shape, split, where=...)` for a tiled GSPMD sharding (layout, inspect);
- `sharded_dim_findings(ShardedDim, split, where=...)` for simulate-copy's TTNN mappers, whose
  device order (ROW_MAJOR / SUBMESH) is not a tile assignment;
- `check(module, ctx)` (the module rule): every value with a global shape and a tiled sharding.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from meshdiag.checks.keys import Decides
from meshdiag.checks.rule import Rule
from meshdiag.checks.values import value_findings
from meshdiag.model.splits import check_split
from meshdiag.model.tiles import LISTED_IOTA_DEVICES
from meshdiag.notation.devicelist import compress_devices

if TYPE_CHECKING:
    from meshdiag.checks.context import CheckContext
    from meshdiag.ir.model import ModuleReport, Value
    from meshdiag.memo import RunMemos
    from meshdiag.model.copy import ShardedDim
    from meshdiag.model.findings import Finding
    from meshdiag.model.sharding import HloSharding
    from meshdiag.model.tiles import TileAssignment


def _hold(ids) -> str:
    """`device 7 holds` / `devices 5-7 hold` (ids: a sequence or a numpy array)."""
    text = compress_devices(ids, max_chars=60)
    if text.isdigit():
        return f"device {text} holds"
    return f"devices {text} hold"


def _sizes_text(sizes: Sequence[int]) -> str:
    """Run-length sizes: `2,2,2,2,1` → `2×4,1`; short lists are spelled out."""
    if len(sizes) <= 8:
        return ",".join(map(str, sizes))
    runs: list[list[int]] = []
    for s in sizes:
        if runs and runs[-1][0] == s:
            runs[-1][1] += 1
        else:
            runs.append([s, 1])
    return ",".join(f"{s}×{c}" if c > 1 else str(s) for s, c in runs)


def dim_finding(
    dim: int,
    n: int,
    k: int,
    split: str,
    ids_by_index: Sequence[Sequence[int]],
    *,
    where: dict,
) -> Finding | None:
    """The MD105 finding for dimension `dim` of size `n` split `k` ways, or None if even.

    `ids_by_index[i]` are the devices that hold shard index i (or would, when it is empty):
    lists, or a [k, m] numpy array (a million devices stay an array). Which shards are
    short or empty follows from n and k alone (`shard_runs`): no per-shard arrays, and no
    numpy for lists.
    """
    if k <= 1 or n % k == 0:
        return None
    c = -(-n // k)
    check_split(n, k, "xla" if split == "even" else split, dim=dim)
    head = f"dimension {dim} (size {n}) does not divide into its {k} shards"

    def group(lo: int, hi: int) -> Sequence[int]:
        """The devices of shard indices lo..hi-1."""
        if hasattr(ids_by_index, "reshape"):  # an array: its rows, without a copy
            return ids_by_index[lo:hi].reshape(-1)  # type: ignore[call-overload]
        return [d for i in range(lo, hi) for d in ids_by_index[i]]

    parts: list[str] = []
    if split == "even":
        detail = (
            "the 'even' rule (JAX NamedSharding) rejects it: every sharded dimension must be "
            "divisible by its shard count"
        )
    elif split == "chunk":
        full, used = shard_runs(n, k)
        chunk_sizes = [c] * full + [n - full * c] * (used - full)
        detail = f"under 'chunk' chunks are {c} long, giving {len(chunk_sizes)} chunks ({_sizes_text(chunk_sizes)})"
        if used > full:
            parts.append(f"{_hold(group(full, used))} a short chunk of {n - full * c}")
        if used < k:
            parts.append(f"{_hold(group(used, k))} nothing")
    elif split == "xla":
        full, used = shard_runs(n, k)
        detail = f"under 'xla' tiles are {c} long and every buffer is padded to {c}"
        if used > full:
            z = n - full * c
            parts.append(f"{_hold(group(full, used))} {z} + {c - z} padding")
        if used < k:
            parts.append(f"{_hold(group(used, k))} only padding")
    else:  # array-split
        q, r = divmod(n, k)
        detail = (
            f"under 'array-split' sizes differ by one ({_sizes_text([q + 1] * r + [q] * (k - r))})"
        )
        parts.append(f"{_hold(group(0, r))} {q + 1}")
        parts.append(f"{_hold(group(r, k))} " + (str(q) if q else "nothing"))
    message = f"{head}: {detail}" + (": " + "; ".join(parts) if parts else "")
    fix = (
        f"pad dimension {dim} from {n} to {c * k} (the next multiple of {k}) so every device "
        f"holds {c}, or shard it over a mesh axis whose size divides {n}; if the uneven split is "
        "intended, size each device's buffer from its own shard, never one uniform spec"
    )
    return RULE.finding(message, fix, **where)


def shard_runs(n: int, k: int) -> tuple[int, int]:
    """Under `xla` and `chunk` (tiles of c = ceil(n/k), n >= 1): shards 0..full-1 hold a
    whole tile, full..used-1 a shorter one (at most one shard), used..k-1 nothing (padding
    only, or no chunk at all)."""
    c = -(-n // k)
    full = n // c
    return full, -(-n // c)


def sharded_dim_findings(sd: ShardedDim, split: str, *, where: dict) -> list[Finding]:
    f = dim_finding(sd.dim, sd.size, sd.shards, split, sd.ids_by_index, where=where)
    return [f] if f is not None else []


def uneven_findings(
    hlo: HloSharding, shape: Sequence[int], split: str, *, where: dict
) -> list[Finding]:
    """MD105 for every tensor dim a tiled sharding splits unevenly (none for other kinds).
    Even shardings cost no numpy import (most of `meshdiag lint`'s start-up otherwise)."""
    if not hlo.is_tiled or hlo.tile is None or hlo.data_rank != len(shape):
        return []
    out: list[Finding] = []
    tile = hlo.tile
    for d, k in enumerate(hlo.data_dims):
        if k <= 1 or shape[d] % k == 0:
            continue
        f = dim_finding(d, int(shape[d]), int(k), split, _by_index(tile, d), where=where)
        if f is not None:
            out.append(f)
    return out


def _by_index(tile: TileAssignment, d: int) -> Sequence[Sequence[int]]:
    """The devices of each index along tile dim `d`, in row-major order of the other dims:
    listed in Python for a tile of at most `LISTED_IOTA_DEVICES`, else a numpy array."""
    if tile.num_devices > LISTED_IOTA_DEVICES:
        import numpy as np

        k = tile.dims[d]
        return np.moveaxis(tile.array(), d, 0).reshape(k, -1)
    dims = tile.dims
    k = dims[d]
    stride = math.prod(dims[d + 1 :])
    rows: list[list[int]] = [[] for _ in range(k)]
    for pos, device in enumerate(tile.devices()):
        rows[(pos // stride) % k].append(device)
    return rows


def check_module(module: ModuleReport, ctx: CheckContext) -> list[Finding]:
    """MD105 for every value whose global shape is known and whose sharding is tiled."""

    if module.partitioned:
        return []  # shapes are per-device there
    return value_findings(module, ctx, RULE, ctx.split, _judge, DECIDES)


#: what decides whether a value has a finding (`checks.keys`): the tiled form (by identity)
#: and the global shape when the form does not split it evenly (`keys.splits_evenly`;
#: nothing to find otherwise): most values split evenly, and keyed by their shapes, every
#: value of a file whose shapes never repeat was judged (MD105 over the 252 MB file:
#: 1.2-1.35 s keyed by shape, 0.95 s so)
DECIDES = Decides("#hlo", "uneven_shape")


def _judge(v: Value, split: str, memos: RunMemos) -> list[tuple[str, str | None]]:
    h = v.hlo
    if v.shape is None or h is None:
        return []
    # (sharding, shape) pairs repeat across values: judge each once
    seen = memos.table("md105.uneven", 8192)
    key = (h, v.shape, split)
    found = seen.get(key)
    if found is None:
        found = seen.put(key, uneven_findings(h, v.shape, split, where={}) if h.is_tiled else [])
    return [(f"{v.name}: {f.message}", f.fix) for f in found]


RULE = Rule(
    code="MD105",
    name="uneven-shard",
    severity="warning",
    summary="a dimension is not divisible by its shard count: padding, short or empty devices",
    what="A tensor dimension of size n is split over k shards and k does not divide n. "
    "Which devices come up short depends on the split rule: XLA pads every buffer to "
    "ceil(n/k) and the last tiles hold only padding; torch.chunk and TTNN's mappers make "
    "ceil(n/k)-long chunks until the data runs out, so trailing devices hold nothing at "
    "all; numpy.array_split spreads the remainder over the first shards; JAX's "
    "NamedSharding refuses the layout. The finding names the short and the empty devices "
    "under the active split rule (--split).",
    why="Uneven shards are where runtimes disagree. A (1,7,32,32) tensor sharded on dim 1 "
    "over 8 TTNN devices writes 7 devices and leaves the 8th without data; a destination "
    "allocated with one uniform (1,1,32,32) spec still claims the 8th device holds data, "
    "and reading it back returns stale memory (tt-metal PR #18833). Current TTNN rejects "
    "unequal chunk shapes ('Shard shape mismatch'); JAX rejects any non-divisible dim.",
    fix="Pad the dimension to a multiple of its shard count, or shard it over a mesh axis "
    "whose size divides it. If the uneven split is intended, give each device a buffer "
    "sized from its own shard (no buffer, or a zero-size spec, for empty devices) and copy "
    "into the destination by reference.",
    example="meshdiag simulate-copy --mesh t3k --shape 1,7,32,32 --mapper shard:1\n"
    "  MD105 dimension 1 (size 7) does not divide into its 8 shards: under 'chunk' chunks "
    "are 1 long, giving 7 chunks (1,1,1,1,1,1,1): device 7 holds nothing\n"
    "Use instead: --shape 1,8,32,32 (padded), or per-device specs with device 7 empty.",
)


check = check_module
