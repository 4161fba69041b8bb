"""Splitting one dimension of n elements over k shards, under each split rule.

Rules:
- `xla`: tile c = ceil(n/k); shard i = [min(i*c, n), min((i+1)*c, n)); every buffer padded to c.
- `chunk` (torch.chunk / TTNN): the same ranges, but shards past the last chunk hold nothing.
- `array-split` (numpy.array_split): the first n % k shards get n//k + 1, the rest n//k.
- `even` (JAX): n must be divisible by k.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Literal

from meshdiag.errors import LimitError, MeshdiagError
from meshdiag.limits import MAX_DIM

if TYPE_CHECKING:
    import numpy as np

SplitRule = Literal["xla", "chunk", "array-split", "even"]
SPLIT_RULES: tuple[str, ...] = ("xla", "chunk", "array-split", "even")


@dataclass(frozen=True)
class DimSplit:
    """Shards 0..k-1 of a dimension of `n` elements under a split `rule` (made by
    `split_dim`, which checks them): a shard alone as Python values (`part`, arithmetic),
    or every shard's range and buffer as numpy int64 arrays of length k, made when first
    asked (read-only)."""

    n: int
    k: int
    rule: SplitRule
    #: what renderers work out from the split alone, once (a run keeps its splits)
    derived: dict = field(default_factory=dict, compare=False, repr=False)
    #: the shards read so far (`part`)
    _parts: dict = field(default_factory=dict, init=False, compare=False, repr=False)

    @property
    def whole(self) -> bool:
        """Every shard holds data, none is empty and none padded (from n and k alone)."""
        n, k = self.n, self.k
        if self.rule == "array-split":
            return n >= k
        if self.rule == "chunk":  # every chunk starts before the end
            return n > 0 and (k - 1) * -(-n // k) < n
        return n > 0 and n % k == 0  # every buffer the tile ceil(n/k): whole when the shards are

    def part(self, i: int) -> tuple[tuple[int, int], bool, int, int]:
        """Shard `i`'s (start, stop), whether it is present, its buffer and its fit: 0 a
        whole tile (`ceil(n/k)` long), 1 shorter, 2 empty; what the arrays hold at `i`.
        Kept per shard (a run keeps its splits, and pictures read the same few shards of a
        dim that recurs in many shapes)."""
        parts = self._parts
        got = parts.get(i)
        if got is None:
            got = parts[i] = self._part(i)
        return got

    def _part(self, i: int) -> tuple[tuple[int, int], bool, int, int]:
        n, k = self.n, self.k
        c = -(-n // k)
        if self.rule == "array-split":
            q, r = divmod(n, k)
            start = i * q + min(i, r)
            stop = start + q + (i < r)
            held, buf = True, stop - start
        else:
            start, stop = min(i * c, n), min((i + 1) * c, n)
            if self.rule != "chunk":
                held, buf = True, c
            else:  # past the last chunk nothing (a size-0 dim: k empty chunks, as torch)
                held = start < n or not n
                buf = stop - start if held else 0
        fit = 2 if stop <= start else 1 if stop - start < c else 0
        return (start, stop), held, buf, fit

    @property
    def starts(self) -> np.ndarray:
        return self._arrays[0]

    @property
    def stops(self) -> np.ndarray:
        return self._arrays[1]

    @property
    def present(self) -> np.ndarray:
        """False where the shard holds nothing at all (no buffer): `chunk` past the last
        chunk."""
        return self._arrays[2]

    @property
    def buffers(self) -> np.ndarray:
        """Per-shard buffer extent (padded under `xla`)."""
        return self._arrays[3]

    @cached_property
    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        import numpy as np

        n, k = self.n, self.k
        i = np.arange(k, dtype=np.int64)
        if self.rule == "array-split":
            q, r = divmod(n, k)
            buffers = np.where(i < r, q + 1, q).astype(np.int64)
            stops = np.cumsum(buffers)
            starts = stops - buffers
            present = np.ones(k, dtype=bool)
        else:
            c = -(-n // k)  # ceil
            starts = np.minimum(i * c, n)
            stops = np.minimum((i + 1) * c, n)
            if self.rule == "chunk":
                # torch.chunk of a size-0 dim returns `k` empty chunks (split_with_sizes path)
                present = starts < n if n else np.ones(k, dtype=bool)
                buffers = np.where(present, stops - starts, 0)
            else:
                present = np.ones(k, dtype=bool)
                buffers = np.full(k, c, dtype=np.int64)
        out = (starts, stops, present, buffers)
        for a in out:
            a.flags.writeable = False
        return out


def check_rule(rule: str) -> SplitRule:
    if rule not in SPLIT_RULES:
        raise MeshdiagError(
            f"unknown split rule {rule!r}; expected one of {', '.join(SPLIT_RULES)}"
        )
    return rule  # type: ignore[return-value]


def split_dim(n: int, k: int, rule: str, *, dim: int | None = None) -> DimSplit:
    """Split a dimension of `n` elements into `k` shards."""
    return DimSplit(n, k, check_split(n, k, rule, dim=dim))


def check_split(n: int, k: int, rule: str, *, dim: int | None = None) -> str:
    """The rule (`check_rule`) when `n` elements can be split into `k` shards under it,
    else MeshdiagError (LimitError for a size beyond the int64 ranges)."""
    rule = check_rule(rule)
    if k < 1:
        raise MeshdiagError(f"cannot split into {k} shards")
    if n < 0:
        raise MeshdiagError(f"dimension size {n} is negative")
    if n >= MAX_DIM:  # the ranges are int64: refused, not overflowed
        where = f"dimension {dim} " if dim is not None else "dimension "
        raise LimitError(f"{where}of size {n} is too large (limit {MAX_DIM - 1})")
    if rule == "even" and n % k:
        where = f"dimension {dim} " if dim is not None else "dimension "
        raise MeshdiagError(
            f"{where}of size {n} is not divisible by its {k} shards (split rule 'even')"
        )
    return rule
