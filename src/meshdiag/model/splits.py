"""Splitting one dimension of n elements over k shards, under each split rule.

Rules:
- `xla`: tile c = ceil(n/k); shard i = [min(i*c, n), min((i+1)*c, n)); every buffer padded to c.
- `chunk` (torch.chunk / TTNN): the same ranges, but shards past the last chunk hold nothing.
- `array-split` (numpy.array_split): the first n % k shards get n//k + 1, the rest n//k.
- `even` (JAX): n must be divisible by k.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Literal

from meshdiag.errors import LimitError, MeshdiagError
from meshdiag.limits import MAX_DIM

if TYPE_CHECKING:
    import numpy as np

SplitRule = Literal["xla", "chunk", "array-split", "even"]
SPLIT_RULES: tuple[str, ...] = ("xla", "chunk", "array-split", "even")
#: up to so many shards `DimSplit.part` reads from lists
MAX_LISTED_SHARDS = 4096


@dataclass(frozen=True)
class DimSplit:
    """Ranges of shards 0..k-1 along one dimension (numpy int64 arrays of length k)."""

    starts: np.ndarray
    stops: np.ndarray
    #: False where the shard holds nothing at all (no buffer): `chunk` past the last chunk
    present: np.ndarray
    #: per-shard buffer extent (padded under `xla`)
    buffers: np.ndarray
    #: every shard holds data, none is empty and none padded (worked out from n and k)
    whole: bool = False

    def part(self, i: int) -> tuple[tuple[int, int], bool, int, int]:
        """Shard `i` as Python values: its (start, stop), whether it is present, its buffer
        and its fit: 0 a whole tile (`ceil(n/k)` long), 1 shorter, 2 empty. From lists made
        at first ask when there are few shards (a picture reads each a few times)."""
        rows = self._rows
        if rows is not None:
            return rows[i]
        return self._row(
            int(self.starts[i]), int(self.stops[i]), bool(self.present[i]), int(self.buffers[i])
        )

    def _row(
        self, start: int, stop: int, held: bool, buf: int
    ) -> tuple[tuple[int, int], bool, int, int]:
        k = len(self.starts)
        n = int(self.stops[-1]) if k else 0
        fit = 2 if stop <= start else 1 if stop - start < -(-n // k) else 0
        return (start, stop), held, buf, fit

    @cached_property
    def _rows(self) -> list[tuple[tuple[int, int], bool, int, int]] | None:
        if len(self.starts) > MAX_LISTED_SHARDS:
            return None
        return [
            self._row(a, b, p, c)
            for a, b, p, c in zip(
                self.starts.tolist(),
                self.stops.tolist(),
                self.present.tolist(),
                self.buffers.tolist(),
                strict=True,
            )
        ]


def check_rule(rule: str) -> SplitRule:
    if rule not in SPLIT_RULES:
        raise MeshdiagError(
            f"unknown split rule {rule!r}; expected one of {', '.join(SPLIT_RULES)}"
        )
    return rule  # type: ignore[return-value]


def split_dim(n: int, k: int, rule: str, *, dim: int | None = None) -> DimSplit:
    """Split a dimension of `n` elements into `k` shards."""
    import numpy as np

    rule = check_rule(rule)
    if k < 1:
        raise MeshdiagError(f"cannot split into {k} shards")
    if n < 0:
        raise MeshdiagError(f"dimension size {n} is negative")
    if n >= MAX_DIM:  # the ranges are int64: refused, not overflowed
        where = f"dimension {dim} " if dim is not None else "dimension "
        raise LimitError(f"{where}of size {n} is too large (limit {MAX_DIM - 1})")
    i = np.arange(k, dtype=np.int64)
    if rule == "array-split":
        q, r = divmod(n, k)
        sizes = np.where(i < r, q + 1, q)
        stops = np.cumsum(sizes)
        starts = stops - sizes
        return DimSplit(starts, stops, np.ones(k, dtype=bool), sizes, whole=n >= k)
    if rule == "even" and n % k:
        where = f"dimension {dim} " if dim is not None else "dimension "
        raise MeshdiagError(
            f"{where}of size {n} is not divisible by its {k} shards (split rule 'even')"
        )
    c = -(-n // k)  # ceil
    starts = np.minimum(i * c, n)
    stops = np.minimum((i + 1) * c, n)
    if rule == "chunk":
        # torch.chunk of a size-0 dim returns `k` empty chunks (split_with_sizes path)
        present = starts < n if n else np.ones(k, dtype=bool)
        buffers = np.where(present, stops - starts, 0)
    else:
        present = np.ones(k, dtype=bool)
        buffers = np.full(k, c, dtype=np.int64)
    if rule == "chunk":  # every chunk starts before the end: none empty, none padded
        whole = n > 0 and (k - 1) * c < n
    else:  # every buffer the tile `c`: whole when the shards are
        whole = n > 0 and n % k == 0
    return DimSplit(starts, stops, present, buffers, whole=whole)
