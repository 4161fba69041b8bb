"""A worker hands its files on a batch at a time (`pipeline.file_batch.FileBatch`): each
file's sink made in file order, its modules in order then what its scan gave, a batch
bounded by files, modules and column entries (an open file keeps its place); and what
`inspect`'s batches write through it is what writing each file as it is read writes."""

from __future__ import annotations

import json

import pytest
from fixture_modules import dump_files

from meshdiag.cli.commands import inspect_worker as worker
from meshdiag.pipeline import file_batch as B
from meshdiag.pipeline.dump_summary import DumpSummary
from meshdiag.pipeline.spool import SpoolDir


class _Module:
    def __init__(self, name: str, entries: int = 1) -> None:
        self.name = name
        self.items = [None] * entries


class _Sink:
    def __init__(self, log: list, name: str) -> None:
        log.append(("make", name))
        self.log = log
        self.name = name

    def module(self, m) -> None:
        self.log.append(("module", self.name, m.name))

    def end(self, done) -> None:
        self.log.append(("end", self.name, done))


def test_files_go_on_in_order_when_the_batch_is_full(monkeypatch):
    monkeypatch.setattr(B, "BATCH_FILES", 2)
    log: list = []
    batch = B.FileBatch()
    each = batch.start(lambda: _Sink(log, "a"))
    each(_Module("a1"))
    each(_Module("a2"))
    batch.end(None)  # (what a scan gives may be None)
    each = batch.start(lambda: _Sink(log, "b"))
    assert log == []  # nothing made or handed on yet
    batch.end("b done")
    assert log == [
        ("make", "a"),
        ("module", "a", "a1"),
        ("module", "a", "a2"),
        ("end", "a", None),
        ("make", "b"),
        ("end", "b", "b done"),
    ]
    log.clear()
    batch.start(lambda: _Sink(log, "c"))
    batch.flush()  # an open file: made, kept
    assert log == [("make", "c")]
    batch.end("c done")
    batch.flush()
    assert log == [("make", "c"), ("end", "c", "c done")]
    log.clear()
    batch.flush()
    assert log == []


@pytest.mark.parametrize(("bound", "value"), [("BATCH_MODULES", 3), ("BATCH_ENTRIES", 6)])
def test_an_open_file_keeps_its_place_when_the_batch_holds_enough(monkeypatch, bound, value):
    """Modules (or entries) over the bound: the files before go on whole, the open file's
    modules so far go to its sink, and its later ones to the same sink."""
    monkeypatch.setattr(B, bound, value)
    log: list = []
    batch = B.FileBatch()
    each = batch.start(lambda: _Sink(log, "a"))
    each(_Module("a1", 2))
    batch.end("a done")
    each = batch.start(lambda: _Sink(log, "b"))
    each(_Module("b1", 2))
    assert log == []
    each(_Module("b2", 2))  # 3 modules, 6 entries
    assert log == [
        ("make", "a"),
        ("module", "a", "a1"),
        ("end", "a", "a done"),
        ("make", "b"),
        ("module", "b", "b1"),
        ("module", "b", "b2"),
    ]
    each(_Module("b3", 1))
    batch.end("b done")
    batch.flush()
    assert log[-2:] == [("module", "b", "b3"), ("end", "b", "b done")]
    assert [x for x in log if x[0] == "make"] == [("make", "a"), ("make", "b")]


@pytest.fixture
def spooled():
    sd = SpoolDir()
    sd.worker_init(*sd.init_args)
    yield sd
    sd.close()


@pytest.mark.parametrize("bounds", [(1, 1, 1), (3, 2, 1 << 15), (32, 32, 50)])
def test_the_batches_write_what_writing_each_file_as_read_writes(spooled, monkeypatch, bounds):
    """`text_batch`, `json_batch` and `summary_batch` over the fixtures, whatever the
    batch's bounds, write the bytes (and fold the summary) that each file written (or
    folded) as it is read gives."""
    files, modules, entries = bounds
    monkeypatch.setattr(B, "BATCH_FILES", files)
    monkeypatch.setattr(B, "BATCH_MODULES", modules)
    monkeypatch.setattr(B, "BATCH_ENTRIES", entries)
    look = {"width": 100, "height": 25, "color_system": None, "force_terminal": False}
    from meshdiag.cli.commands.common import load_mesh

    gm = load_mesh("batch=2,model=4")  # (findings in most fixtures)
    state = (gm, "tt-mlir", "xla", False, {**look, "soft_wrap": True}, spooled.directory, True)
    worker.init(state)
    paths = [str(p) for p in dump_files()]
    want_text: list[bytes] = []
    want_json: list[bytes] = []
    want_found: list[str] = []
    want_count = 0
    text_summary, json_summary = DumpSummary(), DumpSummary()
    for i, p in enumerate(paths):
        want_count += worker.text_one(p, want_text.append, text_summary)
        if i:
            want_json.append(b", ")
        want_found += worker.json_one(p, want_json.append, json_summary)
    got_paths, spool, count, summary = worker.text_batch(paths)
    assert got_paths == paths and count == want_count > 0
    assert spooled.read(spool) == b"".join(want_text)
    assert summary == text_summary and list(summary.groups) == list(text_summary.groups)
    _, spool, found, summary = worker.json_batch(paths)
    assert spooled.read(spool) == b"".join(want_json)
    json.loads(b"[" + spooled.read(spool) + b"]")
    assert found == want_found and summary == json_summary
    _, folded = worker.summary_batch(paths)
    assert folded == text_summary and list(folded.groups) == list(text_summary.groups)
