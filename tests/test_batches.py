"""`inspect`'s worker batches: cut by bytes, in order; workers when the bytes pay for them,
whatever the number of files."""

from __future__ import annotations

from meshdiag.ir import batches
from meshdiag.ir.batches import MAX_FILES, PARALLEL_BYTES, by_bytes


def files(tmp_path, sizes):
    out = []
    for i, n in enumerate(sizes):
        p = tmp_path / f"f{i:04}.txt"
        p.write_bytes(b"x" * n)
        out.append(str(p))
    return out


def test_few_big_files_go_to_the_workers(tmp_path, monkeypatch):
    monkeypatch.setattr(batches, "PARALLEL_BYTES", 62 * 1000)
    fs = files(tmp_path, [1000] * 62)  # 62 files: too few for a count rule, enough bytes
    got, parallel = by_bytes(fs, 2)
    assert parallel
    assert [f for b in got for f in b] == fs  # every file once, in order
    assert len(got) >= 2 * batches.PER_WORKER - 1
    assert max(sum(1000 for _ in b) for b in got) <= 62 * 1000 // (2 * batches.PER_WORKER) + 1000


def test_many_small_files_stay_in_this_process(tmp_path, monkeypatch):
    monkeypatch.setattr(batches, "MAX_FILES", 64)
    fs = files(tmp_path, [10] * 200)
    got, parallel = by_bytes(fs, 2)
    assert not parallel
    assert [len(b) for b in got] == [64, 64, 64, 200 - 3 * 64]
    assert MAX_FILES > 64  # long runs by default (see batches.MAX_FILES)


def test_a_big_file_is_a_batch_of_its_own(tmp_path, monkeypatch):
    monkeypatch.setattr(batches, "PARALLEL_BYTES", 1000)
    fs = files(tmp_path, [10, 10, 5000, 10, 10])
    got, parallel = by_bytes(fs, 2)
    assert parallel
    assert [fs[2]] in got
    assert [f for b in got for f in b] == fs


def test_one_job_or_stdin_or_missing_files(tmp_path):
    fs = files(tmp_path, [PARALLEL_BYTES, PARALLEL_BYTES])
    assert by_bytes(fs, 1) == ([fs], False)
    assert by_bytes(["-"], 4) == ([["-"]], False)
    missing = str(tmp_path / "nope")
    assert by_bytes([missing, fs[0]], 2)[1] is True  # a missing file counts 0 bytes
