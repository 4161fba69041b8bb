"""Small input files read with a size bound, output files written whole or not at all.

Inputs named by options (a baseline, a config, a mesh file, per-device specs) are small:
`read_small` refuses anything that is not a regular file (`/dev/zero`, a FIFO, a directory)
and anything over a size limit before reading, so no option makes meshdiag read without end.

Outputs (`-o`, `--write-baseline`, `--svg`, `--html`) are written to a temporary file in the
same directory and renamed over the target only once complete (`atomic_writer`): a full disk
or a crash leaves the old file as it was, and concurrent writers leave one whole file, never a
mix. Targets that are not regular files (`/dev/stdout`, a FIFO) are written directly.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, TypeVar

from meshdiag.cleanup import signals_deferred
from meshdiag.errors import MeshdiagError

#: the largest input file an option may name (baselines of big projects stay far below)
MAX_INPUT_BYTES = 64 << 20

T = TypeVar("T")


def describe_os_error(e: OSError) -> str:
    """What went wrong, in words (a symlink loop is not 'no such file')."""
    if e.errno == errno.ELOOP:
        return "too many levels of symbolic links (a symlink loop?)"
    return e.strerror or str(e)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_small(path: str, what: str, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the regular file at `path`; a MeshdiagError naming `what` if it is
    missing, not a regular file or bigger than `limit` bytes."""
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once (then refused below)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        if os.path.islink(path):
            raise MeshdiagError(f"{what} {path} is a broken symbolic link") from None
        raise MeshdiagError(f"{what} {path} does not exist") from None
    except OSError as e:
        raise MeshdiagError(f"cannot read {what} {path}: {describe_os_error(e)}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise MeshdiagError(f"{what} {path} is {_kind(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise MeshdiagError(
                f"{what} {path} is {st.st_size} bytes, more than the limit of {limit}"
            )
        chunks = []
        size = 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:  # it grew while being read
                raise MeshdiagError(f"{what} {path} is more than the limit of {limit} bytes")
        return b"".join(chunks)
    except OSError as e:
        raise MeshdiagError(f"cannot read {what} {path}: {describe_os_error(e)}") from None
    finally:
        os.close(fd)


def decode_utf8(data: bytes, path: str, what: str) -> str:
    """`data` as text, or a MeshdiagError saying where the first invalid byte is."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise MeshdiagError(
            f"{what} {path} is not UTF-8: byte 0x{data[e.start]:02x} at line {line} column {column}"
        ) from None


def read_text(path: str, what: str, limit: int = MAX_INPUT_BYTES) -> str:
    """`read_small` decoded as UTF-8."""
    return decode_utf8(read_small(path, what, limit), path, what)


def parse_nested(loads: Callable[[str], T], text: str, what: str) -> T:
    """`loads(text)` (json.loads, tomllib.loads), with nesting too deep for the parser's
    recursion reported as an error in `what` instead of a RecursionError."""
    try:
        return loads(text)
    except RecursionError:
        raise MeshdiagError(f"{what} is nested too deeply to read") from None


# -- output ------------------------------------------------------------------------------


def _target(path: str) -> str:
    """The file a write to `path` lands in (through symlinks)."""
    return os.path.realpath(path) if os.path.islink(path) else path


def _mode_for(target: str) -> int:
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@contextmanager
def atomic_writer(path: str, what: str, *, binary: bool = False) -> Iterator[IO]:
    """A file handle whose contents replace `path` only when the block ends without error.

    Any OSError (full disk, no permission, a missing directory) is a MeshdiagError naming
    `what`, and `path` keeps its old contents; so does an exception from the block."""
    target = _target(path)
    try:
        st = os.stat(target)
    except OSError:
        st = None
    # file names that are not UTF-8 (surrogate escapes) are written as the bytes they are
    text = {} if binary else {"encoding": "utf-8", "newline": "\n", "errors": "surrogateescape"}
    if st is not None and not stat.S_ISREG(st.st_mode):  # /dev/stdout, a FIFO: stream
        try:
            with open(target, "wb" if binary else "w", **text) as fh:
                yield fh
        except OSError as e:
            raise MeshdiagError(f"cannot write {what} {path}: {describe_os_error(e)}") from None
        return
    directory = os.path.dirname(os.path.abspath(target))
    import tempfile  # (4 ms of every run's start-up, for a run that writes a file)

    try:
        fd, tmp = tempfile.mkstemp(
            prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=directory
        )
    except OSError as e:
        raise MeshdiagError(f"cannot write {what} {path}: {describe_os_error(e)}") from None
    done = False
    try:
        with open(fd, "wb" if binary else "w", **text) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())  # on disk before it takes the old file's place
        os.chmod(tmp, _mode_for(target))
        os.replace(tmp, target)
        done = True
    except OSError as e:
        raise MeshdiagError(f"cannot write {what} {path}: {describe_os_error(e)}") from None
    finally:
        if not done:
            with signals_deferred():  # a stop signal now would leave the temporary file
                try:
                    os.unlink(tmp)
                except OSError:
                    pass


def write_atomic(path: str, data: str | bytes, what: str) -> None:
    """Replace `path` with `data` whole (see `atomic_writer`)."""
    with atomic_writer(path, what, binary=isinstance(data, bytes)) as fh:
        fh.write(data)


def same_file(a: str, b: str) -> bool:
    """Whether two paths name one existing file."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False
