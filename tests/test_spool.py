"""Worker output spooled through files: order kept, files rotated and deleted behind the
reader, every kind of output stream served (real files by sendfile, captured streams by
copy)."""

from __future__ import annotations

import io
import os

from meshdiag.pipeline import spool
from meshdiag.pipeline.spool import SpoolDir, spool_write


def test_roundtrip_rotation_and_cleanup(tmp_path, monkeypatch):
    monkeypatch.setattr(spool, "ROTATE", 100)  # a new spool file every ~100 bytes
    chunks = [bytes([65 + i % 26]) * (7 * i + 1) for i in range(60)]
    with SpoolDir() as sd:
        sd.worker_init(*sd.init_args)
        spooled = [spool_write(c) for c in chunks]
        assert len({s.path for s in spooled}) > 5  # rotated
        real = open(tmp_path / "out.bin", "wb")  # noqa: SIM115 - closed below
        captured = io.BytesIO()
        for s in spooled[:30]:
            sd.copy(s, real)  # sendfile into a real file
        for s in spooled[30:]:
            sd.copy(s, captured)  # no file descriptor: copied through memory
        real.close()
        assert (tmp_path / "out.bin").read_bytes() + captured.getvalue() == b"".join(chunks)
        # files read past are gone; only the one being read is left
        assert os.listdir(sd.directory) == [os.path.basename(spooled[-1].path)]
        directory = sd.directory
    assert not os.path.exists(directory)


def test_inspect_output_same_serial_and_parallel(tmp_path):
    """The spooled parallel output is byte for byte the serial one (JSON and text)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    # enough bytes for the worker pool (it starts at `batches.PARALLEL_BYTES` in all):
    # each file is padded with comment lines
    from meshdiag.ir.batches import PARALLEL_BYTES

    pad = b"// padding: no sharding here\n" * (PARALLEL_BYTES // 70 // 29 + 1)
    for i in range(70):
        (tmp_path / f"f{i:03}.mlir").write_bytes(
            (root / "fixtures/seed/distorted_mesh.mlir").read_bytes() + pad
        )
    spool_tmp = tmp_path / "tmp"
    spool_tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(spool_tmp)}  # where the spool directory goes
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    for p in tmp_path.glob("f*.mlir"):
        p.rename(dumps / p.name)
    files = sorted(str(p) for p in dumps.iterdir())
    base = [sys.executable, "-m", "meshdiag", "inspect", "--quiet"]
    # text per file is spooled when the files are named (a directory is one summary
    # report, folded in the parent: checked here too, and below the spool's volume)
    for args, least in ((files, 10000), ([str(dumps), "-f", "json"], 10000), ([str(dumps)], 500)):
        outs = [
            subprocess.run(
                base + args + ["--jobs", j], capture_output=True, check=True, env=env
            ).stdout
            for j in ("1", "2")
        ]
        assert outs[0] == outs[1] and len(outs[0]) > least
    assert list(spool_tmp.iterdir()) == []  # the spool directory is removed


def test_a_serial_json_run_writes_straight_out(tmp_path, monkeypatch, capfdbinary):
    """One process (`--jobs 1`): each batch's JSON goes straight to the output, joined by
    ", ", and no spool file is written (a big file's whole JSON went through one); the
    document is the one the spooling parallel run writes (above)."""
    import json
    from pathlib import Path

    from meshdiag.cli.app import main

    def no_spool(self):
        raise AssertionError("a serial JSON run wrote a spool file")

    monkeypatch.setattr(spool._Writer, "_rotate", no_spool)
    monkeypatch.setattr("meshdiag.ir.batches.MAX_FILES", 2)  # batches joined by the writer
    root = Path(__file__).resolve().parent.parent
    files = [str(p) for p in sorted((root / "fixtures/jax").glob("*.mlir"))]
    try:
        main(["inspect", "-q", "-j1", "-f", "json", *files])
    except SystemExit as e:
        assert e.code in (0, 1)
    out = capfdbinary.readouterr().out
    doc = json.loads(out)
    assert out == (json.dumps(doc) + "\n").encode()  # one json.dumps, separators and all
    assert [f["path"] for f in doc["files"]] == files and len(files) > 3
    assert spool._WRITER is None  # the run's direct writer is gone with it


def test_write_all_writes_every_part_in_order_whatever_each_call_takes(tmp_path, monkeypatch):
    """`write_all` gathers the parts into `os.writev` calls of at most IOV_MAX buffers and
    goes on after a short write, in the middle of a buffer or between two; without
    `writev` it joins them. The file holds the parts in order either way."""
    import random

    rng = random.Random(7)
    parts = [bytes([65 + k % 26]) * rng.randrange(0, 40) for k in range(3000)]
    want = b"".join(parts)
    real = os.writev
    calls = []

    def short(fd, buffers):  # writes at most 100 bytes, at most IOV_MAX buffers
        assert len(buffers) <= spool.IOV_MAX
        calls.append(len(buffers))
        return real(fd, [b"".join(bytes(b) for b in buffers)[: rng.randrange(1, 100)]])

    for name, writev in (("short", short), ("real", real), ("none", None)):
        path = tmp_path / name
        fd = os.open(path, os.O_WRONLY | os.O_CREAT)
        try:
            if writev is None:
                monkeypatch.delattr(os, "writev")
            else:
                monkeypatch.setattr(os, "writev", writev)
            assert spool.write_all(fd, parts) == len(want)
        finally:
            os.close(fd)
            monkeypatch.undo()
        assert path.read_bytes() == want, name
    assert len(calls) > 100  # the short writes were gone on from


def test_a_serial_runs_pieces_go_straight_out_after_what_is_buffered(tmp_path):
    """A serial run's stream of pieces (`SpoolStream` on the direct writer) reaches the
    output's file after the separator still in its buffer, and a captured output (no
    file) gets them joined."""
    path = tmp_path / "out"
    with open(path, "wb") as out:
        spool._WRITER = spool._Direct(out, b", ")
        try:
            spool._WRITER.write(b"first")
            stream = spool.SpoolStream()  # begins: the separator, buffered
            for k in range(5):
                stream.write(b"[%d]" % k)
            stream.done()
        finally:
            spool._WRITER = None
    assert path.read_bytes() == b"first, [0][1][2][3][4]"
    captured = io.BytesIO()
    spool._WRITER = spool._Direct(captured, b", ")
    try:
        stream = spool.SpoolStream()
        stream.write(b"a")
        stream.write(b"b")
        stream.done()
    finally:
        spool._WRITER = None
    assert captured.getvalue() == b"ab"
