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
(tests/test_file_parts.py compares them).
"""

from __future__ import annotations

import os
from typing import NamedTuple

from meshdiag.ir.mlir import SECTION, module_header
from meshdiag.ir.scan import BINARY_EXT, SNIFF

#: files smaller than this are read by one worker
SPLIT_BYTES = 32 << 20
#: parts are at least this big (each is a task with its own spooled output)
PART_BYTES = 16 << 20
#: parts per worker, at most: enough to keep every worker busy to the end
PARTS_PER_WORKER = 2
#: a line `}`, then a `// -----` line: where a cut may be (checked further by `_opens`)
_MARK = b"\n}\n// -----"
#: bytes read at a time while looking for cuts
_CHUNK = 8 << 20
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
        cuts = _cuts(fd, size, [size * k // n for k in range(1, n)])
    except OSError:
        return None
    finally:
        os.close(fd)
    if not cuts:
        return None
    starts = [(0, 1), *cuts]
    stops = [c[0] for c in cuts] + [size]
    return [
        FilePart(path, start, stop, line, k, len(starts))
        for k, ((start, line), stop) in enumerate(zip(starts, stops, strict=True))
    ]


def _cuts(fd: int, size: int, targets: list[int]) -> list[tuple[int, int]]:
    """(offset, line number) of the first cut at or after each target offset, each cut
    once, in order. A target gives up after `TRIES` marks that are no place to cut (each
    costs a read: a file of nothing but such marks is not read a few bytes at a time)."""
    out: list[tuple[int, int]] = []
    it = iter(targets)
    target = next(it, None)
    tries = 0
    for offset, line in _marks(fd, size):
        if target is None:
            break
        if offset < target:
            continue
        if not _opens(fd, offset):
            tries += 1
            if tries >= TRIES:  # no cut near this target: on to the next
                while target is not None and target <= offset:
                    target = next(it, None)
                tries = 0
            continue
        out.append((offset, line))
        while target is not None and target <= offset:
            target = next(it, None)
        tries = 0
    return out


def _marks(fd: int, size: int):
    """(offset, line number) of every `// -----` line after a line `}`, in order, reading
    the file a chunk at a time (never whole)."""
    keep = len(_MARK) - 1  # a mark across two chunks is found in the second
    carry = b""
    pos = 0  # file offset of the chunk
    newlines = 0  # newlines before the chunk
    while pos < size:
        chunk = os.pread(fd, min(_CHUNK, size - pos), pos)
        if not chunk:
            break
        buf = carry + chunk
        base = pos - len(carry)  # file offset of buf
        before = newlines - carry.count(b"\n")  # newlines before buf
        counted = 0  # newlines of buf before `counted_to`
        counted_to = 0
        i = buf.find(_MARK)
        while i >= 0:
            line_start = i + 3  # the `// -----` line, after "\n}\n"
            counted += buf.count(b"\n", counted_to, line_start)
            counted_to = line_start
            yield base + line_start, before + counted + 1
            i = buf.find(_MARK, i + 1)
        newlines += chunk.count(b"\n")
        pos += len(chunk)
        carry = buf[-keep:]


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
