"""A big file's ended modules are checked and handed on in batches
(`pipeline.inspect._Ended`): every module, in order, each checked before any of its batch is
handed on, a batch bounded by modules and by the column entries it holds, the last one
flushed when the scan ends; a small file's once it is read."""

from __future__ import annotations

from pathlib import Path

import pytest

from meshdiag.ir.parts import FilePart
from meshdiag.ir.scan import scan_path
from meshdiag.memo import RunMemos
from meshdiag.pipeline import file_batch as B
from meshdiag.pipeline import inspect as I


class _Module:
    def __init__(self, k: int, entries: int) -> None:
        self.k = k
        self.items = [None] * entries


class _Checker:
    def __init__(self, log: list) -> None:
        self.log = log

    def check(self, m) -> None:
        self.log.append(("check", m.k))


def _ended(log: list) -> I._Ended:
    return I._Ended(_Checker(log), lambda m: log.append(("each", m.k)))  # type: ignore[arg-type]


def test_a_batch_is_checked_then_handed_on_when_full(monkeypatch):
    monkeypatch.setattr(B, "BATCH_MODULES", 3)
    log: list = []
    done = _ended(log)
    for k in range(2):
        done(_Module(k, 1))
    assert log == [] and done.count == 2
    done(_Module(2, 1))
    assert log == [("check", 0), ("check", 1), ("check", 2), ("each", 0), ("each", 1), ("each", 2)]
    log.clear()
    for k in range(3, 5):
        done(_Module(k, 1))
    assert log == []
    done.flush()
    assert log == [("check", 3), ("check", 4), ("each", 3), ("each", 4)]
    log.clear()
    done.flush()  # nothing waiting: nothing done
    assert log == [] and done.count == 5


def test_a_batch_goes_once_it_holds_enough_entries(monkeypatch):
    monkeypatch.setattr(B, "BATCH_ENTRIES", 10)
    log: list = []
    done = _ended(log)
    done(_Module(0, 4))
    done(_Module(1, 5))
    assert log == []
    done(_Module(2, 1))  # 10 entries
    assert [k for what, k in log if what == "each"] == [0, 1, 2]
    log.clear()
    done(_Module(3, 25))  # more than a batch's worth: alone, at once
    assert log == [("check", 3), ("each", 3)]


def _write_modules(path: Path, n: int) -> None:
    """`n` small Shardy modules, each with a value whose sharding MD107 finds fault with
    in every third one (a rank-1 sharding on a rank-2 tensor)."""
    out = []
    for j in range(n):
        spec = '[{"x"}]' if j % 3 == 0 else '[{"x"}, {}]'
        out += [
            f"module @m{j} attributes {{mhlo.num_partitions = 2 : i32}} {{",
            '  sdy.mesh @mesh = <["x"=2]>',
            f"  func.func public @main(%arg0: tensor<8x{j + 1}xf32> "
            f"{{sdy.sharding = #sdy.sharding<@mesh, {spec}>}}) -> tensor<8x{j + 1}xf32> {{",
            f"    return %arg0 : tensor<8x{j + 1}xf32>",
            "  }",
            "}",
        ]
    path.write_text("\n".join(out) + "\n")


@pytest.mark.parametrize("batch", [1, 4, 32])
def test_every_module_is_checked_and_handed_on_in_order(tmp_path, monkeypatch, batch):
    """Whatever the batch, a scan hands on every module in order (the last batch too) and
    finds what checking the whole report finds, for a whole file and for its parts."""
    monkeypatch.setattr(B, "BATCH_MODULES", batch)
    path = tmp_path / "many.mlir"
    _write_modules(path, 45)
    want = I.run_checks(scan_path(str(path)), None, None, "xla")
    assert any(f.code == "MD107" for f in want)
    seen: list = []
    for memos in (RunMemos(), None):  # the file read whole first, or streamed
        seen.clear()
        report, count, found = I.scan_checked(
            str(path), None, None, "xla", each=lambda m: seen.append(m.name), memos=memos
        )
        assert count == 45 and seen == [f"m{j}" for j in range(45)]
        assert found == want
    # the same file read as it would be in two parts, cut between modules 20 and 21
    text = path.read_bytes()
    cut = text.index(b"module @m21 ")
    lines = text.count(b"\n", 0, cut)
    seen.clear()
    parts = [
        FilePart(str(path), 0, cut, 1, 0, 2),
        FilePart(str(path), cut, len(text), lines + 1, 1, 2),
    ]
    got = []
    for part in parts:
        n, scanned, checked = I.scan_checked_part(
            part, None, None, "xla", each=lambda m: seen.append(m.name), memos=RunMemos()
        )
        got.append((scanned, checked))
    assert seen == [f"m{j}" for j in range(45)]
    assert I.joined_findings(got) == want
