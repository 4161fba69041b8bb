"""The streaming IR scanner: paths → FileReports (modules, meshes, sharded values, MD001).

    for report in scan_paths(["dump_dir/", "module.mlir.gz", "-"]):
        ...

A small file is read whole, a big one in 1 MiB blocks (`lines.py`). In each block the
scanner (`lines.scan_known`, native) walks the candidate lines and appends the ones already
read in the same module state to the module's value columns itself (the run's `ScanCache`
says which), and in a streamed file of new lines the plain constraint and op lines it would not
learn too, as values copied from their sharding's prototype (`lines.scan_plain`); it
hands every other candidate to `_line`: module structure and new lines, which are decoded
and read by the MLIR or HLO handlers (`linememo` learns the lines that only yield values).
Every path yields a FileReport, even when it cannot be read: the problem is an MD001
finding and the scan goes on with the next file.

What is remembered between lines and files lives in a `ScanCache` the caller makes once
per run and passes to every call (`cache=`); without one each call makes its own.
"""

from __future__ import annotations

import os
import stat
import sys
import zlib
from collections.abc import Callable, Container, Generator, Iterable, Iterator
from typing import BinaryIO

from meshdiag.ir import hlo, linememo, mlir
from meshdiag.ir.builder import Builder
from meshdiag.ir.fast import native
from meshdiag.ir.lines import (
    BLOCK,
    Bounded,
    check_utf8,
    decode_line,
    max_line_bytes,
    read_blocks,
    scan_known,
    scan_plain,
)
from meshdiag.ir.model import FileReport, ModuleReport
from meshdiag.ir.scancache import ScanCache

#: called with each module of a file as soon as it is complete (see `scan_path`)
OnModule = Callable[[ModuleReport], None] | None
#: shown each buffer of lines the scan reads before it scans them (a whole small file, or
#: a read of a streamed one: `lines.read_blocks`), for a caller that asks something of
#: every byte of the file without reading it again (`lint`'s search for collectives)
OnBlock = Callable[[bytes], None] | None

SNIFF = 8192
#: extensions that are never text IR
BINARY_EXT = (".pb", ".o", ".so", ".a", ".bin", ".npy", ".npz", ".pyc", ".png", ".jpg")
#: what a directory walk leaves out without a word: binaries, and the LLVM IR an XLA dump
#: holds next to its HLO (`--xla_dump_to` writes `.o` and `.ll` files for every kernel)
WALK_SKIPS = (*BINARY_EXT, ".ll")


def expand_paths(paths: Iterable[str], skipped: list[str] | None = None) -> Iterator[str]:
    """Files of each path: a file itself, a directory's regular files recursively in sorted
    order (like os.walk: a directory's files, then each subdirectory's; symlinked
    directories are not entered; FIFOs, sockets and devices are left out: reading one could
    block forever; `WALK_SKIPS` go to `skipped` when given), `-` for stdin. Missing paths
    are passed through (scan_path reports them); a file named on its own is always read.
    A path not among `paths` is one the walk found a regular file (`read_ahead` reads it
    without a stat first). Iterative: a tree thousands of levels deep needs no recursion."""
    for p in paths:
        if p != "-" and os.path.isdir(p):
            for path in _walk(p):
                if path.endswith(WALK_SKIPS):
                    if skipped is not None:
                        skipped.append(path)
                    continue
                yield path
        else:
            yield p


def _walk(top: str) -> Iterator[str]:
    stack = [top]
    while stack:
        root = stack.pop()
        try:
            with os.scandir(root) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue  # unreadable directory: os.walk skips it too
        subdirs = []
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    subdirs.append(e.path)
                elif e.is_file():
                    yield e.path
            except OSError:
                continue
        stack.extend(reversed(subdirs))


def scan_paths(paths: Iterable[str], cache: ScanCache | None = None) -> Iterator[FileReport]:
    """A FileReport per file of `paths`, all read with one `cache` (made here if None)."""
    cache = cache if cache is not None else ScanCache()
    for p in expand_paths(paths):
        yield scan_path(p, cache=cache)


def scan_path(
    path: str, on_module: OnModule = None, cache: ScanCache | None = None, on_block: OnBlock = None
) -> FileReport:
    """Open `path` (gzip by extension, `-` = stdin) and scan it; never raises on bad input.

    With `on_module`, each module goes to it as soon as it is complete (nothing after it
    can change it: the next module has started, or the file ended) and the report does not
    keep it: a big file is then held one module at a time."""
    return _drained(scan_steps(path, on_module, cache, on_block))


