"""How the `meshdiag` process runs and ends, measured on cold dumps (issue 15):

- `tune_gc`: what is imported before the command runs is frozen out of the garbage
  collector's walks, and a young collection waits for a million allocations instead of
  700: a scan allocates millions of small objects that are almost never cyclic, and the
  default collector walked them over and over (about a fifth of a big file's run). At
  100,000, `inspect -j1` of the cold bench's dumps still made four collections, each
  walking what the run's memos hold since (0.067 s of 3 s); at a million it makes none,
  with the same peak memory.
- `single_threaded_blas`: numpy's BLAS (OpenBLAS) starts threads when numpy is imported,
  and they spin a while before they sleep; a worker importing numpy on a machine whose
  cores the workers fill lost them to those threads (the real Shardy passes' `lint` on two
  cores: 0.86 s, 0.79 s with one BLAS thread). meshdiag does no linear algebra worth a
  thread: the command runs with one, unless the user set a number.
- `exit_now`: once the command is done and its output flushed, the process ends without
  freeing what the run still holds (memos, the last module): an exit that only returns
  memory to a process about to vanish. Only for the command-line process itself, never
  for `main()` called in-process (tests, embedding), nor under a profiler or tracer
  (`python -m cProfile`, coverage: they write their results at the normal exit); every
  file a command writes is closed by its own `with` block before it returns.
"""

from __future__ import annotations

import gc
import os
import sys

#: allocations between two young collections (the default is 700)
YOUNG = 1_000_000


def tune_gc() -> None:
    gc.freeze()
    _, g1, g2 = gc.get_threshold()
    gc.set_threshold(YOUNG, g1, g2)


#: the variables that set how many threads numpy's BLAS (and OpenMP under it) starts
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def single_threaded_blas() -> None:
    """One BLAS thread for this process and its workers, where the user set none (before
    numpy is imported: it reads them once)."""
    for name in BLAS_THREADS:
        os.environ.setdefault(name, "1")


def exit_now(code: object) -> None:
    """End the process with `code` (a SystemExit code) after flushing stdout and stderr;
    returns (and the caller exits normally) when a flush fails or the code is not a
    number: the normal exit then reports it."""
    if code is None:
        code = 0
    if not isinstance(code, int):
        return
    if sys.getprofile() is not None or sys.gettrace() is not None:
        return  # a profiler or coverage writes its results at the normal exit
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return
    os._exit(code)
