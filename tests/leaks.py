"""How much memory a native call keeps: the tests of the C helpers ask it after refusals."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable


def bytes_grown(call: Callable[[], object], times: int = 200, warm: int = 5) -> int:
    """The bytes still allocated after `call()` ran `times` times, once it ran `warm`
    times first (what its first calls keep for good, memos and pieces, is not a leak)."""
    for _ in range(warm):
        call()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for _ in range(times):
            call()
        return tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