def scan_steps(
    path: str, on_module: OnModule = None, cache: ScanCache | None = None, on_block: OnBlock = None
) -> Generator[None, None, FileReport]:
    """`scan_path` a block at a time: the scan stops after each block it reads (a small
    file is one), so a caller reading two files side by side (`ir.module_stream`) takes
    modules from either as it needs them; the generator returns the report."""
    if path == "-":
        return (yield from _file_steps("<stdin>", sys.stdin.buffer, on_module, cache, on_block))
    try:
        if path.endswith(".gz"):
            import gzip  # (here: a millisecond of every run's start-up, for .gz input only)

            stream: BinaryIO = gzip.open(path, "rb")  # type: ignore[assignment]
        else:
            data, stream = _open(path)  # type: ignore[assignment]
            if data is not None:  # most dump files: one read, then scanned in memory
                return scan_bytes(path, data, on_module, cache, on_block)
    except OSError as e:
        b = Builder(path)
        b.problem(f"cannot read {path}: {e.strerror or e}", None)
        return b.finish()
    with stream:
        # a regular file too big to read whole: mostly new lines (`linememo.Sampling`)
        big = not path.endswith(".gz") and stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
        return (yield from _file_steps(path, stream, on_module, cache, on_block, probing=big))


def _drained(steps: Generator[None, None, FileReport]) -> FileReport:
    """What a scan's steps return, run to the end."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def read_small_file(path: str, walked: bool = False) -> bytes | None:
    """The bytes of a small regular file, which `scan_path` would scan in one piece
    (`scan_bytes`); None for anything else (stdin, gzip, big files, pipes) and for a file
    that cannot be opened (its scan says why). Only a regular file is opened: a named pipe
    opened here and closed would lose what its writer sent before the scan opens it. So the
    path is stat'ed first, unless `walked`: a directory walk (`expand_paths`) found it a
    regular file already (the open file is still stat'ed, and anything else let go). Read in
    C when built (`ir/fast/_files.c`: the same system calls without a Python call each),
    else by `read_small_file_py`, its twin."""
    if path == "-" or path.endswith(".gz"):
        return None
    if _native_read_small is not None:
        return _native_read_small(path, min(BLOCK, max_line_bytes()), walked)
    return read_small_file_py(path, walked)


def read_small_file_py(path: str, walked: bool = False) -> bytes | None:
    """`read_small_file` in Python: the reference for the native one."""
    if path == "-" or path.endswith(".gz"):
        return None
    try:
        if not walked:
            st = os.stat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_size > min(BLOCK, max_line_bytes()):
                return None
        data, stream = _open(path)
    except OSError:
        return None
    if stream is not None:
        stream.close()
    return data


#: what `read_ahead` reads before handing out the first of them, at most
AHEAD_FILES = 256
AHEAD_BYTES = 8 << 20


def read_ahead(
    paths: Iterable[str], named: Container[str] | None = None
) -> Iterator[tuple[str, bytes | None]]:
    """Each path with its bytes when it is a small regular file (`read_small_file`), else
    None (the scan opens it itself), read a group of files at a time: up to `AHEAD_FILES`
    files or `AHEAD_BYTES`. Each file read just before its scan, the cold bench's 39,519
    files took 0.5-0.8 s to open and read in a run; read in groups, 0.3 s (why was not
    measured: most likely the kernel's path and page-cache work staying in the CPU's
    caches across a group).

    `named`: the paths the user named, when `paths` are what `expand_paths` made of them:
    any other came from a directory walk, which found it a regular file, and is read
    without a stat first. None: every path is stat'ed first."""
    it = iter(paths)
    while True:
        group: list[tuple[str, bytes | None]] = []
        held = 0
        for p in it:
            data = read_small_file(p, named is not None and p not in named)
            group.append((p, data))
            held += len(data) if data is not None else 0
            if len(group) >= AHEAD_FILES or held >= AHEAD_BYTES:
                break
        if not group:
            return
        yield from group


def _open(path: str) -> tuple[bytes | None, BinaryIO | None]:
    """A small regular file's bytes (`_read_small`), else an unbuffered stream on it (the
    scanner reads big blocks itself: a buffer would only add a copy)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        data = _read_small(fd)
        if data is None:
            return None, open(fd, "rb", buffering=0)  # the stream owns `fd` from here
    except BaseException:
        os.close(fd)
        raise
    os.close(fd)
    return data, None


def scan_bytes(
    path: str,
    data: bytes,
    on_module: OnModule = None,
    cache: ScanCache | None = None,
    on_block: OnBlock = None,
) -> FileReport:
    """Scan a whole file already in memory (at most `max_line_bytes()`: no line in it can
    be too long to keep) as one block; the same report as `scan_file` on its bytes."""
    b = Builder(path, partitioned_hint=partitioned_by_name(path), on_module=on_module, cache=cache)
    b.on_block = on_block
    if _skipped(b, path, data):
        return b.finish()
    block = data if data.endswith(b"\n") else data + b"\n"
    _scan_block(b, block, 0, len(block), 1)
    if not block.isascii():
        check_utf8(block, 1, b.problem)
    return b.finish()


def _skipped(b: Builder, path: str, head: bytes) -> bool:
    """Empty and binary files are noted and not scanned (`head`: the file's first bytes,
    or more of them: only the first `SNIFF` are looked at)."""
    if not head:  # said, so every input is accounted for
        b.note(f"empty file skipped: {_name(path)}")
        b.report.skipped = "empty"
        return True
    if head.find(b"\0", 0, SNIFF) >= 0 or path.endswith(BINARY_EXT):
        b.note(f"binary file skipped: {_name(path)}")
        b.report.skipped = "binary"
        return True
    return False


def _read_small(fd: int) -> bytes | None:
    """A regular file of at most one block, read whole as it was when opened; None for
    anything else (pipes, devices, big files: streamed). Asking for one byte more than its
    size notices a file that grew meanwhile (and asks for no more memory than it needs)."""
    st = os.fstat(fd)
    size = st.st_size
    if not stat.S_ISREG(st.st_mode) or size > min(BLOCK, max_line_bytes()):
        return None
    data = os.read(fd, size + 1)
    while len(data) < size:  # a short read before the end (signals): read on
        more = os.read(fd, size + 1 - len(data))
        if not more:
            return data  # it shrank meanwhile: what is there
        data += more
    if len(data) > size:  # it grew meanwhile: stream it after all
        os.lseek(fd, 0, os.SEEK_SET)
        return None
    return data


def scan_file(
    path: str,
    stream: BinaryIO,
    on_module: OnModule = None,
    cache: ScanCache | None = None,
    on_block: OnBlock = None,
    *,
    probing: bool = False,
) -> FileReport:
    """Scan one open binary stream; `path` is what reports show. `probing`: its lines are
    mostly new (a big regular file): learned one in `linememo.PROBE` from the start."""
    return _drained(_file_steps(path, stream, on_module, cache, on_block, probing=probing))


def _file_steps(
    path: str,
    stream: BinaryIO,
    on_module: OnModule,
    cache: ScanCache | None,
    on_block: OnBlock,
    *,
    probing: bool = False,
) -> Generator[None, None, FileReport]:
    """`scan_file` a block at a time (`scan_steps`)."""
    b = Builder(path, partitioned_hint=partitioned_by_name(path), on_module=on_module, cache=cache)
    b.on_block = on_block
    try:
        head = stream.read(SNIFF)
        while head and len(head) < SNIFF:  # an unbuffered pipe may return less than asked
            more = stream.read(SNIFF - len(head))
            if not more:
                break
            head += more
    except (OSError, EOFError, zlib.error) as e:
        b.problem(f"cannot read {path}: {e}", None)
        return b.finish()
    if _skipped(b, path, head):
        return b.finish()
    yield from _stream_steps(b, path, stream, head, 1, probing)
    return b.finish()


def _scan_stream(
    b: Builder, path: str, stream, head: bytes, first_line: int, probing: bool
) -> None:
    """Scan the rest of `stream` (`head`: what was read of it already) a block at a time,
    learning new lines as `linememo.Sampling` says (the run's for `path`:
    `ScanCache.sampling`; made `probing` or learning)."""
    for _ in _stream_steps(b, path, stream, head, first_line, probing):
        pass


def _stream_steps(
    b: Builder, path: str, stream, head: bytes, first_line: int, probing: bool
) -> Iterator[None]:
    """`_scan_stream`, stopping after each block."""
    b.sampling = b.cache.sampling(path, lambda: linememo.Sampling(learning=not probing))
    try:
        blocks = read_blocks(stream, b.problem, prefix=head, first_line=first_line)
        block_at = next(blocks, None)
        while block_at is not None:
            lineno = _scan_block(b, *block_at)  # (buffer, start, end, first line)
            yield
            try:  # the scanner counted the block's lines: read_blocks need not
                block_at = blocks.send(lineno)
            except StopIteration:
                block_at = None
    except (OSError, EOFError, zlib.error) as e:  # truncated gzip, I/O error mid-file
        b.problem(f"cannot read {path} to the end: {e}", None)


def scan_part(
    path: str,
    start: int,
    stop: int,
    first_line: int,
    on_module: OnModule = None,
    cache: ScanCache | None = None,
    on_block: OnBlock = None,
) -> FileReport:
    """Scan one part of a big file (`ir.parts.FilePart`): its bytes from `start` to
    `stop`, its first line numbered `first_line`, as the whole file's scan reads them there
    (the file was sniffed when it was cut: a part is not checked for being binary)."""
    b = Builder(path, partitioned_hint=partitioned_by_name(path), on_module=on_module, cache=cache)
    b.on_block = on_block
    try:
        with open(path, "rb", buffering=0) as f:
            f.seek(start)
            _scan_stream(b, path, Bounded(f, stop - start), b"", first_line, True)
    except OSError as e:
        b.problem(f"cannot read {path}: {e.strerror or e}", None)
    return b.finish()


def _scan_block(b: Builder, block: bytes, pos: int, end: int, lineno: int) -> int:
    """The candidate lines of `block[pos:end]`, whole lines, the first numbered `lineno`;
    returns the number of the line after them."""
    if b.on_block is not None:
        b.on_block(block)
    lines_in = b.cache.lines
    sampling = b.sampling
    # the walker's output lists while there is no module (only lines known to yield nothing
    # are learned then: it appends nothing), and its memo inside a manual region (empty)
    unused: list = []
    nothing: dict = {}
    while True:
        # lines already read in this module state are appended to the module's value
        # columns by the walker itself; it stops at any other candidate
        m = b.module
        budget = 0
        prints = None
        if m is None:
            known, prints = lines_in(b.mesh_token, None)
            lines_out = items_out = unused
        elif b.manual:  # values inside a manual region need the builder
            known, lines_out, items_out = nothing, m.lines, m.items
        else:
            known, prints = lines_in(b.mesh_token, m.dialect)
            lines_out, items_out = m.lines, m.items
            if sampling is not None and m.dialect == "mlir":
                # plain constraint and op lines the line memo would not learn: read by the walker
                budget = sampling.unlearned()
        before = len(lines_out)
        if budget:
            protos = b.cache.protos(b.mesh_token)
            start, stop, lineno, pos, read = scan_plain(
                block, pos, lineno, known, lines_out, items_out, protos, budget, prints, end
            )
            sampling.skipped(read)  # type: ignore[union-attr]
            before += read
        else:
            start, stop, lineno, pos = scan_known(
                block, pos, lineno, known, lines_out, items_out, prints, end
            )
        if sampling is not None:
            sampling.replayed(len(lines_out) - before)
        if start < 0:
            return lineno
        raw = block[start:stop]
        if not linememo.read_plain(b, raw, lineno):
            _line(b, raw, lineno)
        lineno += 1


def _line(b: Builder, raw: bytes, lineno: int) -> None:
    """One candidate line the walker did not know."""
    if raw.isascii():
        # module structure in HLO text: read straight from the bytes
        if raw.startswith(b"HloModule "):
            hlo.header(b, raw, lineno)
            return
        if raw.startswith(b"ENTRY ") and b.module is not None and b.module.dialect == "hlo":
            hlo.entry(b, raw, lineno)
            return
        line = raw.decode("ascii")
    else:  # decoded here, so its UTF-8 problems are reported each time
        line = decode_line(raw, lineno, b.problem)
    b.raw = raw
    if line.startswith("HloModule "):
        hlo.handle(b, line, lineno)
    elif b.module is not None and b.module.dialect == "hlo":
        if line.startswith("// -----") or mlir.MODULE.match(line) and "{" in line:
            mlir.handle(b, line, lineno)
        else:
            hlo.handle(b, line, lineno)
    else:
        mlir.handle(b, line, lineno)


def partitioned_by_name(path: str) -> bool:
    """XLA dump files named after a pass that runs after SPMD partitioning."""
    name = os.path.basename(path)
    return "after_spmd-partitioning" in name or "after_optimizations" in name


_native_read_small = native("read_small")


def _name(path: str) -> str:
    """The file name of `path` as `pathlib` gives it (imported here: pathlib is 3 ms of
    every run's start-up, and only an empty or binary file needs it)."""
    from pathlib import Path

    return Path(path).name
