"""The inspect pipeline's memos live in one `RunMemos` per run: what a module shows is the
same with a run's memos, with fresh ones and with none, repeated modules are answered from
the run's memos, and the pipeline and report modules keep no cache of their own."""

from __future__ import annotations

import dataclasses
import functools
import io
import types
from pathlib import Path

import pytest
from rich.console import Console

from meshdiag.inputs.mesh_input import parse_mesh
from meshdiag.ir.model import FileReport
from meshdiag.ir.scan import scan_file
from meshdiag.memo import ContentTable, RunMemos, Table
from meshdiag.pipeline import dump_summary, inspect, module_summary
from meshdiag.pipeline.inspect import Inspected, ModuleChecker, file_json
from meshdiag.pipeline.module_summary import summarise_file, text_groups
from meshdiag.report import file_text
from tests.test_scan_columns import dump


def _console() -> Console:
    return Console(file=io.StringIO(), width=100, height=25, color_system=None, soft_wrap=False)


def test_shown_and_rendered_alike_with_and_without_memos():
    report = scan_file("d.mlir", io.BytesIO(dump(3)))
    console = _console()
    item = Inspected(report, [])
    memos = RunMemos()
    outs = [
        file_text.render_file(item, summarise_file(report, mesh=None, split="xla"), console),
        file_text.render_file(
            item, summarise_file(report, mesh=None, split="xla", memos=memos), console, memos
        ),
        file_text.render_file(
            item, summarise_file(report, mesh=None, split="xla", memos=memos), console, memos
        ),
    ]
    assert outs[0] == outs[1] == outs[2]
    assert outs[0].count("5 sharded values") == 3 and "%arg0@4:59" in outs[0]
    assert file_json(report) == file_json(report, memos=memos)


def test_repeated_modules_come_from_the_run_memos():
    report = scan_file("d.mlir", io.BytesIO(dump(3)))
    a, b, _ = report.modules
    memos = RunMemos()
    # the same annotated lines: one answer, kept in this run's memos only
    assert text_groups(a, memos) is text_groups(b, memos)
    assert text_groups(a, RunMemos()) is not text_groups(a, memos)
    assert len(memos.content("module_summary.groups")) == 1
    checker = ModuleChecker("d.mlir", None, None, "xla", {"none": lambda m, ctx: []}, memos)
    checker.check(a)
    assert len(memos.content("inspect.clean")) == 1
    checker.check(b)  # clean before: not checked again
    assert len(memos.content("inspect.clean")) == 1


def test_a_picture_drawn_before_in_the_run_is_not_laid_out_again(monkeypatch):
    """A module whose pictures the run drew before asks for no layout (the text writer
    has their renderings); with its renderings gone, its pictures lay out as they would
    have: the same text."""
    report = scan_file("d.mlir", io.BytesIO(dump(3)))
    laid = []
    real = module_summary.value_layout

    def counted(*args):
        laid.append(args[0].name)
        return real(*args)

    monkeypatch.setattr(module_summary, "value_layout", counted)
    console, memos = _console(), RunMemos()
    item = Inspected(report, [])
    text = file_text.render_file(
        item, summarise_file(report, mesh=None, split="xla", memos=memos), console, memos
    )
    assert laid and len(laid) < 3 * len(set(laid))  # the first module's pictures only
    first = list(laid)
    summary = summarise_file(report, mesh=None, split="xla", memos=memos)
    assert laid == first  # every picture known: none laid out
    memos.table("file_text.rendered", 4096).data.clear()
    assert file_text.render_file(item, summary, console, memos) == text
    assert len(laid) > len(first)  # laid out when drawn


def test_no_module_level_caches():
    """Nothing in these modules remembers across runs: no dict, memo or lru_cache at module
    level (constants are tuples, strings and numbers)."""
    for mod in (inspect, dump_summary, module_summary, file_text):
        for name, value in vars(mod).items():
            if isinstance(value, types.ModuleType) or name.startswith("__"):
                continue
            assert not isinstance(value, dict | list | set | Table | ContentTable), (mod, name)
            assert not isinstance(value, functools._lru_cache_wrapper), (mod, name)


# -- a file that repeats the one before ------------------------------------------------------

