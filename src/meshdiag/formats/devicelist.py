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

from collections.abc import Iterable

#: explanation of the notation, for legends
NOTATION = "0-3 = devices 0..3, 0-6:2 = step 2"


def device_runs(ids: Iterable[int]) -> list[tuple[int, int, int]]:
    """Sorted unique ids as (first, last, step) runs, greedily left to right."""
    xs = sorted(set(int(i) for i in ids))
    runs: list[tuple[int, int, int]] = []
    i = 0
    n = len(xs)
    while i < n:
        if i + 1 == n:
            runs.append((xs[i], xs[i], 1))
            break
        step = xs[i + 1] - xs[i]
        j = i + 1
        while j + 1 < n and xs[j + 1] - xs[j] == step:
            j += 1
        length = j - i + 1
        if (step == 1 and length >= 3) or length >= 4:
            runs.append((xs[i], xs[j], step))
            i = j + 1
        else:
            runs.append((xs[i], xs[i], 1))
            i += 1
    return runs


def _run_text(first: int, last: int, step: int) -> str:
    if first == last:
        return str(first)
    if step == 1:
        return f"{first}-{last}"
    return f"{first}-{last}:{step}"


def compress_devices(ids: Iterable[int], *, max_chars: int | None = None) -> str:
    """Text for a set of device ids; `max_chars` elides the tail as `…(+N)`."""
    runs = device_runs(ids)
    parts = [_run_text(*r) for r in runs]
    text = ",".join(parts)
    if max_chars is None or len(text) <= max_chars:
        return text
    # keep whole runs while they fit, then say how many devices were left out
    counts = [(last - first) // step + 1 for first, last, step in runs]
    remaining = sum(counts)
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
