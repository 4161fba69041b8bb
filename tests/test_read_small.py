"""A small regular file read whole: the native `read_small` (`ir/fast/_files.c`) against its
twin `ir.scan.read_small_file_py`, on every kind of path a dump walk or a user can give."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshdiag.ir import scan
from meshdiag.ir.fast import _fastscan

native = _fastscan.read_small


def both(path: str) -> tuple:
    """What `read_small_file` (native when built) and its twin give for `path`."""
    return scan.read_small_file(path), scan.read_small_file_py(path)


def test_the_scan_reads_through_the_native_one(monkeypatch):
    assert scan._native_read_small is native
    called = []
    monkeypatch.setattr(scan, "_native_read_small", lambda *a: called.append(a) or b"x")
    assert scan.read_small_file("a.txt") == b"x"
    assert scan.read_small_file("b.txt", walked=True) == b"x"
    limit = min(scan.BLOCK, scan.max_line_bytes())
    assert called == [("a.txt", limit, False), ("b.txt", limit, True)]
    # stdin and gzip are never read here, natively or not
    assert scan.read_small_file("-") is None and scan.read_small_file("a.mlir.gz") is None


@pytest.mark.parametrize("size", [0, 1, 99, 100, 101, 4096])
def test_sizes_around_the_limit(tmp_path, monkeypatch, size):
    monkeypatch.setattr(scan, "BLOCK", 100)
    p = tmp_path / "f.txt"
    data = os.urandom(size)
    p.write_bytes(data)
    got, want = both(str(p))
    assert got == want == (data if size <= 100 else None)


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=3000), limit=st.integers(0, 4000))
def test_any_bytes_any_limit(tmp_path_factory, data, limit):
    p = tmp_path_factory.mktemp("r") / "f"
    p.write_bytes(data)
    assert native(str(p), limit) == (data if len(data) <= limit else None)


def test_what_is_not_a_small_regular_file(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "real.txt").write_bytes(b"HloModule m\n")
    os.symlink(tmp_path / "real.txt", tmp_path / "link.txt")
    os.symlink(tmp_path / "gone.txt", tmp_path / "dangling.txt")
    os.symlink(tmp_path / "d", tmp_path / "dirlink")
    cases = {
        "missing": (str(tmp_path / "missing.txt"), None),
        "a directory": (str(tmp_path / "d"), None),
        "a link to a directory": (str(tmp_path / "dirlink"), None),
        "a dangling link": (str(tmp_path / "dangling.txt"), None),
        "a link to a file": (str(tmp_path / "link.txt"), b"HloModule m\n"),
        "a device": ("/dev/null", None),
        "an empty name": ("", None),
    }
    for what, (path, expected) in cases.items():
        got, want = both(path)
        assert got == want == expected, what


def test_a_file_that_grew_since_its_size_was_read_is_streamed():
    # /proc files say size 0 and hold more: like a file written to meanwhile
    path = f"/proc/{os.getpid()}/status"
    if not os.path.exists(path):
        pytest.skip("no /proc on this system")
    got, want = both(path)
    assert got is None and want is None


def test_a_named_pipe_is_never_opened(tmp_path):
    # opening a FIFO nobody writes to blocks: a read of it would hang the walk
    fifo = tmp_path / "pipe.mlir"
    os.mkfifo(fifo)
    out: list = []
    t = threading.Thread(target=lambda: out.append(both(str(fifo))), daemon=True)
    t.start()
    t.join(10)
    assert out == [(None, None)]


def test_bad_paths_raise_as_os_calls_do(tmp_path):
    with pytest.raises(ValueError):
        native("a\0b", 10)
    with pytest.raises(ValueError):
        scan.read_small_file_py("a\0b")
    with pytest.raises(TypeError):
        native(3.5, 10)
    with pytest.raises(TypeError):
        native("a")
    p = tmp_path / "f"
    p.write_bytes(b"abc")
    assert native(Path(p), 10) == native(os.fsencode(p), 10) == b"abc"


def test_a_walked_file_is_read_alike_without_its_path_stat(tmp_path, monkeypatch):
    # a directory walk found it a regular file (its entry's type said so): only the open
    # file is stat'ed, with the same answers
    small, big = tmp_path / "small.txt", tmp_path / "big.txt"
    small.write_bytes(b"HloModule m\n")
    big.write_bytes(b"x" * 300)
    monkeypatch.setattr(scan, "BLOCK", 100)
    limit = min(scan.BLOCK, scan.max_line_bytes())
    for path, expected in ((small, b"HloModule m\n"), (big, None), (tmp_path / "gone", None)):
        assert native(str(path), limit, True) == native(str(path), limit) == expected
        assert scan.read_small_file(str(path), walked=True) == expected

    def no_stat(*a, **k):
        raise AssertionError("a walked file's path is not stat'ed")

    monkeypatch.setattr(os, "stat", no_stat)
    assert scan.read_small_file_py(str(small), walked=True) == b"HloModule m\n"
    assert scan.read_small_file_py(str(big), walked=True) is None
    assert scan.read_small_file_py(str(tmp_path / "gone"), walked=True) is None
    with pytest.raises(AssertionError):
        scan.read_small_file_py(str(small))


@pytest.mark.parametrize("reader", ["native", "twin"])
def test_only_a_walked_path_is_opened_without_its_stat(tmp_path, reader):
    """What `walked` changes, seen: a pipe in a path's place (what a directory walk rules
    out) is opened when the path is said to be walked (its stat skipped), and never when
    it is not. Either way nothing is read from it (the open pipe is stat'ed, let go)."""
    fifo = str(tmp_path / "pipe.txt")
    os.mkfifo(fifo)

    def read(walked: bool) -> bytes | None:
        if reader == "native":
            return native(fifo, 1000, walked)
        return scan.read_small_file_py(fifo, walked)

    def opened_by(walked: bool) -> bool:
        fds: list[int] = []
        writer = threading.Thread(target=lambda: fds.append(os.open(fifo, os.O_WRONLY)))
        writer.start()  # blocked in its open until a reader opens the pipe
        assert read(walked) is None
        writer.join(0.5)
        opened = bool(fds)
        if not opened:  # release the writer
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
            writer.join(5)
        os.close(fds[0])
        return opened

    assert opened_by(True)
    assert not opened_by(False)


def test_read_ahead_stats_first_what_the_user_named(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(scan, "_native_read_small", lambda p, n, w=False: asked.append((p, w)))
    paths = ["d/a.txt", "named.txt", "d/b.txt", "-"]
    assert [p for p, _ in scan.read_ahead(paths, frozenset(["d", "named.txt", "-"]))] == paths
    assert asked == [("d/a.txt", True), ("named.txt", False), ("d/b.txt", True)]
    asked.clear()
    list(scan.read_ahead(paths))  # nothing said of the paths: every one is stat'ed first
    assert asked == [("d/a.txt", False), ("named.txt", False), ("d/b.txt", False)]


@pytest.mark.parametrize(
    "command",
    [
        ["inspect", "-j", "1", "-f", "json"],
        ["inspect", "-j", "2", "-f", "json"],
        ["lint", "--isolated", "--mesh", "batch=2,model=4", "-j", "1", "-f", "json"],
        ["lint", "--isolated", "--mesh", "batch=2,model=4", "-j", "2", "-f", "json"],
    ],
)
def test_a_named_pipe_beside_a_walked_directory_is_read_once(tmp_path, command):
    """`inspect DIR PIPE`, `lint DIR PIPE`: the directory's files are read without a stat
    first, the pipe (named) is stat'ed, so only its scan opens it. (Its writer writes as
    soon as it is opened, unbuffered: opened and closed before the scan, what it sent
    would be lost and the scan would wait for a writer that never comes.)"""
    import subprocess
    import sys

    d = tmp_path / "d"
    d.mkdir()
    text = (Path(__file__).parent.parent / "fixtures/seed/distorted_mesh_gspmd.mlir").read_bytes()
    (d / "one.mlir").write_bytes(text)
    fifo = tmp_path / "pipe.mlir"
    os.mkfifo(fifo)

    def write():
        fd = os.open(fifo, os.O_WRONLY)  # blocks until the scan opens it
        try:
            os.write(fd, text)
        except BrokenPipeError:
            pass
        finally:
            os.close(fd)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    cmd = [sys.executable, "-m", "meshdiag", *command, str(d), str(fifo)]
    r = subprocess.run(cmd, capture_output=True, timeout=60)
    writer.join(5)
    assert r.returncode in (0, 1), r.stderr
    doc = json.loads(r.stdout)
    if command[0] == "inspect":
        files = doc["files"]
        assert [f["path"] for f in files] == [str(d / "one.mlir"), str(fifo)]
        assert files[0]["modules"] == files[1]["modules"] != []
    else:  # the same findings in both
        where = [(f["path"], f["code"], f["line"]) for f in doc["findings"]]
        one = [(c, ln) for p, c, ln in where if p == str(d / "one.mlir")]
        assert one and one == [(c, ln) for p, c, ln in where if p == str(fifo)]