SEED = Path(__file__).resolve().parents[1] / "fixtures" / "seed" / "distorted_mesh.mlir"
HLO = Path(__file__).resolve().parents[1] / "fixtures" / "jax" / "mlp_compiled.hlo.txt"


def _counting_scans(monkeypatch) -> list[str]:
    scanned: list[str] = []
    real = inspect.scan_bytes

    def counted(path, *args, **kwargs):
        scanned.append(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(inspect, "scan_bytes", counted)  # what `scan_checked` calls
    return scanned


def test_a_file_repeating_the_one_before_is_answered_under_its_own_name(tmp_path, monkeypatch):
    """Every-pass dumps write an unchanged module again under the next pass's name: the
    second file is not scanned again, and its report, modules and findings are what a scan
    of it alone gives (its own path on every finding)."""
    a, b = tmp_path / "a.mlir", tmp_path / "b.mlir"
    a.write_bytes(SEED.read_bytes())
    b.write_bytes(SEED.read_bytes())
    scanned = _counting_scans(monkeypatch)
    memos = RunMemos()
    seen: list = []
    mesh = parse_mesh("batch=2,model=4")  # the seed's distorted mesh is then a finding
    first = inspect.scan_checked(str(a), mesh, None, "xla", each=seen.append, memos=memos)
    second = inspect.scan_checked(str(b), mesh, None, "xla", each=seen.append, memos=memos)
    assert scanned == [str(a)]
    alone = inspect.scan_checked(str(b), mesh, None, "xla", memos=RunMemos())
    assert second[0] == alone[0] and second[1:] == alone[1:]
    assert second[2] and {f.path for f in second[2]} == {str(b)}
    assert {f.path for f in first[2]} == {str(a)}
    assert len(seen) == 2 * first[1]  # the modules went to `each` for both files


def test_the_same_bytes_under_a_partitioned_name_are_scanned_again(tmp_path, monkeypatch):
    """A dump file named after a pass that runs after SPMD partitioning reads its HLO as
    per-device: the name is part of what the scan depends on."""
    a = tmp_path / "module_0000.jit_f.0001.before_spmd-partitioning.txt"
    b = tmp_path / "module_0000.jit_f.0002.after_spmd-partitioning.txt"
    a.write_bytes(HLO.read_bytes())
    b.write_bytes(HLO.read_bytes())
    scanned = _counting_scans(monkeypatch)
    memos = RunMemos()
    modules: list = []
    inspect.scan_checked(str(a), None, None, "xla", memos=memos)
    inspect.scan_checked(str(b), None, None, "xla", each=modules.append, memos=memos)
    assert scanned == [str(a), str(b)]
    assert modules and all(m.partitioned for m in modules)


def test_lint_answers_a_repeated_file_under_its_own_name(tmp_path, monkeypatch):
    """lint reads a small file once for both of its scans, and a file that repeats the one
    before gets the findings a lint of it alone gives."""
    from meshdiag.checks.registry import RULES
    from meshdiag.lint.config import LintSettings
    from meshdiag.lint.runner import lint_file

    a, b = tmp_path / "a.mlir", tmp_path / "b.mlir"
    a.write_bytes(SEED.read_bytes())
    b.write_bytes(SEED.read_bytes())
    scanned = _counting_scans(monkeypatch)
    settings = LintSettings(codes=frozenset(RULES), mesh=parse_mesh("batch=2,model=4"))
    first = lint_file(str(a), settings)
    second = lint_file(str(b), settings)
    assert scanned == [str(a)]
    alone = lint_file(str(b), dataclasses.replace(settings, memos=RunMemos()))
    assert second == alone and {f.path for f in second} == {str(b)}
    assert [dataclasses.replace(f, path=str(b)) for f in first] == second


def test_bytes_read_by_the_caller_scan_like_the_file(tmp_path):
    """`scan_checked(data=...)` (lint reads a small file once for both scans) gives what
    the file gives, with the run's memos or without."""
    a = tmp_path / "a.mlir"
    a.write_bytes(SEED.read_bytes())
    mesh = parse_mesh("batch=2,model=4")
    alone = inspect.scan_checked(str(a), mesh, None, "xla")
    for memos in (None, RunMemos()):
        given = inspect.scan_checked(str(a), mesh, None, "xla", memos=memos, data=a.read_bytes())
        assert given == alone and given[2]


def test_the_checks_verdicts_stay_within_their_budget(monkeypatch):
    """Past MAX_JUDGED judged column entries the verdicts start over, and the findings stay
    what a run with room for all of them gives."""
    from meshdiag.checks import values

    module = """HloModule m{k}, num_partitions=8

ENTRY %main (a: f32[8,8]) -> f32[8,8] {{
  %a{k} = f32[8,8]{{1,0}} parameter(0), sharding={{devices=[2,2]<=[4]}}
  %b = f32[7,8]{{1,0}} parameter(1), sharding={{devices=[8,1]<=[8]}}
  %c = f32[8]{{0}} parameter(2), sharding={{devices=[2,4]<=[8]}}
  %d = f32[8,8]{{1,0}} parameter(3), sharding={{devices=[2,4]<=[8]}}
}}
"""
    text = "\n".join(module.format(k=k) for k in range(4))
    report = scan_file("m.hlo.txt", io.BytesIO(text.encode()))
    mesh = None
    roomy = inspect.run_checks(report, mesh, None, "xla", memos=RunMemos())
    assert [f.code for f in roomy[:3]] == ["MD104", "MD105", "MD107"] and len(roomy) == 12
    monkeypatch.setattr(values, "MAX_JUDGED", 3)
    memos = RunMemos()
    for _ in range(3):
        tight = inspect.run_checks(report, mesh, None, "xla", memos=memos)
        assert tight == roomy
        book = memos.slot("checks.verdicts", values._Book)
        # each judged column entry, and each value key found clean, counts once
        held = sum(len(v.judged) + len(v.clean) for v in book.by_facts.values())
        assert book.judged == held
        assert book.judged <= 3 + 2 * max(len(m.items) for m in report.modules)


def test_recent_keeps_the_last_n_inputs_within_its_bytes():
    from meshdiag.memo import Recent

    r = Recent(n=3, max_bytes=100)
    data = [bytes([k]) * 10 for k in range(5)]
    for k, d in enumerate(data):
        r.put(d, ("key", d), k)
    # the last three are kept; the whole key is compared, the input only finds it
    assert [r.get(d, ("key", d)) for d in data] == [None, None, 2, 3, 4]
    assert r.get(data[2], ("other", data[2])) is None and r.held == 30
    big = b"b" * 95
    r.put(big, big, "v")  # over the byte budget with the others: they go, oldest first
    assert r.get(big, big) == "v" and r.held == 95 and r.get(data[4], ("key", data[4])) is None
    huge = b"h" * 101
    assert r.put(huge, huge, "w") == "w" and r.get(huge, huge) is None  # never held
    assert sum(len(e) for e in r.buckets.values()) == len(r.order) == 1


def test_recent_tells_inputs_apart_whose_samples_are_equal():
    """`Recent` finds entries by a sample of the input's bytes: inputs that differ only
    between the samples share a bucket, and each still gets its own value."""
    from meshdiag.memo import STRIDE, Recent, _bucket

    one = b"a" * (4 * STRIDE)
    other = one[: STRIDE + 1] + b"b" + one[STRIDE + 2 :]  # not at a sampled offset
    assert len(one) == len(other) and one != other and _bucket(one) == _bucket(other)
    r = Recent()
    r.put(one, ("key", one), 1)
    assert r.get(other, ("key", other)) is None
    r.put(other, ("key", other), 2)
    assert r.get(one, ("key", one)) == 1 and r.get(other, ("key", other)) == 2
    assert r.get(bytes(bytearray(other)), ("key", bytes(bytearray(other)))) == 2  # by value


def test_recent_compares_the_keys_of_a_shared_bucket_only_where_whole_hashes_match():
    """Inputs of one length whose samples are equal (every-pass files that differ in
    their last line) share a bucket: a look-up compares whole hashes first, not its key
    with each entry's (each key comparison read the inputs up to where they differ)."""
    from meshdiag.memo import STRIDE, Recent, _bucket

    compared = []

    class Key:
        def __init__(self, data: bytes) -> None:
            self.data = data

        def __eq__(self, other: object) -> bool:
            compared.append(1)
            return isinstance(other, Key) and self.data == other.data

        __hash__ = None  # type: ignore[assignment]

    base = b"x" * (10 * STRIDE + 1)
    inputs = [base + b"%03d" % k for k in range(200)]  # (the tail is not sampled)
    assert len({_bucket(d) for d in inputs}) == 1
    r = Recent()
    for k, d in enumerate(inputs):
        assert r.get(d, Key(d)) is None
        r.put(d, Key(d), k)
    compared.clear()
    for k, d in enumerate(inputs):
        assert r.get(bytes(bytearray(d)), Key(d)) == k  # an equal input, not the same object
    assert len(compared) == len(inputs)  # each one's own entry only
    assert r.get(base + b"999", Key(base + b"999")) is None


def test_a_file_repeating_one_a_few_files_back_is_answered_from_it(tmp_path, monkeypatch):
    """An every-pass dump also repeats a module a few passes later (another file between):
    that file is answered from the earlier one, under its own name."""
    a, x, b = tmp_path / "a.mlir", tmp_path / "x.txt", tmp_path / "b.mlir"
    a.write_bytes(SEED.read_bytes())
    x.write_bytes(HLO.read_bytes())
    b.write_bytes(SEED.read_bytes())
    scanned = _counting_scans(monkeypatch)
    memos = RunMemos()
    mesh = parse_mesh("batch=2,model=4")
    for p in (a, x):
        inspect.scan_checked(str(p), mesh, None, "xla", memos=memos)
    again = inspect.scan_checked(str(b), mesh, None, "xla", memos=memos)
    assert scanned == [str(a), str(x)]
    alone = inspect.scan_checked(str(b), mesh, None, "xla", memos=RunMemos())
    assert again == alone and {f.path for f in again[2]} == {str(b)}


_VALUE_RULES = (
    "md102_off_mesh_sharding",
    "md104_device_count_mismatch",
    "md105_uneven_shard",
    "md107_rank_mismatch",
    "md108_invalid_sharding",
)


#: values that repeat one another's sharding and shape under new names, clean and not:
#: uneven (MD105), over the wrong device count (MD104), of the wrong rank (MD107), with
#: devices out of range (MD108), on and off the global mesh (MD102)
_REPEATS = """HloModule r{k}, num_partitions=8

ENTRY %main (a: f32[8,8]) -> f32[8,8] {{
  %a{k} = f32[8,8]{{1,0}} parameter(0), sharding={{devices=[2,4]<=[8]}}
  %b{k} = f32[7,8]{{1,0}} parameter(1), sharding={{devices=[8,1]<=[8]}}
  %c{k} = f32[8]{{0}} parameter(2), sharding={{devices=[2,4]<=[8]}}
  %d{k} = f32[8,8]{{1,0}} parameter(3), sharding={{devices=[2,2]<=[4]}}
  %e{k} = f32[8,8]{{1,0}} parameter(4), sharding={{devices=[2,4]0,1,2,3,4,5,6,9}}
  %f{k} = f32[8,8]{{1,0}} parameter(5), sharding={{devices=[4,2]<=[2,4]T(1,0)}}
  %g{k} = f32[8,8]{{1,0}} copy(%a{k}), sharding={{devices=[2,4]<=[8]}}
  %h{k} = f32[8,6]{{1,0}} copy(%a{k}), sharding={{devices=[2,4]<=[8]}}
  %i{k} = f32[8]{{0}} copy(%c{k}), sharding={{devices=[8]<=[8]}}
}}
"""


def _fixture_reports():
    """Every fixture scanned as one run scans them: with one scanner memo, so a sharding
    text is parsed once (the checks name parsed shardings by identity)."""
    from meshdiag.ir.scancache import ScanCache

    root = Path(__file__).resolve().parent.parent / "fixtures"
    files = sorted(p for p in root.rglob("*") if p.suffix in (".txt", ".mlir"))
    assert len(files) > 40
    cache = ScanCache()
    reports = [scan_file(str(p), io.BytesIO(p.read_bytes()), cache=cache) for p in files]
    text = "\n".join(_REPEATS.format(k=k) for k in range(3))
    return [*reports, scan_file("repeats.txt", io.BytesIO(text.encode()), cache=cache)]


@pytest.mark.parametrize("learned", [True, False])
def test_values_found_clean_are_not_judged_again_and_findings_stay(monkeypatch, learned):
    """A value whose key (`DECIDES`) was found clean under the same facts is not judged
    again; the findings over every fixture, with and without the global mesh, are what
    judging every value gives (each rule's key naming the value object itself).
    `learned=False`: no line learned (as most of a big file of new lines), every value is
    its module's own."""
    import importlib

    from meshdiag.ir import linememo
    from meshdiag.ir.model import Value

    if not learned:
        monkeypatch.setattr(linememo, "learnable", lambda b: False)
    reports = _fixture_reports()
    items = [it for r in reports for m in r.modules for it in m.items]
    assert all(it.__class__ is Value for it in items) != learned
    mesh = parse_mesh("batch=2,model=4")

    def findings():
        memos = RunMemos()
        return [
            inspect.run_checks(r, m, "tt-mlir", "xla", memos=memos)
            for m in (None, mesh)
            for r in reports
        ]

    calls = {"judged": 0}
    rules = [importlib.import_module(f"meshdiag.checks.{name}") for name in _VALUE_RULES]
    for rule in rules:
        judge = rule._judge

        def counted(v, facts, memos, judge=judge):
            calls["judged"] += 1
            return judge(v, facts, memos)

        monkeypatch.setattr(rule, "_judge", counted)
    keyed = findings()
    with_keys = calls["judged"]
    from meshdiag.checks.keys import Decides

    class Fresh(Decides):
        """A key of each value object alone (a key must be the same each time it is asked):
        every value judged."""

        def __init__(self) -> None:
            self.fields = ()
            self.codes = None  # Python only

        def __call__(self, v):
            return ("this value", id(v))

    for rule in rules:
        monkeypatch.setattr(rule, "DECIDES", Fresh())
    calls["judged"] = 0
    assert findings() == keyed
    codes = {f.code for fs in keyed for f in fs}
    assert {"MD102", "MD104", "MD105", "MD107", "MD108"} <= codes, codes
    assert calls["judged"] > 2 * with_keys  # the keys answer most values


def test_findings_are_the_same_whether_a_modules_lines_are_its_own_or_shared(monkeypatch):
    """A module holding values of its own lines (none learned, or some: a big file's) is
    judged without first asking whether all its entries were judged, and asks for their
    identities only when something has findings; its findings, at every line and column,
    are those of the same modules with their lines learned and shared."""
    from meshdiag.ir import linememo

    mesh = parse_mesh("batch=2,model=4")

    def findings():
        memos = RunMemos()
        reports = _fixture_reports()
        return [
            inspect.run_checks(r, m, "tt-mlir", "xla", memos=memos)
            for m in (None, mesh)
            for r in reports
        ]

    shared = findings()
    monkeypatch.setattr(linememo, "learnable", lambda b: False)
    own = findings()
    assert own == shared
    assert sum(len(fs) for fs in own) > 50
    # mixed: every other new line learned (as a big file's sampled lines are)
    turn = iter(range(10**9))
    monkeypatch.setattr(linememo, "learnable", lambda b: next(turn) % 2 == 0)
    assert findings() == shared


def test_a_replayed_module_writes_its_json_once_per_setting(monkeypatch):
    """The same module object again (a replayed file) gets its JSON from its identity,
    whatever its values (one-off ones too); another setting writes it afresh, and every
    answer is what writing it without memos gives."""
    import json

    mesh = parse_mesh("batch=2,model=4")
    modules = [m for r in _fixture_reports() for m in r.modules][:40]
    assert any(
        any(it.__class__ is inspect.Value for it in m.entries()[0]) for m in modules
    )  # one-off values among them
    monkeypatch.setattr(inspect, "MODULE_JSON_BYTES", 1 << 30)  # keep every one here
    memos = RunMemos()
    made = []
    original = inspect.module_json
    monkeypatch.setattr(inspect, "module_json", lambda *a, **k: made.append(1) or original(*a, **k))
    for setting in (
        {"mesh": None, "split": "xla", "layouts": False},
        {"mesh": mesh, "split": "chunk", "layouts": True},
    ):
        first = [inspect.module_json_bytes(m, memos=memos, **setting) for m in modules]
        before = len(made)
        again = [inspect.module_json_bytes(m, memos=memos, **setting) for m in modules]
        assert again == first and len(made) == before  # nothing written again
        fresh = [json.dumps(original(m, memos=RunMemos(), **setting)).encode() for m in modules]
        assert first == fresh


def test_one_off_values_group_under_the_texts_shared_lines_do(monkeypatch):
    """`text_groups` reads a module's own values inline and its shared lines through their
    rows: every fixture module read with no line learned (every value its module's own)
    groups as when its lines are learned, text by text: counts, first places, values."""
    from meshdiag.ir import linememo
    from meshdiag.ir.model import Value

    def groups(reports):
        out = []
        for r in reports:
            for m in r.modules:
                g = text_groups(m, RunMemos())
                out.append(
                    [
                        (t, n, [(name, m.lines[i], col) for name, i, col in firsts], len(vals))
                        for t, (n, firsts, vals) in g.items()
                    ]
                )
        return out

    learned = _fixture_reports()
    with monkeypatch.context() as mp:
        mp.setattr(linememo, "learnable", lambda b: False)
        own = _fixture_reports()
    assert all(it.__class__ is Value for r in own for m in r.modules for it in m.items)
    got, want = groups(own), groups(learned)
    assert sum(map(len, want)) > 100
    # distinct values: one per value when each is its own, one per line's when shared
    assert [[g[:3] for g in m] for m in got] == [[g[:3] for g in m] for m in want]


def test_a_replayed_report_copies_every_field_of_the_report():
    """`Scanned.replay` makes the report field by field: a field added to FileReport must
    be copied there too."""
    assert [f.name for f in dataclasses.fields(FileReport)] == [
        "path",
        "modules",
        "findings",
        "skipped",
    ]


def test_a_modules_rows_spell_each_value_as_written_whatever_it_shares():
    """`dump_summary._module_rows` works out a value's layout key and spelling once per
    (text, notation, parsed objects) in a module: values sharing one parsed tiled form but
    written differently (a V1 device list and its V2 spelling) are one layout, each
    spelling counted as written."""
    from meshdiag.ir.model import ModuleReport, Value
    from meshdiag.notation.gspmd import parse_gspmd

    v1, v2 = "{devices=[2,1]0,1}", "{devices=[2,1]<=[2]}"
    h = parse_gspmd(v2)
    values = [
        Value(name, 3 + k, 5, text, "gspmd", "op", None, (4, 8), None, "f32", None, h, h)
        for k, (name, text) in enumerate([("%a", v1), ("%b", v2), ("%c", v1)])
    ]
    m = ModuleReport("m", 1, "hlo", values=values)
    rows = dump_summary._module_rows(m, None, RunMemos())
    assert len(rows) == 1
    (row,) = rows.values()
    assert row[0] == 3 and row[1] == {v1: 2, v2: 1}


# -- what the run's memos hold ---------------------------------------------------------------


def test_the_run_memos_start_over_past_what_they_hold():
    """Past `max_held` bytes of parses told (`hold`), every memo of the run is emptied in
    place: one a caller holds is the run's still."""
    from meshdiag.checks.values import _Book
    from meshdiag.comms.scan import ScanMemo
    from meshdiag.layouts.engine import LayoutMemo

    memos = RunMemos(max_held=100_000)
    cache = inspect.scan_cache(memos)
    scan_file("d.mlir", io.BytesIO(dump(2)), cache=cache)
    memos.table("t").put("k", 1)
    memos.identity("i").put(cache, 1)
    memos.content("c").put("k", 3, 1)
    memos.last("l").put("k", 1)
    memos.recent("r").put(b"data", "k", 1)
    memos.slot("d", dict)["k"] = 1
    book = memos.slot("checks.verdicts", _Book)
    book.by_facts["k"], book.judged = None, 5
    memos.slot("comms.scan", ScanMemo).calls.put("k", 1)
    memos.slot("layouts", lambda: LayoutMemo(max_devices=10))
    assert len(cache._parses) > 0 and memos._held > 0  # the scan told what it parsed
    memos.hold(100_000 - memos._held)  # at the budget: kept
    assert memos.table("t").get("k") == 1
    memos.hold(7)
    assert memos._held == 7  # (what the caller told of, kept as it started over)
    assert inspect.scan_cache(memos) is cache and len(cache._parses) == 0
    assert len(memos.table("t")) == len(memos.identity("i")) == len(memos.content("c")) == 0
    assert memos.last("l").get("k") is None and memos.recent("r").get(b"data", "k") is None
    assert memos.slot("d", dict) == {} and memos.slot("checks.verdicts", _Book).judged == 0
    assert not book.by_facts and len(memos.slot("comms.scan", ScanMemo).calls) == 0


FIXTURE_DIR = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.mark.parametrize(
    "args",
    [
        ["inspect", "-q", "-j1"],
        ["inspect", "-q", "-j1", "--format", "json"],
        ["inspect", "-q", "-j1", "--mesh", "batch=2,model=4"],
        ["lint", "-j1", "--format", "json"],
        ["lint", "-j1", "--format", "json", "--select", "MD2", "--collective-budget", "1KiB"],
        ["comms", "--format", "json", "--mesh", "2x4"],
    ],
)
def test_memos_starting_over_at_every_parse_change_no_output(args, capsys, monkeypatch):
    """Memos only save work: with the run's memos emptied at every sharding or mesh parsed
    (a budget of 0 bytes), every fixture gives what it gives with room for them all."""
    _alike_when_starting_over_at_every_parse([*args, str(FIXTURE_DIR)], capsys, monkeypatch)


def _alike_when_starting_over_at_every_parse(argv: list[str], capsys, monkeypatch) -> None:
    """`meshdiag argv` writes the same with a budget of 0 bytes (the run's memos emptied at
    every parse, more than 100 times) as with room for every memo."""
    from meshdiag import memo
    from meshdiag.cli.app import main

    def run() -> str:
        with pytest.raises(SystemExit):
            main(argv)
        return capsys.readouterr().out

    roomy = run()
    starts = []
    real = RunMemos.start_over
    monkeypatch.setattr(RunMemos, "start_over", lambda self: starts.append(1) or real(self))
    monkeypatch.setattr(memo, "MAX_HELD_BYTES", 0)
    assert run() == roomy
    assert len(starts) > 100


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_streamed_file_reads_alike_when_the_memos_start_over_at_every_parse(
    fmt, tmp_path, capsys, monkeypatch
):
    """A file big enough to be streamed in blocks (its line memo learning and probing as
    it goes) gives the same report when the run's memos start over at every parse, in
    the middle of its blocks."""
    from tests.test_stream_memory import write_big

    big = tmp_path / "big.mlir"
    write_big(big, 3)
    argv = ["inspect", "-q", "-j1", "--format", fmt, str(big)]
    _alike_when_starting_over_at_every_parse(argv, capsys, monkeypatch)


def test_a_module_head_json_is_remembered_by_every_field_it_prints():
    """A module's JSON without its values is kept per distinct head (name, line, section,
    dialect, partitioning, meshes, diagnostics): kept, it is `json.dumps` of the head; and
    a module that differs in any one of them, a mesh's device order included, gets its own."""
    import json

    from meshdiag.ir.model import Diagnostic, MeshDecl, ModuleReport
    from meshdiag.model.mesh import Mesh

    def module(**change):
        mesh = change.pop("mesh", Mesh((("x", 2), ("y", 2)), (0, 1, 2, 3)))
        decl = MeshDecl("mesh", mesh, 2, 3, '<["x"=2, "y"=2]>', change.pop("source", "sdy.mesh"))
        diags = change.pop("diagnostics", [Diagnostic("error", "Mesh is not valid", 9)])
        fields = {"name": "m", "line": 1, "dialect": "mlir", "num_partitions": 4, **change}
        return ModuleReport(meshes=[decl], diagnostics=diags, **fields)

    variants = [
        module(),
        module(name="n"),
        module(line=2),
        module(section="IR Dump Before X"),
        module(dialect="hlo"),
        module(partitioned=True),
        module(num_partitions=8),
        module(mesh=Mesh((("x", 2), ("y", 2)), (1, 0, 2, 3))),
        module(mesh=Mesh((("x", 4),))),
        module(mesh=None),
        module(source="xla.sdy.meshes"),
        module(diagnostics=[]),
        module(diagnostics=[Diagnostic("warning", "Mesh is not valid", 9)]),
        module(diagnostics=[Diagnostic("error", "Mesh is not valid", 9, 1, "a.py:1:1")]),
    ]
    memos = RunMemos()
    texts = [inspect._head_json_text(m, memos) for m in variants]
    assert texts == [json.dumps(inspect.module_json(m, values=False)) for m in variants]
    assert len(set(texts)) == len(variants)
    assert [inspect._head_json_text(m, memos) for m in variants] == texts  # kept
    kept = memos.table("inspect.module_head_json")
    assert len(kept.data) == len(variants)
    # a head listing a big mesh's devices is written each time, not held
    big = module(mesh=Mesh((("x", 64), ("y", 64))))
    text = inspect._head_json_text(big, memos)
    assert len(text) > inspect.MODULE_HEAD_BYTES
    assert text == json.dumps(inspect.module_json(big, values=False))
    assert len(kept.data) == len(variants)


def test_a_values_devices_json_is_kept_per_layout_and_only_when_short():
    """`inspect --layouts` keeps each distinct layout's devices JSON for the values after
    it (every-pass dumps lay the same values out again), keyed by all its layout is made
    from, and never a long one (a value over many devices is formatted each time)."""
    import json

    from meshdiag.ir.scan import scan_bytes

    def values(text: str):
        (m,) = scan_bytes("x.mlir", text.encode()).modules
        return m, m.values

    sig = (
        "module @m attributes {{mhlo.num_partitions = {n} : i32}} {{\n  func.func @f("
        '%a: tensor<8x4xf32> {{mhlo.sharding = "{s}"}}, '
        '%b: tensor<8x4xf32> {{mhlo.sharding = "{s}"}}, '
        '%c: tensor<6x4xf32> {{mhlo.sharding = "{s}"}}) -> tensor<8x4xf32> {{\n'
        "    return %a : tensor<8x4xf32>\n  }}\n}}\n"
    )
    memos = RunMemos()
    kept = memos.table("inspect.devices_json")
    m, (a, b, c) = values(sig.format(n=8, s="{devices=[4,2]<=[8]}"))
    texts = [inspect.devices_json_text(v, m, None, "xla", memos) for v in (a, b, c)]
    for v, text in zip((a, b, c), texts, strict=True):
        want = inspect.value_json(v, m, None, layouts=True)["devices"]
        assert json.loads(text) == want
    assert texts[0] == texts[1] != texts[2]  # another shape, another layout
    assert len(kept.data) == 2
    assert inspect.devices_json_text(a, m, None, "array-split", memos) == texts[0]
    assert len(kept.data) == 3  # another split rule: kept apart
    # 64 devices: longer than is kept
    m, (a, b, c) = values(sig.format(n=64, s="{devices=[8,8]<=[64]}"))
    text = inspect.devices_json_text(a, m, None, "xla", memos)
    assert len(text) > inspect.DEVICES_JSON_MAX_CHARS
    assert json.loads(text) == inspect.value_json(a, m, None, layouts=True)["devices"]
    assert len(kept.data) == 3


def test_recent_files_an_input_under_its_own_bucket_whatever_was_asked_before():
    """`Recent` keeps the bucket of the input last asked for (a miss is put right after):
    an input put after another was asked, or asked again after others were put, is found
    under its own."""
    from meshdiag.memo import Recent, _bucket

    r = Recent()
    a, b, c = b"a" * 500, b"b" * 500, bytes(b"c" + b"a" * 499)
    assert r.get(a, ("a",)) is None
    r.put(b, ("b",), 2)  # asked: a; put: b
    r.put(a, ("a",), 1)
    assert r.get(b, ("b",)) == 2 and r.get(a, ("a",)) == 1
    assert r.get(c, ("c",)) is None
    r.put(c, ("c",), 3)
    assert [r.get(x, (k,)) for x, k in ((a, "a"), (b, "b"), (c, "c"))] == [1, 2, 3]
    assert all(_bucket(e[3]) == k for k, es in r.buckets.items() for e in es)
    assert len(r.buckets) == 3
    r.clear()
    assert r.get(a, ("a",)) is None and r.asked[0] is a
