"""Files handed on a batch at a time: a worker scans several files, holding the modules of
each as they end, then hands them on, file by file in order, to what writes or folds each
file (its `FileSink`).

Scanning a file, then writing or folding it, then scanning the next turned the processor's
caches over between the scanner and the writers at every file (a dump's files are small: a
module or two each); a batch at a time keeps each side's code and tables in them (the cold
bench's dumps, one core, alternating runs of one tree, files handed on one at a time
against 32: `inspect` 4–6% and `--format json` 5% less).
A batch is bounded by its files, by the modules it holds and by their column entries: a big
file's modules go on a few at a time, so memory stays flat in its size (a module's parsed
shardings may be big: 1,500 modules of lists of 2,048 devices held to the end of their file
peaked at 237 MB).

    batch = FileBatch()
    for path in paths:
        each = batch.start(lambda: Sink(path))  # made when the batch first hands it on
        done = scan(path, each)
        batch.end(done)
    batch.flush()
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from meshdiag.ir.model import ModuleReport

#: files a batch holds, at most, modules it holds, and their column entries
BATCH_FILES = 32
BATCH_MODULES = 32
BATCH_ENTRIES = 1 << 15


class FileSink(Protocol):
    """What one file's modules go to, in order, and then what its scan gave (`end`)."""

    def module(self, m: ModuleReport) -> None: ...

    def end(self, done) -> None: ...


class FileBatch:
    """The files of a batch, each started (`start`), its modules held as they end, then
    ended (`end`) with what its scan gave; handed on in order when `BATCH_FILES` files have
    ended, when `BATCH_MODULES` modules or `BATCH_ENTRIES` column entries are held, and at
    `flush`."""

    __slots__ = ("_files", "_held", "_modules", "_entries", "_ended", "_add")

    def __init__(self) -> None:
        #: per file: what makes its sink, the sink once made, its modules not handed on
        #: yet, and what its scan gave once it has ended (_OPEN before)
        self._files: list[list] = []
        self._held: list[ModuleReport] = []  # the last file's modules not handed on
        self._modules = 0
        self._entries = 0
        self._ended = 0
        self._add = self._module  # (one bound method for every file: files come in turn)

    def start(self, make: Callable[[], FileSink]) -> Callable[[ModuleReport], None]:
        """A file starts: `make()` makes its sink when the batch first hands it on (after
        the files before it: a sink may write as it is made). Returns what to give each of
        the file's modules as it ends (until the next file starts)."""
        self._held = held = []
        self._files.append([make, None, held, _OPEN])
        return self._add

    def _module(self, m: ModuleReport) -> None:
        self._held.append(m)
        self._modules += 1
        self._entries += len(m.items)
        if self._modules >= BATCH_MODULES or self._entries >= BATCH_ENTRIES:
            self.flush()

    def end(self, done) -> None:
        """The file last started has ended: `done` is what its scan gave."""
        self._files[-1][3] = done
        self._ended += 1
        if self._ended >= BATCH_FILES:
            self.flush()

    def flush(self) -> None:
        """Hand on what the batch holds, file by file in order (a file not ended yet keeps
        its place, its modules so far handed on)."""
        for f in self._files:
            make, sink, held, done = f
            if sink is None:
                sink = f[1] = make()
            for m in held:
                sink.module(m)
            held.clear()
            if done is not _OPEN:
                sink.end(done)
        self._files = [f for f in self._files if f[3] is _OPEN]
        self._modules = self._entries = self._ended = 0


#: a file whose scan has not ended (what a scan gives may be None)
_OPEN = object()
