"""One big MLIR file read by several workers at once, in parts cut between its modules.

A file of many top-level modules (a JAX program's modules lowered one after another, an
`mlir-print-ir-after-all` dump) is as much work as a directory of files, but one file went
to one worker: the 252 MB file of the cold bench took as long on two cores as on one. Its
parts go to the workers like the files of a directory, and `inspect` and `lint` put their
outputs back together in order.

Where a part may start: the scanners carry nothing from one top-level module to the next
but the section title (`ir.builder.Builder`, `comms.scan._Scan`: each module starts
afresh), and a `// -----` line sets that afresh: a
plain one clears it, a pass dump's `// -----// IR Dump After X //----- //` names it. So a
cut is made only at such a line that follows the line `}` closing a module and comes right
before the line opening the next one: nothing in between (a diagnostic would attach to the
module before it), and from there a scan reads the same modules as the whole file's scan
(tests/test_file_parts.py compares them). A file with no `// -----` line at all has no
section anywhere (files of modules put together with `cat`): there a cut is made right at
a line opening a module after the line `}`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import NamedTuple

from meshdiag.errors import MeshdiagError
from meshdiag.fileio import describe_os_error
from meshdiag.ir.fast import native
from meshdiag.ir.mlir import SECTION, module_header
from meshdiag.ir.scan import BINARY_EXT, SNIFF

#: files smaller than this are read by one worker (the Shardy passes of the cold bench in
#: one 11.5 MB file took 2.2 s to `inspect` in one worker, 1.6 s in four parts on two)
SPLIT_BYTES = 8 << 20
#: parts are at least this big (each is a task with its own spooled output)
PART_BYTES = 2 << 20
#: parts per worker, at most: enough to keep every worker busy to the end
PARTS_PER_WORKER = 2
#: a line `}`, then a `// -----` line: where a cut may be (checked further by `_opens`)
_MARK = b"\n}\n// -----"
#: in a file without `// -----` lines, a line `}` then a line opening a module
_BARE_MARK = b"\n}\nmodule"
#: what says a file has sections (or plain splits): then only `_MARK` is a place to cut
_SPLIT = b"// -----"
#: bytes read at a time while looking for a word or a cut
_CHUNK = 8 << 20
#: bytes first read from a target while looking for a cut (doubled up to `_CHUNK` for the
#: next reads): a module is mostly far smaller, and three 8 MB reads were 10 ms of the
#: 252 MB bench file's start, before any worker starts
_FIRST_CHUNK = 256 << 10
#: bytes counted at a time (a buffer that stays in the cache: 8 MB ones counted 63 MB of
#: the bench file in 14 ms, 1 MB ones in 11)
_COUNT_CHUNK = 1 << 20
#: bytes read at a cut to check the marker line and the module line after it
_LOOK = 4096
#: marks looked at for one cut, at most (see `_cuts`)
TRIES = 64


class FilePart(NamedTuple):
    """Bytes `start` to `stop` of `path`: whole lines, the first of them line `line`, the
    part `index` of `count`."""

    path: str
    start: int
    stop: int
    line: int
    index: int
    count: int

    @property
    def last(self) -> bool:
        return self.index == self.count - 1


def split_file(path: str, size: int, jobs: int) -> list[FilePart] | None:
    """The parts of the MLIR file `path` (`size` bytes) for `jobs` workers, each about as
    big; None when it is read whole: small, compressed, stdin, or with no place to cut."""
    parts = file_parts(path, size, jobs)
    return None if parts is None else list(parts)


class Parts:
    """A file's parts, each numbered with its first line as it is taken: the places to cut
    are found at once (a few reads around each target), the lines before each counted only
    when the part is asked for, so the first parts go to the workers while this process
    counts on (the parent counted three quarters of the 252 MB bench file, 0.04 s, before
    any worker started)."""

    def __init__(self, path: str, size: int, cuts: list[int]) -> None:
        self.path = path
        self.size = size
        self.cuts = cuts

    def __len__(self) -> int:
        return len(self.cuts) + 1

    def __iter__(self) -> Iterator[FilePart]:
        count = len(self)
        starts = [0, *self.cuts]
        stops = [*self.cuts, self.size]
        line = 1
        fd = None
        try:
            for k, (start, stop) in enumerate(zip(starts, stops, strict=True)):
                if k:
                    try:
                        if fd is None:
                            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
                        line += _newlines(fd, starts[k - 1], start)
                    except OSError as e:  # (gone or unreadable since it was cut)
                        raise MeshdiagError(
                            f"cannot read {self.path}: {describe_os_error(e)}"
                        ) from None
                yield FilePart(self.path, start, stop, line, k, count)
        finally:
            if fd is not None:
                os.close(fd)


def file_parts(path: str, size: int, jobs: int) -> Parts | None:
    """`split_file`'s parts as they are taken (`Parts`); None when the file is read whole."""
    if size < SPLIT_BYTES or jobs < 2 or path == "-" or path.endswith(".gz"):
        return None
    n = min(jobs * PARTS_PER_WORKER, size // PART_BYTES)
    if n < 2:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None  # the scan says why it cannot be read
    try:
        if path.endswith(BINARY_EXT) or b"\0" in os.pread(fd, SNIFF, 0):
            return None  # skipped as binary, whole
        mark = _BARE_MARK if not _holds(fd, size, _SPLIT) else _MARK
        cuts = _cuts(fd, size, [size * k // n for k in range(1, n)], mark)
    except OSError:
        return None
    finally:
        os.close(fd)
    return Parts(path, size, cuts) if cuts else None


def _chunks(fd: int, size: int, pos: int, keep: int) -> Iterator[tuple[int, bytes]]:
    """(offset, bytes) of the file from `pos` on, a chunk at a time, each read overlapping
    the one before by `keep` bytes (a word of `keep + 1` bytes across two is found in the
    second): a first small one (`_FIRST_CHUNK`: what is looked for is mostly near), doubled
    up to `_CHUNK`, never shorter than the word but at the file's end (a shorter one could
    never hold it, and the next would start past it)."""
    want = max(_FIRST_CHUNK, keep + 1)
    while pos < size:
        chunk = os.pread(fd, min(want, size - pos), pos)
        if not chunk:
            return
        yield pos, chunk
        if pos + len(chunk) >= size:
            return
        pos += max(len(chunk) - keep, 1)
        want = max(min(want * 2, _CHUNK), keep + 1)


def _holds(fd: int, size: int, word: bytes) -> bool:
    """Whether the file has `word` anywhere (`_chunks`: a file of sections has one by its
    first module's end, and reading a first 8 MB was 8 ms of the 252 MB bench file's start,
    before any worker starts)."""
    return any(word in chunk for _, chunk in _chunks(fd, size, 0, len(word) - 1))


def _cuts(fd: int, size: int, targets: list[int], mark: bytes) -> list[int]:
    """The offset of the first cut at or after each target offset, each cut once, in
    order. The marks are looked for from each target on, not from the start (`_cut_from`;
    the 252 MB bench file: 0.26-0.34 s walking every mark from the start, in the parent
    before any worker starts; 0.1 s so, and the lines counted between cuts by `Parts`)."""
    out: list[int] = []
    searched = 0  # where the search for the last target stopped
    for target in targets:
        if target < searched:
            continue  # the search for an earlier target went past this one
        cut, searched = _cut_from(fd, size, target, mark)
        if cut < 0:
            if searched >= size:
                break
            continue
        out.append(cut)
    return out


def _cut_from(fd: int, size: int, start: int, mark: bytes = _MARK) -> tuple[int, int]:
    """(offset of the first place to cut at or after `start`, offset after it): a `// -----`
    line after a line `}` (`_MARK`) that `_opens`, or with `_BARE_MARK` a line opening a
    module after a line `}`; (-1, offset reached) when none is, in the file or in `TRIES`
    marks (each costs a read: a file of nothing but such marks is not read a few bytes at
    a time)."""
    opens = _opens if mark is _MARK else _opens_module
    tries = 0
    # (a mark's line starts 3 bytes after it, after "\n}\n")
    for pos, chunk in _chunks(fd, size, max(start - 3, 0), len(mark) - 1):
        i = chunk.find(mark)
        while i >= 0:
            offset = pos + i + 3
            if offset >= start:
                if opens(fd, offset):
                    return offset, offset + 1
                tries += 1
                if tries >= TRIES:  # no cut near this target: on to the next
                    return -1, offset + 1
            i = chunk.find(mark, i + 1)
    return -1, size


def _newlines(fd: int, start: int, stop: int) -> int:
    """The newlines in bytes `start` to `stop` of the file, read a chunk at a time into one
    buffer (counting three quarters of the 252 MB bench file took 0.12 s with a new bytes
    object a chunk and `bytes.count`, 0.04 s so)."""
    buf = memoryview(bytearray(min(_COUNT_CHUNK, max(stop - start, 0))))
    count = 0
    while start < stop:
        got = _read_into(fd, buf[: min(len(buf), stop - start)], start)
        if not got:
            break
        count += count_lines(buf[:got])
        start += got
    return count


def _read_into(fd: int, buf: memoryview, offset: int) -> int:
    """`os.preadv` into `buf` where there is one, else a read and a copy: bytes read."""
    if hasattr(os, "preadv"):
        return os.preadv(fd, [buf], offset)
    data = os.pread(fd, len(buf), offset)
    buf[: len(data)] = data
    return len(data)


def count_lines_py(buf: memoryview) -> int:
    """The newline bytes in `buf`: the reference for the native `count_lines`."""
    return buf.tobytes().count(b"\n")


#: the native count when built (16 bytes at a time: 4x `bytes.count`), else its twin
count_lines: Callable[[memoryview], int] = native("count_lines") or count_lines_py


def _opens_module(fd: int, offset: int) -> bool:
    """Whether the line at `offset` opens a top-level module (a file without sections)."""
    line = os.pread(fd, _LOOK, offset).split(b"\n", 1)[0]
    try:
        opening = line.decode("ascii")
    except UnicodeDecodeError:
        return False
    return opening.startswith("module") and module_header(opening) is not None


def _opens(fd: int, offset: int) -> bool:
    """Whether the `// -----` line at `offset` sets the section afresh (a plain split or a
    section header) and the line after it opens a top-level module."""
    head = os.pread(fd, _LOOK, offset)
    lines = head.split(b"\n", 2)
    if len(lines) < 3:  # both lines whole, or not a place to cut
        return False
    try:
        mark, opening = lines[0].decode("ascii"), lines[1].decode("ascii")
    except UnicodeDecodeError:
        return False
    if mark.rstrip() != "// -----" and not SECTION.match(mark):
        return False
    # at column 0: a module opens here whatever came before (`mlir.handle`)
    return opening.startswith(("module", "builtin.module")) and module_header(opening) is not None
