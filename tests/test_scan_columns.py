"""Repeated lines: the scanner stores a module's values as columns (line, shared entry), the
native and the Python candidate walkers give the same reports, and everything that reads
the columns (values, groups, JSON, text summaries, checks) sees each occurrence."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from meshdiag.ir import lines, scan
from meshdiag.ir.model import LineValues, ModuleReport, Value
from meshdiag.ir.scan import scan_file, scan_path
from meshdiag.ir.scancache import ScanCache
from meshdiag.pipeline.inspect import file_json, run_checks

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted(p for p in (ROOT / "fixtures").rglob("*") if p.is_file())

PASS = """// -----// IR Dump Before Pass{n} (pass-{n}) ('builtin.module' operation: @m) //----- //
module @m attributes {{mhlo.num_partitions = 8 : i32}} {{
  sdy.mesh @mesh = <["x"=2, "y"=4]>
  func.func @main(%arg0: tensor<8x16xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{{"x"}}, {{"y"}}]>}}, %arg1: tensor<7x4xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{{"y"}}, {{}}]>}}) -> tensor<8x16xf32> {{
    %0 = sdy.sharding_constraint %arg0 <@mesh, [{{"x"}}, {{"y"}}]> : tensor<8x16xf32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{{"x"}}, {{"y"}}]> : tensor<8x16xf32>
    %2 = stablehlo.add %1, %1 {{sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{{"x"}}, {{"y"}}]>]>}} : tensor<8x16xf32>
    return %2 : tensor<8x16xf32>
  }}
}}
"""


def dump(n: int = 4) -> bytes:
    """A pass dump printing the same module `n` times (every line repeats)."""
    return "".join(PASS.format(n=i) for i in range(n)).encode()


@pytest.fixture
def python_walker(monkeypatch):
    monkeypatch.setattr(scan, "scan_known", lines.scan_known_py)
    yield


def reports(paths, cache=None):
    """The files' JSON; each scan learns afresh unless a run's `cache` is shared."""
    return [file_json(scan_path(str(p), cache=cache)) for p in paths]


def test_native_walker_is_built_and_used():
    assert lines.scan_known is not lines.scan_known_py
    assert scan.scan_known is lines.scan_known


def test_python_walker_gives_the_same_reports(python_walker):
    run = ScanCache()
    python = reports(FIXTURES, run)
    python_again = reports(FIXTURES, run)  # the same run, every line learned: the same again
    scan.scan_known = lines.scan_known  # the native walker (monkeypatch restores it)
    native = reports(FIXTURES)
    assert python == native == python_again


def test_repeated_module_values_each_occurrence():
    r = scan_file("d.mlir", io.BytesIO(dump(4)))
    assert len(r.modules) == 4
    first, *rest = r.modules
    # every value of every module, with its own line
    assert [v.line for v in first.values] == [4, 4, 5, 6, 7]
    for k, m in enumerate(rest, start=1):
        assert [v.line - 10 * k for v in m.values] == [v.line for v in first.values]
        assert [(v.name, v.column, v.text) for v in m.values] == [
            (v.name, v.column, v.text) for v in first.values
        ]
    # repeated lines share one column entry across modules
    assert any(isinstance(it, LineValues) for it in rest[-1].items)
    assert set(map(id, rest[0].items)) == set(map(id, rest[1].items))


def test_groups_counts_and_lines():
    m = scan_file("d.mlir", io.BytesIO(dump(2))).modules[1]
    groups = m.value_groups()
    assert sum(g.count for g in groups) == len(m.values) == 5
    assert [g.lines for g in groups] == [[v.line] for v in m.values]
    assert [g.value.name for g in groups] == ["%arg0", "%arg1", "%0", "%1", "%2"]


def test_findings_for_every_occurrence():
    r = scan_file("d.mlir", io.BytesIO(dump(3)))
    found = [f for f in run_checks(r, None, None, "xla") if f.code == "MD105"]
    # %arg1 is 7x4 sharded 4 ways on dim 0: one finding per module, at its line
    assert [f.line for f in found] == [4, 14, 24]
    assert len({f.message for f in found}) == 1


def test_partitioned_modules_show_per_device_shapes():
    text = (
        "HloModule m, num_partitions=2\n\nENTRY %main_spmd (p: f32[4,8]) -> f32[4,8] {\n"
        "  %p = f32[4,8]{1,0} parameter(0), sharding={devices=[2,1]<=[2]}\n"
        "  ROOT %c = f32[4,8]{1,0} copy(%p), sharding={devices=[2,1]<=[2]}\n}\n"
    )
    r = scan_file("m.txt", io.BytesIO((text * 2).encode()))
    for m in r.modules:
        assert m.partitioned
        assert [(v.shape, v.local_shape) for v in m.values] == [(None, (4, 8))] * 2
        assert all(v["shape"] is None for v in file_json(r)["modules"][0]["values"])


def test_module_report_built_by_hand():
    v = Value("%a", 3, 5, "{replicated}", "gspmd")
    m = ModuleReport("m", 1, values=[v])
    assert m.values == [v] and [g.count for g in m.value_groups()] == [1]
    m.values = []
    assert m.values == [] and m.items == []


def test_text_summary_names_each_location():
    from rich.console import Console

    from meshdiag.pipeline.inspect import Inspected
    from meshdiag.pipeline.module_summary import summarise_file
    from meshdiag.report.file_text import render_file

    r = scan_file("d.mlir", io.BytesIO(dump(2)))
    console = Console(file=io.StringIO(), width=200, height=25, color_system=None)
    out = render_file(Inspected(r, []), summarise_file(r, mesh=None, split="xla"), console)
    # the sharding shared by %arg0, %0 and %1 lists each of them at its own line
    assert "%arg0@14:" in out and "%0@15:" in out and "%1@16:" in out
    assert "5 sharded values" in out


def test_content_memos_are_bounded():
    from meshdiag.memo import ContentTable

    memo = ContentTable(max_rows=100, max_module_rows=10)
    assert memo.put("big", 11, "v") == "v" and memo.get("big") is None  # too big to keep
    for k in range(30):
        memo.put(k, 9, k)
    assert memo.get(29) == 29 and len(memo) <= 10  # started over past the budget


def test_make_value_puts_each_field_in_its_place():
    """`make_value` builds a Value by position (faster than keywords): every field lands
    where its name says, whatever the field order."""
    import dataclasses

    from meshdiag.ir.annot import Parsed
    from meshdiag.ir.builder import make_value
    from meshdiag.notation.gspmd import parse_gspmd

    h = parse_gspmd("{devices=[2,1]<=[2]}")
    v = make_value(
        "%v", 7, 9, "<@m, [{}]>", "sdy", Parsed(h, h), "constraint", "sdy.x", (4, 2), "f32"
    )
    want = {
        "name": "%v",
        "line": 7,
        "column": 9,
        "text": "<@m, [{}]>",
        "notation": "sdy",
        "kind": "constraint",
        "op": "sdy.x",
        "shape": (4, 2),
        "local_shape": None,
        "dtype": "f32",
        "mesh_name": "m",
        "sharding": h,
        "hlo": h,
    }
    assert {f.name: getattr(v, f.name) for f in dataclasses.fields(Value)} == want
    manual = parse_gspmd("{manual}")
    m = make_value("%w", 1, 1, "{manual}", "gspmd", Parsed(manual, manual), shape=(8,))
    assert (m.shape, m.local_shape, m.mesh_name) == (None, (8,), None)


def test_a_module_knows_whether_it_holds_values_of_its_own():
    """`has_own_values`: a Value among its column entries (a line of its own), not only
    shared `LineValues`; asked again as entries are added."""
    m = ModuleReport(name="m", line=1, dialect="mlir")
    v = Value("%0", 3, 1, "{replicated}", "gspmd")
    assert not m.has_own_values()
    m.lines.append(3)
    m.items.append(LineValues((v,)))
    assert not m.has_own_values()
    m.lines.append(4)
    m.items.append(v)
    assert m.has_own_values()


def test_the_entries_of_one_class_natively_and_by_the_twin():
    """`of_class` (what `shared_entries` asks): the items whose class is exactly the one
    asked, in order, natively as by its twin; a subclass's items are not among them."""
    from meshdiag.ir.fast import native
    from meshdiag.ir.model import of_class_py

    class Sub(LineValues):
        pass

    v = Value("%0", 3, 1, "{replicated}", "gspmd")
    items = [LineValues((v,)), v, Sub((v,)), LineValues(()), v, 3, None]
    want = [items[0], items[3]]
    assert of_class_py(items, LineValues) == want
    native_of_class = native("of_class")
    if native_of_class is not None:
        got = native_of_class(items, LineValues)
        assert got == want and all(a is b for a, b in zip(got, want, strict=True))
        assert native_of_class([], LineValues) == []
        with pytest.raises(TypeError):
            native_of_class(tuple(items), LineValues)
        with pytest.raises(TypeError):
            native_of_class(items, "LineValues")
