"""`inspect`'s worker batches: cut by bytes, in order, while the walk goes on; workers when
the bytes pay for them, whatever the number of files."""

from __future__ import annotations

from pathlib import Path

from meshdiag.ir import batches
from meshdiag.ir.batches import MAX_FILES, PARALLEL_BYTES, stream


def by_bytes(files, jobs):
    """`stream`'s batches of a whole list, listed."""
    batches, parallel = stream(files, jobs)
    return list(batches), parallel


def files(tmp_path, sizes):
    out = []
    for i, n in enumerate(sizes):
        p = tmp_path / f"f{i:04}.txt"
        p.write_bytes(b"x" * n)
        out.append(str(p))
    return out


def test_few_big_files_go_to_the_workers(tmp_path, monkeypatch):
    monkeypatch.setattr(batches, "PARALLEL_BYTES", 62 * 1000)
    monkeypatch.setattr(batches, "MIN_BYTES", 1)
    fs = files(tmp_path, [1000] * 62)  # 62 files: too few for a count rule, enough bytes
    got, parallel = by_bytes(fs, 2)
    assert parallel
    assert [f for b in got for f in b] == fs  # every file once, in order
    assert len(got) >= 2 * batches.PER_WORKER - 1
    assert max(sum(1000 for _ in b) for b in got) <= 62 * 1000 // (2 * batches.PER_WORKER) + 1000


def test_batches_hold_their_share_of_what_was_sized(tmp_path, monkeypatch):
    """Cut while the walk goes on, a batch holds about 1/(jobs * PER_WORKER) of the bytes
    sized so far, and at least MIN_BYTES: early ones small, later ones the share of all."""
    monkeypatch.setattr(batches, "PARALLEL_BYTES", 10_000)
    monkeypatch.setattr(batches, "MIN_BYTES", 3_000)
    fs = files(tmp_path, [100] * 2000)  # 200,000 bytes
    got, parallel = by_bytes(fs, 2)
    assert parallel and [f for b in got for f in b] == fs
    held = [100 * len(b) for b in got]
    assert held[0] == 3_000  # MIN_BYTES: the share of the first 10,000 bytes is smaller
    assert max(held) <= 200_000 // (2 * batches.PER_WORKER)
    assert held[-2] > 200_000 // (2 * batches.PER_WORKER) * 9 // 10
    assert held[:-1] == sorted(held[:-1])  # growing with what was sized
    # many cores: the smallest parallel run still gives every worker a batch
    got, parallel = by_bytes(fs[:100], 20)
    assert parallel and len(got) >= 20 and [f for b in got for f in b] == fs[:100]


def test_the_walk_goes_on_while_batches_are_handed_out(tmp_path, monkeypatch):
    """Only what decides whether workers pay is sized before the first batch: the rest of
    the walk is read as batches are asked for. With one job nothing is sized at all."""
    monkeypatch.setattr(batches, "PARALLEL_BYTES", 1000)
    monkeypatch.setattr(batches, "MIN_BYTES", 1)
    fs = files(tmp_path, [500] * 40)
    walked: list[str] = []

    def walk():
        for f in fs:
            walked.append(f)
            yield f

    got, parallel = stream(walk(), 2)
    assert parallel and len(walked) == 2  # 1,000 bytes: enough to decide
    first = next(got)
    assert len(walked) < len(fs) and first == fs[: len(first)]
    assert [*first, *(f for b in got for f in b)] == fs

    sized: list[str] = []
    monkeypatch.setattr(batches, "size", lambda f: sized.append(f) or 500)
    walked.clear()
    got, parallel = stream(walk(), 1)
    assert not parallel and walked == [] and [f for b in got for f in b] == fs
    assert sized == []


def test_many_small_files_stay_in_this_process(tmp_path, monkeypatch):
    monkeypatch.setattr(batches, "MAX_FILES", 64)
    fs = files(tmp_path, [10] * 200)
    got, parallel = by_bytes(fs, 2)
    assert not parallel
    assert [len(b) for b in got] == [64, 64, 64, 200 - 3 * 64]
    assert MAX_FILES > 64  # long runs by default (see batches.MAX_FILES)


def test_a_big_file_is_a_batch_of_its_own(tmp_path, monkeypatch):
    monkeypatch.setattr(batches, "PARALLEL_BYTES", 1000)
    monkeypatch.setattr(batches, "MIN_BYTES", 1)
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


def test_map_files_takes_a_walk_going_on_without_a_task_size():
    """Told to run in workers, `map_files` reads an iterator as it goes (no length to size
    its tasks by: one file per task), in order."""
    import os.path

    from meshdiag.pipeline.inspect import map_files

    walk = (f"/d{k}/f{k}.txt" for k in range(5))
    assert list(map_files(os.path.basename, walk, 2, parallel=True)) == [
        f"f{k}.txt" for k in range(5)
    ]


def test_task_files_keeps_every_worker_busy_in_long_runs():
    from meshdiag.ir.batches import PER_WORKER, task_files

    assert task_files(10, 2) == 1
    assert task_files(2 * PER_WORKER * 100, 2) == 100
    assert task_files(10**7, 2) == MAX_FILES


def test_a_batch_past_its_share_ends_with_its_module(tmp_path, monkeypatch):
    """XLA dump files of one module (`module_NNNN.` prefix, one directory) stay in one
    batch when the batch reaches its share in the middle of them, up to twice the share;
    files named otherwise are cut at the share."""
    monkeypatch.setattr(batches, "PARALLEL_BYTES", 2000)
    monkeypatch.setattr(batches, "MIN_BYTES", 1000)
    fs = []
    for m in range(6):  # six modules of five 300-byte pass files: 1,500 bytes each
        for k in range(5):
            p = tmp_path / f"module_{m:04}.jit_f.{k:04}.pass.txt"
            p.write_bytes(b"x" * 300)
            fs.append(str(p))
    got, parallel = by_bytes(fs, 2)
    assert parallel and [f for b in got for f in b] == fs
    module = [{batches.program_of(f) for f in b} for b in got]
    assert all(len(m) == 1 for m in module)  # each batch one whole module (share 1,000)
    assert len(got) == 6
    # a module bigger than twice the share is cut there
    big = fs[:5] + [str(tmp_path / f"module_0000.jit_f.{k:04}.more.txt") for k in range(5, 12)]
    for f in big[5:]:
        Path(f).write_bytes(b"x" * 300)
    got, _ = by_bytes(big, 2)
    assert [len(b) for b in got] == [6, 6]  # 1,800 bytes: over 2 * 1,000 with the 7th
    # other names: cut at the share
    plain = files(tmp_path, [300] * 10)
    got, _ = by_bytes(plain, 2)
    assert [len(b) for b in got] == [3, 3, 3, 1]
    assert batches.program_of(plain[0]) is None
