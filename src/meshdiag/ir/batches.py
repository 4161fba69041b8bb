"""Files of a run in batches of about equal bytes, in order: what the worker pool of
`meshdiag inspect` hands out.

A run is worth its worker processes when there is enough to read, whatever the number of
files: 62 files of 5 MB each are 300 MB of work (they ran serially when the decision was
by file count), 3,000 files of 2 KB are not. Batches are cut by bytes, so one big file is
a batch of its own and small ones share one, at most `MAX_FILES` each.

Batches are cut while the directory walk goes on (`stream`): the workers start on the
first ones while this process still walks and sizes the rest (in the cold bench, walking
and sizing 48k files took 0.3 s before any worker started). A batch past its share of the
bytes ends where an XLA dump's module does (`program_of`): one worker then reads all the
pass files of a module, whose lines repeat from pass to pass, and learns them once (cut
by bytes alone, 71 of the cold bench's programs were split across two batches and read
afresh by both workers; cut at modules, 20).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from itertools import chain

#: below this many bytes in all, one process reads everything sooner than a pool starts
#: (importing meshdiag and the checks in each worker costs about 0.2 s)
PARALLEL_BYTES = 8 << 20
#: files per batch at most (each batch is one task and one spooled output; `task_files`
#: puts no more in one task of a file-by-file pool either). Long runs of consecutive files
#: keep a program's pass files with one worker, whose memos then answer
#: their repeated lines: 64 split every program of the cold bench across both workers
#: (both cores: 4.0-5.0 s, 6.4-7.8 s CPU; with 1024: 3.4-4.1 s, 5.3-6.5 s CPU)
MAX_FILES = 1024
#: batches per worker: enough to keep every worker busy to the end
PER_WORKER = 16
#: bytes a batch holds at least (but for the last), or 1/jobs of `PARALLEL_BYTES` when that
#: is less (many cores: every worker gets a batch of the smallest parallel run): a run's
#: first batches split no more programs between the workers than later ones (each worker
#: learns what it reads)
MIN_BYTES = 2 << 20


def task_files(n_files: int, jobs: int) -> int:
    """Files per task when `jobs` workers take a list of `n_files` files one by one
    (`pipeline.inspect.map_files` without a chunk size; the commands hand out `stream`'s
    batches instead): about `PER_WORKER` tasks per worker keep the cores evenly loaded to
    the end, and runs of up to `MAX_FILES` consecutive files keep what a worker remembers
    useful."""
    return max(1, min(MAX_FILES, n_files // (jobs * PER_WORKER)))


def size(path: str) -> int:
    """A file's size in bytes (0 for stdin and what cannot be stat'ed: the scan says why
    it cannot be read)."""
    try:
        return os.stat(path).st_size if path != "-" else 0
    except OSError:
        return 0


#: `split(path, size, jobs)`: the parts of a big file to read in several workers, or None
Split = Callable[[str, int, int], list | None]


def stream(
    files: Iterable[str], jobs: int, split: Split | None = None
) -> tuple[Iterator[list], bool]:
    """(batches of consecutive `files`, whether workers pay), the batches cut as they are
    asked for. With one job nothing is sized: batches of `MAX_FILES` files. Else the files
    are sized until `PARALLEL_BYTES` is reached (workers pay) or they end (they do not);
    then each batch holds about 1/(jobs * `PER_WORKER`) of the bytes sized so far (at
    least `MIN_BYTES` or 1/jobs of `PARALLEL_BYTES`, at most `MAX_FILES` files): the
    workers start at once, and the last batches hold that share of all the bytes.

    With `split` (`ir.parts.split_file`), a file it cuts in parts is a batch per part,
    `[part]`; a single file so cut is worth the workers too."""
    it = iter(files)
    if jobs <= 1:
        return _runs(it), False
    head: list[tuple[str, int]] = []
    total = 0
    for f in it:
        n = size(f)
        head.append((f, n))
        total += n
        if total >= PARALLEL_BYTES and len(head) > 1:
            break
    else:  # the files ended first: not worth the workers, unless some are read in parts
        cut = list(_cut(head, split, jobs))
        if not any(parts for _, _, parts in cut):
            return _runs(f for f, _ in head), False
        return _by_share(cut, jobs), True
    return _by_share(_cut(chain(head, ((f, size(f)) for f in it)), split, jobs), jobs), True


def _cut(sized: Iterable[tuple[str, int]], split: Split | None, jobs: int):
    """(file, size, its parts or None) of each sized file."""
    for f, n in sized:
        yield f, n, (split(f, n, jobs) if split is not None else None)


def _runs(files: Iterator[str]) -> Iterator[list[str]]:
    batch: list[str] = []
    for f in files:
        batch.append(f)
        if len(batch) == MAX_FILES:
            yield batch
            batch = []
    if batch:
        yield batch


def _by_share(cut: Iterable[tuple[str, int, list | None]], jobs: int) -> Iterator[list]:
    share = jobs * PER_WORKER
    least = max(1, min(MIN_BYTES, PARALLEL_BYTES // jobs))
    seen = 0  # bytes sized so far
    batch: list = []
    held = 0
    program = None
    for f, n, parts in cut:
        if parts:  # the batch so far, then the big file's parts one by one
            if batch:
                yield batch
                batch, held = [], 0
            yield from ([p] for p in parts)
            seen += n
            continue
        seen += n
        target = max(least, seen // share)
        key = program_of(f)
        # past its share a batch ends with its program (see `program_of`), so one worker
        # reads all of a program's pass files; past twice its share it ends anyway
        if batch and (
            len(batch) >= MAX_FILES
            or held + n > 2 * target
            or (held + n > target and (key is None or key != program))
        ):
            yield batch
            batch, held = [], 0
        batch.append(f)
        held += n
        program = key
    if batch:
        yield batch


def program_of(path: str) -> tuple[str, str] | None:
    """Which program a file of an XLA dump belongs to, as far as its path says: the pass
    files of one module share a directory and their `module_NNNN` prefix. None for a file
    not named so (nothing says which files belong together)."""
    head, _, name = path.rpartition(os.sep)
    if not name.startswith("module_"):
        return None
    return head, name.split(".", 1)[0]
