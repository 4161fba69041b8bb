"""`inspect.values_json_text` writes a module's values' JSON a value at a time from
pieces encoded once per module: it must be the text `json.dumps` gives of each value's
`value_json`, for every fixture module (HLO, GSPMD and Shardy MLIR, partitioned dumps,
tuple shardings, manual regions) and for names and shardings that need escaping."""

from __future__ import annotations

import io
import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from meshdiag.ir.scan import scan_file
from meshdiag.memo import RunMemos
from meshdiag.pipeline import inspect

ROOT = Path(__file__).resolve().parent.parent / "fixtures"


def _modules():
    files = sorted(p for p in ROOT.rglob("*") if p.suffix in (".txt", ".mlir"))
    assert len(files) > 40
    return [m for p in files for m in scan_file(str(p), io.BytesIO(p.read_bytes())).modules]


def _by_json(m, memos) -> str:
    return json.dumps([inspect.value_json(v, m, inspect.gspmd_text(v, memos)) for v in m.values])


def test_every_fixture_module_as_json_dumps_writes_it():
    memos = RunMemos()
    modules = _modules()
    assert sum(len(m.values) for m in modules) > 300
    assert any(m.partitioned for m in modules)
    for m in modules:
        assert inspect.values_json_text(m, memos) == _by_json(m, memos)


_NAME = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)


@settings(max_examples=100, deadline=None)
@given(names=st.lists(_NAME, min_size=1, max_size=6), texts=st.lists(_NAME, max_size=3))
def test_names_and_texts_that_need_escaping(names, texts):
    """Names with quotes, backslashes, control and non-ASCII characters; shardings whose
    text is not what the value was parsed from (the pieces are keyed by the text)."""
    m = next(m for m in _MODULES if len(m.values) >= len(names))
    memos = RunMemos()
    for v, name in zip(m.values, names, strict=False):
        v.name = name
    for v, text in zip(m.values, texts, strict=False):
        v.text = text
    assert inspect.values_json_text(m, memos) == _by_json(m, memos)


_MODULES = [m for m in _modules() if m.values and not m.partitioned][:5]
