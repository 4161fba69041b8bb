"""Ordered output from worker processes, without pickling it through a pipe.

`inspect --format json` over a big dump directory writes hundreds of MB; sending each
file's output back as a pickled result costs a copy into the pickle, two through the pipe,
one out of it and the parent's time under the GIL. Instead each worker appends its outputs
to a spool file of its own and returns only where they are (`Spooled`); the parent copies
them to its output in order with `os.sendfile` (in the kernel) and deletes a spool file as
soon as it has read past it.

    with SpoolDir() as spool:                        # parent: a private temporary directory
        results = map_files(fn, files, jobs, spool.worker_init, ())
        try:
            for spooled in results: spool.copy(spooled, out)
        finally:
            results.close()                          # the workers stop before the spool goes

Workers write in task order and the parent reads results in task order, so once a result
names a worker's next spool file, everything in the previous one has been copied: spool
files are rotated every `ROTATE` bytes and disk use stays bounded by the work in flight.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import BinaryIO, NamedTuple

from meshdiag.cleanup import signals_deferred

#: a worker starts a new spool file after this many bytes
ROTATE = 32 << 20


class Spooled(NamedTuple):
    """Where a worker put one output: spool file, offset, length."""

    path: str
    offset: int
    length: int


class _Writer:
    """The worker side: appends to its own spool file in `directory` (or the directory
    `directory()` makes when first asked: a serial run's, `SpoolDir.serial`), rotating."""

    def __init__(self, directory: str | Callable[[], str]) -> None:
        self.directory = directory
        self.serial = 0
        self.fd = -1
        self.path = ""
        self.size = 0

    def write(self, data: bytes) -> Spooled:
        start = self.begin()
        self.append(data)
        return Spooled(self.path, start, len(data))

    def _rotate(self) -> None:
        self.close()
        self.serial += 1
        d = self.directory if isinstance(self.directory, str) else self.directory()
        self.path = os.path.join(d, f"{os.getpid()}.{self.serial}")
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        self.size = 0

    def begin(self) -> int:
        """Start one output written in pieces (`SpoolStream`): it stays in one spool file."""
        if self.fd < 0 or self.size >= ROTATE:
            self._rotate()
        return self.size

    def append(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]
        self.size += len(data)

    def append_all(self, parts: list[bytes]) -> None:
        """`append` of the parts one after another, in one system call where it can."""
        self.size += write_all(self.fd, parts)

    def close(self) -> None:
        """Close the spool file being written (the next output opens a new one)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


#: buffers one `os.writev` call takes at most (POSIX guarantees 16; Linux takes 1024)
IOV_MAX = 1024


def write_all(fd: int, parts: list[bytes]) -> int:
    """Write `parts` to `fd` one after another, gathered by `os.writev` (no copy of them
    joined: a big file's JSON, 340 MB of the bench file, was copied once more that way);
    returns how many bytes. Joined and written where there is no `writev`."""
    total = sum(map(len, parts))
    if not hasattr(os, "writev"):
        view = memoryview(b"".join(parts))
        while view:
            view = view[os.write(fd, view) :]
        return total
    pending = [memoryview(p) for p in parts if p]
    i = 0  # the first buffer not yet written whole
    while i < len(pending):
        n = os.writev(fd, pending[i : i + IOV_MAX])
        while n:  # past what was written: whole buffers, then the start of the next
            if n >= len(pending[i]):
                n -= len(pending[i])
                i += 1
            else:
                pending[i] = pending[i][n:]
                n = 0
    return total


class SpoolStream:
    """One output appended piece by piece (a big file's modules as they are rendered), so
    it never has to be whole in memory; `done()` says where it is, like `spool_write`.
    Pieces are gathered up to `BUFFER` bytes per write to the file."""

    BUFFER = 1 << 20

    def __init__(self) -> None:
        assert _WRITER is not None, "SpoolStream outside a spooling worker"
        self._writer = _WRITER
        self._start = _WRITER.begin()
        self._path = _WRITER.path
        self._parts: list[bytes] = []
        self._size = 0

    def write(self, data: bytes) -> None:
        self._parts.append(data)
        self._size += len(data)
        if self._size >= self.BUFFER:
            self._flush()

    def _flush(self) -> None:
        self._writer.append_all(self._parts)
        self._parts = []
        self._size = 0

    def done(self) -> Spooled:
        self._flush()
        return Spooled(self._path, self._start, self._writer.size - self._start)


class _Direct:
    """A serial run's writer (`SpoolDir.direct`): each output goes straight to the run's
    own output as it is written, `sep` between outputs; the parent has nothing to copy
    (`Spooled` with no path). A serial run makes each output after the one before is out,
    so the order holds; spooled, a big file's JSON (330 MB of the 252 MB bench file) went
    whole to a temporary file first, then was copied (a sixth of the run, and as much
    disk)."""

    path = ""
    size = 0

    def __init__(self, out: BinaryIO, sep: bytes) -> None:
        self.out = out
        self.sep = sep
        self.started = False

    def begin(self) -> int:
        if self.started:
            self.out.write(self.sep)
        self.started = True
        return 0

    def append(self, data: bytes) -> None:
        self.out.write(data)

    def append_all(self, parts: list[bytes]) -> None:
        """`append` of the parts one after another: gathered straight to the output's file
        (`write_all`, after what is buffered), joined where it has none."""
        try:
            fd = self.out.fileno()
        except (AttributeError, OSError, ValueError):  # not a file: captured output
            self.out.write(b"".join(parts))
            return
        self.out.flush()
        write_all(fd, parts)

    def write(self, data: bytes) -> Spooled:
        self.begin()
        self.append(data)
        return Spooled("", 0, 0)


_WRITER: _Writer | _Direct | None = None


def spool_write(data: bytes) -> Spooled:
    """Append `data` to this worker's spool (after `SpoolDir.worker_init` ran here)."""
    assert _WRITER is not None, "spool_write outside a spooling worker"
    return _WRITER.write(data)


def _init_writer(directory: str | None) -> None:
    """This worker's spool in `directory`; None: a serial run's, whose writer
    `SpoolDir.direct` or `SpoolDir.serial` set."""
    global _WRITER
    if directory is not None:
        _WRITER = _Writer(directory)


def _copy_through(fd: int, offset: int, length: int, out: BinaryIO) -> None:
    """Copy `length` bytes at `offset` of `fd` to `out` in bounded pieces."""
    while length > 0:
        data = os.pread(fd, min(length, 1 << 20), offset)
        if not data:
            break
        out.write(data)
        offset += len(data)
        length -= len(data)


class SpoolDir:
    """The parent side: a private temporary directory for the workers' spool files, made
    when first asked (`directory`), and the in-order copy out of them."""

    def __init__(self) -> None:
        self._directory: str | None = None
        self.is_direct = False  # outputs written straight to the run's output (`direct`)
        self._writes = False  # this process's writer is this spool's (`direct`, `serial`)
        self._fds: dict[str, int] = {}
        #: the spool file each worker (by pid in the file name) was last read from
        self._current: dict[str, str] = {}

    @property
    def directory(self) -> str:
        """The directory, made now if it was not: a serial run that writes its outputs
        directly (`direct`) makes none. Making it, with `tempfile` and `shutil` imported
        for it, was 9 ms of every run."""
        if self._directory is None:
            import tempfile

            with signals_deferred():  # (made and named here, or not made)
                self._directory = tempfile.mkdtemp(prefix="meshdiag-spool-")
        return self._directory

    @property
    def init_args(self) -> tuple[str]:
        return (self.directory,)

    worker_init = staticmethod(_init_writer)

    def direct(self, out: BinaryIO, sep: bytes) -> None:
        """Make this serial run's outputs go straight to `out` (`_Direct`), `sep` between
        them: its worker state then names no spool directory, and `copy` has nothing to
        do."""
        global _WRITER
        _WRITER = _Direct(out, sep)
        self.is_direct = self._writes = True

    def serial(self) -> None:
        """Make this serial run's outputs (its worker is this process) spool into
        `directory`, made when the first of them is spooled: its worker state then names
        no directory."""
        global _WRITER
        _WRITER = _Writer(lambda: self.directory)
        self._writes = True

    def copy(self, s: Spooled, out: BinaryIO) -> None:
        """Write the spooled bytes to `out` (sendfile when `out` is a real file); nothing
        for an output written directly."""
        if not s.path:
            return
        fd = self._open(s.path)
        try:
            out_fd = out.fileno()
        except (AttributeError, OSError, ValueError):  # not a file: captured output
            out_fd = -1
        if out_fd >= 0 and hasattr(os, "sendfile"):
            out.flush()
            offset, left = s.offset, s.length
            try:
                while left:
                    n = os.sendfile(out_fd, fd, offset, left)
                    if n == 0:
                        break
                    offset += n
                    left -= n
                if not left:
                    return
            except OSError:  # sendfile cannot write there: copy through memory
                pass
            _copy_through(fd, offset, left, out)
            return
        _copy_through(fd, s.offset, s.length, out)

    def read(self, s: Spooled) -> bytes:
        return os.pread(self._open(s.path), s.length, s.offset)

    def _open(self, path: str) -> int:
        fd = self._fds.get(path)
        if fd is None:
            worker = os.path.basename(path).split(".", 1)[0]
            previous = self._current.get(worker)
            if previous is not None:  # read past it: everything in it was copied
                os.close(self._fds.pop(previous))
                os.unlink(previous)
            self._current[worker] = path
            fd = self._fds[path] = os.open(path, os.O_RDONLY)
        return fd

    def close(self) -> None:
        global _WRITER
        if self._writes:
            if isinstance(_WRITER, _Writer):
                _WRITER.close()  # (a serial run's: its last spool file)
            _WRITER = None
        with signals_deferred():  # nothing left behind in TMPDIR, whatever comes now
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()
            if self._directory is not None:
                import shutil

                shutil.rmtree(self._directory, ignore_errors=True)

    def __enter__(self) -> SpoolDir:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
