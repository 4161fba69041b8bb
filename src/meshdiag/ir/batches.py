"""Files of a run in batches of about equal bytes, in order: what the worker pool of
`meshdiag inspect` hands out.

A run is worth its worker processes when there is enough to read, whatever the number of
files: 62 files of 5 MB each are 300 MB of work (they ran serially when the decision was
by file count), 3,000 files of 2 KB are not. Batches are cut by bytes, so one big file is
a batch of its own and small ones share one, at most `MAX_FILES` each.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

#: below this many bytes in all, one process reads everything sooner than a pool starts
#: (importing meshdiag and the checks in each worker costs about 0.2 s)
PARALLEL_BYTES = 8 << 20
#: files per batch at most (each batch is one task and one spooled output; `map_files` puts
#: no more in one task of `lint` either). Long runs of
#: consecutive files keep a program's pass files with one worker, whose memos then answer
#: their repeated lines: 64 split every program of the cold bench across both workers
#: (both cores: 4.0-5.0 s, 6.4-7.8 s CPU; with 1024: 3.4-4.1 s, 5.3-6.5 s CPU)
MAX_FILES = 1024
#: batches per worker: enough to keep every worker busy to the end
PER_WORKER = 16


def sizes(files: Sequence[str]) -> list[int]:
    """Each file's size in bytes (0 for stdin and what cannot be stat'ed: the scan says
    why it cannot be read)."""
    out = []
    for f in files:
        try:
            out.append(os.stat(f).st_size if f != "-" else 0)
        except OSError:
            out.append(0)
    return out


def by_bytes(files: Sequence[str], jobs: int) -> tuple[list[list[str]], bool]:
    """(batches of consecutive files of about equal bytes, whether workers pay): with
    `jobs` workers and at least `PARALLEL_BYTES` in all, about `PER_WORKER` batches per
    worker; else batches of `MAX_FILES` files, read in this process."""
    sz = sizes(files)
    total = sum(sz)
    parallel = jobs > 1 and total >= PARALLEL_BYTES and len(files) > 1
    if not parallel:
        return [list(files[i : i + MAX_FILES]) for i in range(0, len(files), MAX_FILES)], False
    target = max(1, total // (jobs * PER_WORKER))
    batches: list[list[str]] = []
    batch: list[str] = []
    held = 0
    for f, n in zip(files, sz, strict=True):
        if batch and (held + n > target or len(batch) >= MAX_FILES):
            batches.append(batch)
            batch, held = [], 0
        batch.append(f)
        held += n
    if batch:
        batches.append(batch)
    return batches, len(batches) > 1
