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


def test_a_files_json_around_its_modules_as_json_dumps_writes_it(tmp_path):
    """`file_json_parts` encodes the id space once for a run of files sharing it: the same
    text as `json.dumps` of the file's JSON, for files with a device assignment and
    without, alternating between them, and paths that need escaping."""
    from test_device_assignment import TEXTPROTO

    from meshdiag.pipeline.inspect import file_json_parts, ids_json

    mod = tmp_path / "module_0003.jit_f"
    mod.mkdir()
    (mod / "compile_options.textproto").write_text(TEXTPROTO)
    with_da = [str(tmp_path / f"module_0003.jit_f.000{k}.pass.txt") for k in range(3)]
    without = [str(tmp_path / "module_0004.jit_g.0001.pass.txt"), "<stdin>"]
    odd = ['a "quoted" \\ name.txt', "日本.mlir", "bad\udcff.txt"]
    paths = [*with_da, *without, with_da[0], *odd, with_da[1]]
    memos = RunMemos()
    for p in paths:
        want = json.dumps({"path": p, **ids_json(p), "modules": []})
        assert file_json_parts(p, memos) == (want[:-2], want[-2:])
    assert ids_json(with_da[0])["device_assignment"]["devices"] == [2, 3, 0, 1]
