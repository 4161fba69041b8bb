"""Compressed device lists for labels: `0-255`, `0,4`, `0-3,8-11`, `0-254:2`.

Runs of consecutive ids become `a-b` (3 or more ids), arithmetic runs with a larger step
become `a-b:s` (4 or more ids; "a to b step s"), anything else is listed. Long results are
elided to `max_chars` with a count of what was left out.

    >>> compress_devices([0, 1, 2, 3])
    '0-3'
    >>> compress_devices([0, 4])
    '0,4'
    >>> compress_devices(range(0, 256, 2))
    '0-254:2'
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

#: explanation of the notation, for legends
NOTATION = "0-3 = devices 0..3, 0-6:2 = step 2"


#: lists longer than this are sorted and scanned with numpy
_NUMPY_FROM = 4096


def _sorted_unique(ids: Iterable[int]) -> Sequence[int]:
    if isinstance(ids, (list, tuple, range)) and len(ids) <= _NUMPY_FROM:
        return sorted(set(int(i) for i in ids))
    if getattr(ids, "size", _NUMPY_FROM + 1) <= _NUMPY_FROM:
        # a small array (MD105 names each shard's devices): a few numpy calls cost more
        return sorted(set(ids.reshape(-1).tolist()))  # type: ignore[attr-defined]
    import numpy as np

    arr = np.asarray(ids if isinstance(ids, (list, tuple, np.ndarray)) else list(ids))
    arr = arr.astype(np.int64, copy=False).reshape(-1)
    if len(arr) > 1 and not bool(np.all(arr[1:] > arr[:-1])):  # not yet sorted and unique
        arr = np.sort(arr)
        arr = arr[np.concatenate(([True], arr[1:] != arr[:-1]))]
    return arr


def _iter_runs(xs: Sequence[int]) -> Iterator[tuple[int, int, int]]:
    """Sorted unique ids as (first, last, step) runs, greedily left to right, one run at a
    time: a caller that only needs the first few runs of a million ids stops early."""
    n = len(xs)
    if n > _NUMPY_FROM:  # jump over blocks of equal steps instead of walking every id
        import numpy as np

        d = np.diff(xs)
        change = np.flatnonzero(d[1:] != d[:-1]) + 1  # first diff index of each new block
        block_end = np.append(change, len(d)) - 1  # last diff index of each block
        block_of = np.zeros(len(d), dtype=np.int64)
        block_of[change] = 1
        block_of = np.cumsum(block_of)
        steps = d  # read an item at a time: callers with max_chars read a few runs only

        def run_end(i: int) -> int:  # last index j of the equal-step run from i
            return int(block_end[block_of[i]]) + 1

    else:
        steps = [xs[k + 1] - xs[k] for k in range(n - 1)]
        last = list(range(1, n))  # last index of the equal-step block from diff k
        for k in range(n - 3, -1, -1):
            if steps[k] == steps[k + 1]:
                last[k] = last[k + 1]

        def run_end(i: int) -> int:
            return last[i]

    i = 0
    while i < n:
        first = int(xs[i])
        if i + 1 == n:
            yield (first, first, 1)
            return
        step = int(steps[i])
        j = run_end(i)
        length = j - i + 1
        if (step == 1 and length >= 3) or length >= 4:
            yield (first, int(xs[j]), step)
            i = j + 1
        else:
            yield (first, first, 1)
            i += 1


def device_runs(ids: Iterable[int]) -> list[tuple[int, int, int]]:
    """Sorted unique ids as (first, last, step) runs, greedily left to right."""
    return list(_iter_runs(_sorted_unique(ids)))


def _run_text(first: int, last: int, step: int) -> str:
    if first == last:
        return str(first)
    if step == 1:
        return f"{first}-{last}"
    return f"{first}-{last}:{step}"


def compress_devices(ids: Iterable[int], *, max_chars: int | None = None) -> str:
    """Text for a set of device ids; `max_chars` elides the tail as `…(+N)`. With
    `max_chars`, only the runs that can show are computed (a million ids cost a sort)."""
    if ids.__class__ is tuple and len(ids) <= 2:  # too few for a run: listed (a picture
        # labels each tile, mostly of one or two devices)
        text = ",".join(map(str, sorted({int(i) for i in ids})))  # type: ignore[attr-defined]
        if max_chars is None or len(text) <= max_chars:
            return text
    xs = _sorted_unique(ids)
    parts: list[str] = []
    counts: list[int] = []
    used = -1
    for first, last, step in _iter_runs(xs):
        part = _run_text(first, last, step)
        parts.append(part)
        counts.append((last - first) // step + 1)
        used += len(part) + 1
        if max_chars is not None and used > max_chars:
            break  # must be elided; the runs so far decide what is kept
    else:
        if max_chars is None or used <= max_chars:
            return ",".join(parts)
    # keep whole runs while they fit, then say how many devices were left out
    remaining = len(xs)
    kept: list[str] = []
    used = 0
    for part, count in zip(parts, counts, strict=True):
        need = used + len(part) + (1 if kept else 0)
        if need + len(f",…(+{remaining - count})") > max_chars:
            break
        kept.append(part)
        used = need
        remaining -= count
    return (",".join(kept) + "," if kept else "") + f"…(+{remaining})"


def expand_devices(text: str) -> list[int]:
    """Inverse of `compress_devices` for unelided text (the round-trip tests use it)."""
    out: list[int] = []
    for part in filter(None, text.split(",")):
        step = 1
        if ":" in part:
            part, s = part.split(":")
            step = int(s)
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1, step))
        else:
            out.append(int(part))
    return out
