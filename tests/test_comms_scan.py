"""The collective scan and the byte formulas on hand-written HLO and Shardy text: every op and
async form, every replica-group spelling, the bytes each one moves, and what cannot be read."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshdiag.comms import cost
from meshdiag.comms.report import measure_module
from meshdiag.comms.scan import scan_text
from meshdiag.inputs.mesh_input import parse_mesh
from meshdiag.model.collective_bytes import array_bytes, dtype_bits

HLO = """\
HloModule jit_step, is_scheduled=true, num_partitions=8

%async_computation (p: f32[64,32]) -> f32[64,128] {
  %p = f32[64,32]{1,0} parameter(0)
  ROOT %all-gather.9 = f32[64,128]{1,0} all-gather(%p), channel_id=9, replica_groups=[2,4]<=[8], dimensions={1}, use_global_device_ids=true
}

ENTRY %main.0_spmd (param: f32[64,32]) -> f32[64,128] {
  %param = f32[64,32]{1,0} parameter(0), sharding={devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}
  %ag-start = (f32[64,32]{1,0}, f32[64,128]{1,0}) all-gather-start(%param), channel_id=1, replica_groups={{0,1,2,3},{4,5,6,7}}, dimensions={1}, use_global_device_ids=true, metadata={op_name="jit(step)/dot" source_file="model.py" source_line=12}
  %ag-done = f32[64,128]{1,0} all-gather-done(%ag-start)
  %cvt = bf16[64,128]{1,0} convert(%ag-done)
  %ag.2 = bf16[128,128]{1,0} all-gather(%cvt), channel_id=2, replica_groups=[4,2]<=[2,4]T(1,0), dimensions={0}, use_global_device_ids=true
  %ar-start = f32[64,32]{1,0} all-reduce-start(%param), channel_id=3, replica_groups={}, use_global_device_ids=true, to_apply=%add
  %ar-done = f32[64,32]{1,0} all-reduce-done(%ar-start)
  %rs = f32[16,32]{1,0} reduce-scatter(%param), channel_id=4, replica_groups=mesh['b'=2,'m'=4] {'m'}, dimensions={0}, to_apply=%add
  %a2a = (s8[16,32]{1,0}, s8[16,32]{1,0}) all-to-all(%x, %y), channel_id=5, replica_groups={{0,4},{1,5},{2,6},{3,7}}
  %cp-start = (f32[64,32]{1,0}, f32[64,32]{1,0}, u32[], u32[]) collective-permute-start(%param), channel_id=6, source_target_pairs={{0,1},{1,0},{2,2}}
  %cp-done = f32[64,32]{1,0} collective-permute-done(%cp-start)
  %async-start = ((f32[64,32]), f32[64,128], s32[]) async-start(%param), calls=%async_computation
  ROOT %async-done = f32[64,128]{1,0} async-done(%async-start)
}
"""

SDY = """\
module @jit_f attributes {mhlo.num_partitions = 8 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=4]>
  func.func @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) -> tensor<16x32xf32> {
    %0 = sdy.all_gather [{}, {"y"}] %arg0 out_sharding=<@mesh, [{"x"}, {}]> : tensor<16x32xf32>
    %1 = sdy.all_slice [{}, {"y"}] %0 out_sharding=<@mesh, [{"x"}, {"y"}]> : tensor<16x32xf32>
    %2 = sdy.all_reduce {"y"} %1 out_sharding=<@mesh, [{"x"}, {}]> : tensor<16x32xf32> loc(#loc3)
    %3 = sdy.reduce_scatter [{}, {"y"}] %2 out_sharding=<@mesh, [{"x"}, {"y"}]> : tensor<16x32xf32>
    %4 = sdy.all_to_all [{"x"}: 0->1, {"y":(2)2}: 1->0] %3 out_sharding=<@mesh, [{"y":(2)2}, {"y":(1)2, "x"}]> : tensor<16x32xbf16>
    %5 = sdy.collective_permute %4 out_sharding=<@mesh, [{"y":(1)2}, {"y":(2)2, "x"}]> : tensor<16x32xbf16>
    %6 = sdy.reshard %5 <@mesh, [{}, {}]> : tensor<16x32xbf16>
    %7 = sdy.all_gather [{"x", "y"}, {}] %3 out_sharding=<@mesh, [{}, {}]> : tensor<1024x32xf32>
    %8 = sdy.collective_permute %elsewhere out_sharding=<@mesh, [{"x"}, {"y"}]> : tensor<16x32xf32>
    return %6 : tensor<16x32xbf16>
  }
}
"""


def _rows(text, mesh=None):
    f = scan_text("t", text)
    assert f.problems == []
    (m,) = f.modules
    return {r.collective.name: r for r in measure_module(m, mesh).rows}, m


def test_hlo_every_form():
    rows, m = _rows(HLO, parse_mesh("b=2,m=4"))
    assert m.num_partitions == 8
    # -done halves and the generic async-start are not counted again
    assert set(rows) == {
        "%all-gather.9",
        "%ag-start",
        "%ag.2",
        "%ar-start",
        "%rs",
        "%a2a",
        "%cp-start",
    }
    ag = rows["%ag-start"]
    c = ag.collective
    assert (c.kind, c.is_async, c.results) == ("all-gather", True, (((64, 128), "f32"),))
    assert c.op_name == "jit(step)/dot" and c.source == "model.py:12" and c.dimensions == (1,)
    assert rows["%all-gather.9"].collective.is_async  # inside an async computation
    assert rows["%all-gather.9"].collective.computation == "async_computation"
    # bytes: f32[64,128] = 32 KiB gathered over 4 → 3/4 of it
    assert ag.traffic.sent == ag.traffic.received == 64 * 128 * 4 * 3 // 4
    assert ag.traffic.total == ag.traffic.sent * 8
    assert [a.name for a in ag.axes] == ["m"]
    # the all-gather fed by it through a convert: gathered over 4 × 2 = all 8 devices
    assert rows["%ag.2"].collective.gathered == 8 and rows["%ag.2"].axes[0].name == "b"
    assert rows["%ag.2"].per_device == 128 * 128 * 2 // 2
    # `{}`: one group of all 8 devices, 2(n-1)/n of the operand
    ar = rows["%ar-start"]
    assert ar.group_size == 8 and ar.per_device == 64 * 32 * 4 * 2 * 7 // 8
    assert [a.name for a in ar.axes] == ["b", "m"]
    # reduce-scatter: the operand is n results: (n-1)/n × 4 × f32[16,32]
    assert rows["%rs"].per_device == 3 * 16 * 32 * 4
    # all-to-all over a tuple: (n-1)/n of both parts
    assert rows["%a2a"].per_device == (2 * 16 * 32) // 2
    # collective-permute: the self pair moves nothing, 0 and 1 each send and receive once
    cp = rows["%cp-start"]
    assert cp.collective.pairs == ((0, 1), (1, 0), (2, 2))
    assert (cp.traffic.sent, cp.traffic.total) == (64 * 32 * 4, 2 * 64 * 32 * 4)
    # sorted by bytes per device, largest first
    got = [r.per_device for r in measure_module(m, None).rows]
    assert got == sorted(got, reverse=True)


def test_sdy_collectives():
    rows, m = _rows(SDY)
    assert list(m.meshes) == ["mesh"]
    g = rows["%0"]
    # the result type is global: the local shape comes from out_sharding (x=2 on dim 0)
    assert g.collective.results == (((8, 32), "f32"),)
    assert g.per_device == 8 * 32 * 4 * 3 // 4 and [a.name for a in g.axes] == ["y"]
    assert rows["%1"].per_device == 0  # all_slice: local
    assert rows["%2"].per_device == 8 * 32 * 4 * 2 * 3 // 4
    assert rows["%3"].collective.results == (((8, 8), "f32"),)
    assert rows["%3"].per_device == 3 * 8 * 8 * 4
    a2a = rows["%4"]  # two parameters: x (n=2) and y:(2)2 (n=2), each 1/2 of the operand
    assert a2a.collective.results == (((8, 8), "bf16"),)  # 16/2 × 32/(2·2)
    assert a2a.per_device == 2 * (8 * 8 * 2 // 2)
    # a permute from %4's layout: device (x, y1, y2) (y = 2·y1 + y2) holds tile (y2, 2·y1 + x)
    # before and (y1, 2·y2 + x) after: the 4 devices with y1 != y2 receive a new chunk
    cp = rows["%5"]
    assert cp.exact and cp.traffic == cost.Traffic(8 * 8 * 2, 8 * 8 * 2, 4 * 8 * 8 * 2)
    # without the operand's layout: every device's chunk, an upper bound
    unknown = rows["%8"]
    assert not unknown.exact and unknown.traffic.total == 8 * (8 * 8 * 4)
    assert rows["%6"].traffic is None and rows["%6"].collective.kind == "reshard"
    whole = rows["%7"]
    assert whole.collective.gathered == 8 and whole.per_device == 1024 * 32 * 4 * 7 // 8


@pytest.mark.parametrize(
    ("line", "at", "what"),
    [  # `at`: the text the problem's column points at
        (
            "  %a = f32[8]{0} all-reduce(%p), replica_groups={{0,1},{2,}}, to_apply=%add",
            "}}, to_apply",
            "a device id",
        ),
        ("  %a = f32[8]{0} all-gather(%p), replica_groups=[2,4]<=[3], dims={0}", "[2,4]", "iota"),
        (
            "  %a = f32[8]{0} collective-permute(%p), source_target_pairs={{0,1,2}}",
            "{{0,1,2}}",
            "pairs",
        ),
        ("  %a = f32[8]{0} all-gather(%p), replica_groups=mesh['x'=8] {'z'}", "{'z'}", "axes"),
    ],
)
def test_unreadable_groups_are_problems_with_columns(line, at, what):
    f = scan_text("t", "HloModule m, num_partitions=8\nENTRY %main {\n" + line + "\n}\n")
    (p,) = f.problems
    assert p.line == 3 and p.column == line.index(at) + 1 and what in p.message, p
    assert f.modules[0].collectives == []


def test_undeclared_sdy_mesh_is_a_problem():
    f = scan_text(
        "t",
        'module {\n  %0 = sdy.all_gather [{"x"}] %a out_sharding=<@nope, [{}]> : tensor<8xf32>\n}\n',
    )
    (p,) = f.problems
    assert p.line == 2 and "@nope" in p.message


@pytest.mark.parametrize(
    ("axes", "what"),
    [
        ('[{"z"}, {}]', "'z' is not in the mesh"),
        ('[{"x", "x"}, {}]', "named twice"),
        ('[{"y":(3)2}, {}]', "does not divide axis y=4"),
        ('[{"y":(1)2, "y"}, {}]', "named twice"),
    ],
)
def test_sdy_axes_off_the_mesh_are_problems(axes, what):
    # (checked without making the groups: `groups.chosen_factors`)
    f = scan_text(
        "t",
        'module {\n  sdy.mesh @mesh = <["x"=2, "y"=4]>\n'
        f"  %0 = sdy.all_gather {axes} %a out_sharding=<@mesh, [{{}}, {{}}]> : tensor<8x8xf32>\n}}\n",
    )
    (p,) = f.problems
    assert p.line == 3 and what in p.message, p
    assert f.modules[0].collectives == []


def test_pass_dump_sections_are_modules():
    text = (
        "// -----// IR Dump Before Foo (foo) ('builtin.module' operation: @m) //----- //\n"
        + SDY
        + "// -----// IR Dump After Foo (foo) ('builtin.module' operation: @m) //----- //\n"
        + SDY
    )
    f = scan_text("t", text)
    assert [m.section for m in f.modules] == [
        "IR Dump Before Foo (foo) ('builtin.module' operation: @m)",
        "IR Dump After Foo (foo) ('builtin.module' operation: @m)",
    ]
    assert [len(m.collectives) for m in f.modules] == [9, 9]


# -- the formulas ------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 4, 8, 16])
def test_ring_factors(n):
    r = 1 << 20
    # a partial byte counts whole (ceil): XLA pads shards, so real buffers divide evenly
    assert cost.all_gather(r, n, n).sent == math.ceil(Fraction(n - 1, n) * r)
    assert cost.reduce_scatter(r, n, n).sent == (n - 1) * r
    assert cost.all_reduce(r, n, n).sent == math.ceil(Fraction(2 * (n - 1), n) * r)
    assert cost.all_to_all(r, n, n).sent == math.ceil(Fraction(n - 1, n) * r)
    assert cost.all_gather(r, 1, 1).sent == 0


def test_worked_example():
    # an all-gather to f32[128,512] (256 KiB) over 4 devices: each receives 192 KiB
    assert cost.all_gather(array_bytes((128, 512), "f32"), 4, 8).received == 192 * 1024


@pytest.mark.parametrize(
    ("dtype", "bits"),
    [
        ("f32", 32),
        ("bf16", 16),
        ("pred", 8),
        ("s4", 4),
        ("f8e4m3fn", 8),
        ("c64", 64),
        ("i32", 32),
        ("ui8", 8),
        ("complex<f32>", 64),
        ("f64", 64),
        ("widget", None),
    ],
)
def test_dtype_bits(dtype, bits):
    assert dtype_bits(dtype) == bits


def test_permute_counts_busiest_device():
    t = cost.collective_permute(100, ((0, 1), (0, 2), (3, 3)))
    assert (t.sent, t.received, t.total) == (200, 100, 200)
    assert cost.collective_permute(100, ((0, 0),)) == cost.none()


# -- hostile text ------------------------------------------------------------------------------


def _mutations(rng, line: str):
    chars = "{}[](),=<>:'\"0123456789-% x"
    for _ in range(12):
        i = rng.randrange(len(line) + 1)
        yield line[:i]  # truncated
        yield line[:i] + rng.choice(chars) + line[i + 1 :]  # one character replaced
        yield line[:i] + rng.choice(chars) * rng.randint(1, 3) + line[i:]  # inserted


def test_mutated_collective_lines_never_raise():
    """Every mutation of every collective line of the real dumps either scans (and measures)
    or becomes a Problem with a line and column: the scan never raises."""
    from pathlib import Path

    from meshdiag.checks.context import CheckContext
    from meshdiag.pipeline.comms_checks import run_collective_checks

    rng = __import__("random").Random(5)
    root = Path(__file__).resolve().parent.parent / "fixtures" / "comms"
    mesh = parse_mesh("batch=2,model=4")
    ctx = CheckContext("t", mesh=mesh, collective_budget=0, remat_min_bytes=0)
    tried = problems = 0
    for path in sorted(root.rglob("*.*")):
        lines = path.read_text().splitlines()
        for k, line in enumerate(lines):
            if not any(w in line for w in ("replica_groups", "source_target", "= sdy.")):
                continue
            for bad in _mutations(rng, line):
                text = "\n".join(lines[:k] + [bad] + lines[k + 1 :])
                f = scan_text("t", text)
                run_collective_checks(f, ctx)
                for p in f.problems:
                    assert p.line == k + 1 and 1 <= p.column <= len(bad) + 1, (bad, p)
                tried += 1
                problems += bool(f.problems)
    assert tried > 1000 and problems > 100


def test_hlo_line_with_sdy_frontend_attribute_is_hlo():
    text = (
        "HloModule m, num_partitions=4\nENTRY %main {\n"
        "  %ag = f32[8,8]{1,0} all-gather(%p), replica_groups=[1,4]<=[4], dimensions={0}, "
        'frontend_attributes={xla.sdy.sharding="#sdy.sharding<@mesh, [{}, {}]>"}\n}\n'
    )
    rows, _ = _rows(text)
    assert rows["%ag"].per_device == 8 * 8 * 4 * 3 // 4


# -- the block scan against its line-by-line reference -------------------------------------------


def _texts():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "fixtures"
    files = sorted(p for p in root.rglob("*") if p.suffix in (".txt", ".mlir"))
    return [p.read_bytes() for p in files] + [HLO.encode(), SDY.encode(), b"", b"}\n  x"]


@pytest.mark.parametrize("block", [7, 64, 4096, 1 << 20])
def test_block_scan_equals_line_reference(block, monkeypatch):
    import io

    from meshdiag.comms import scan

    monkeypatch.setattr(scan, "BLOCK", block)
    texts = _texts()
    assert len(texts) > 40
    for data in texts:
        got = scan.scan_stream("t", io.BytesIO(data))
        assert got == scan.scan_stream_lines("t", io.BytesIO(data))


def test_whole_bytes_scan_equals_the_stream_scan():
    """A small file read whole is scanned without the stream (`_scan_whole`): the same
    collectives and problems, at the same lines, as `scan_stream` of its bytes; also with
    no final newline, no newline at all, and binary bytes."""
    import io

    from meshdiag.comms import scan

    extra = [HLO.encode().rstrip(b"\n"), b"HloModule m, num_partitions=2", b"\0" + HLO.encode()]
    for data in [*_texts(), *extra]:
        got = scan._scan_whole("t", data, scan.ScanMemo())
        assert got == scan.scan_stream("t", io.BytesIO(data), scan.ScanMemo())
    assert scan._scan_whole("t", HLO.encode(), scan.ScanMemo()).modules[0].collectives


def test_scan_bytes_without_remembering_the_file():
    """`remember=False` (lint, which keeps its own memo of recent files): the same scan,
    and the file is not kept in the scan's memo."""
    from meshdiag.comms import scan

    for data in [*_texts(), HLO.encode()]:
        kept, not_kept = scan.ScanMemo(), scan.ScanMemo()
        got = scan.scan_bytes("t", data, not_kept, remember=False)
        assert got == scan.scan_bytes("t", data, kept)
        assert not_kept.files.get(data, data) is None
        assert kept.files.get(data, data) is not None


def test_the_scan_tells_the_run_what_its_memo_holds():
    """Each new line and each new parse is weighed and told (`ScanMemo.hold`): a replica
    group list by its devices, once per distinct text; a line or text seen before tells
    nothing."""
    from meshdiag.comms import scan
    from meshdiag.comms.groups import parse_pairs, parse_replica_groups
    from meshdiag.ir import scancache

    listed = parse_replica_groups("{{0,1,2,3},{4,5,6,7}}")
    assert scan.held_bytes(listed) == scancache.PARSED_BYTES + 8 * scan.GROUP_ID_BYTES
    pairs = parse_pairs("{{0,1},{1,2},{2,3}}")
    assert scan.held_bytes(pairs) == scancache.PARSED_BYTES + 6 * scan.GROUP_ID_BYTES
    told: list[int] = []
    memo = scan.ScanMemo(told.append)
    first = scan.scan_bytes("a", HLO.encode(), memo, remember=False)
    assert told and sum(told) > 8 * scan.GROUP_ID_BYTES  # lines and groups
    n = len(told)
    again = scan.scan_bytes("b", HLO.encode(), memo, remember=False)
    assert len(told) == n  # every line and parse known
    assert [c.name for m in again.modules for c in m.collectives] == [
        c.name for m in first.modules for c in m.collectives
    ]


def test_a_line_too_long_is_skipped_and_counted(monkeypatch):
    import io

    from meshdiag.comms import scan

    limit = max(len(x) for x in HLO.splitlines()) + 1
    monkeypatch.setattr(scan, "BLOCK", 16)
    monkeypatch.setattr(scan, "MAX_LINE", limit)
    line = "  %x = f32[8]{0} all-reduce(%p), replica_groups={{0,1}}" + " " * limit
    text = HLO.replace("ENTRY %main.0_spmd", line + "\nENTRY %main.0_spmd")
    at = text.splitlines().index(line) + 1
    for data in (text.encode(), b"x" * 9000 + b"\n" + text.encode()):  # read whole / streamed
        f = scan.scan_stream("t", io.BytesIO(data))
        first = data.count(b"\n", 0, data.find(b"HloModule"))
        problems = [(p.line - first, f"longer than {limit} bytes" in p.message) for p in f.problems]
        assert problems == ([(at, True)] if first == 0 else [(0, True), (at, True)])
        names = [c.name for c in f.modules[0].collectives]
        assert "%x" not in names and len(names) == 7
        # the lines after it keep their numbers
        ref = scan.scan_stream_lines("t", io.BytesIO(HLO.encode()))
        expect = [c.line + (c.line >= at) for c in ref.modules[0].collectives]
        assert [c.line - first for c in f.modules[0].collectives] == expect


@pytest.mark.parametrize("block", [64, 1 << 20])
def test_scan_path_small_memoised_and_big_streamed(block, monkeypatch, tmp_path):
    import io
    from pathlib import Path

    from meshdiag.comms import scan

    monkeypatch.setattr(scan, "BLOCK", block)
    src = Path(__file__).resolve().parent.parent / "fixtures" / "comms" / "xla"
    data = (src / "reshard.after_optimizations.txt").read_bytes()
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_bytes(data)
    b.write_bytes(data)
    ref = scan.scan_stream_lines("x", io.BytesIO(data))
    fa, fb = scan.scan_path(str(a)), scan.scan_path(str(b))
    assert (fa.path, fb.path) == (str(a), str(b))
    assert fa.modules == fb.modules == ref.modules and fa.problems == ref.problems == []


def test_text_without_a_collective_word_scans_to_no_collective_and_no_own_problem():
    """`may_hold_collectives` is what lets lint skip the collective scan of a file: every text
    it says no to scans to no collective, and to no problem only this scan reports."""
    from meshdiag.comms.scan import may_hold_collectives

    texts = _texts()
    said_no = [t for t in texts if not may_hold_collectives(t)]
    assert said_no and len(said_no) < len(texts)
    for data in said_no:
        f = scan_text("t", data.decode("utf-8", "replace"))
        assert not any(m.collectives for m in f.modules)
        assert all(p.in_sharding_scan for p in f.problems)
    for word in ("all-gather(", "reduce-scatter(", "collective-permute-start(", "sdy.all_slice "):
        assert may_hold_collectives(f"  %x = {word}".encode())
    assert not may_hold_collectives(b'sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>')


def test_a_line_without_a_collective_opcode_is_never_read_as_a_collective():
    """The scan parses only lines where `_COLLECTIVE_OPCODE` finds an opcode: every line the
    parser reads as a collective (or as a broken one) has it."""
    from meshdiag.comms.scan import _COLLECTIVE_OPCODE, HLO_KINDS, _read_hlo
    from meshdiag.memo import Table

    lines = [x for t in _texts() for x in t.split(b"\n") if b"all-" in x or b"-scatter" in x]
    lines += [x.replace(b" all-", b"  all-").replace(b") all", b")all") for x in lines[:200]]
    for kind in HLO_KINDS:  # every opcode, its shape spaced or not, and named as an operand
        for shape in ("f32[8]{0}", "(f32[8]{0}, u32[])"):
            for gap in (" ", "  ", "\t", ""):
                lines.append(f"  %x = {shape}{gap}{kind}(%p), replica_groups={{{{0,1}}}}".encode())
        lines.append(f"  %y = f32[8]{{0}} add(%{kind}.1, %z)".encode())
    assert len(lines) > 200
    calls = Table()
    read = 0
    for raw in lines:
        what = _read_hlo(raw.decode("utf-8", "replace"), calls)[0]
        if what in ("op", "problem"):
            read += 1
            assert _COLLECTIVE_OPCODE.search(raw), raw
    assert read > 50


@pytest.mark.parametrize(
    ("text", "n"),
    [("65536", 65536), ("64KiB", 65536), ("1.5 MiB", 3 << 19), ("2GB", 2 * 10**9), (7, 7)],
)
def test_sizes(text, n):
    from meshdiag.notation.byte_size import human_bytes, parse_size

    assert parse_size(text, "x") == n
    assert human_bytes(65536) == "64.0 KiB" and human_bytes(768) == "768 B"


@pytest.mark.parametrize("bad", ["lots", "-1", "1 XB", True, -5])
def test_bad_sizes(bad):
    from meshdiag.errors import MeshdiagError
    from meshdiag.notation.byte_size import parse_size

    with pytest.raises(MeshdiagError):
        parse_size(bad, "collective-budget")


def test_partial_and_replica_groups_on_the_global_mesh():
    """Groups over some of a module's devices are no axes of its mesh; groups without a
    channel_id are replica ids, never judged against the mesh."""
    text = (
        "HloModule m, num_partitions=8\nENTRY %main {\n"
        "  %a = f32[8]{0} all-reduce(%p), channel_id=1, replica_groups={{0,1}}, to_apply=%add\n"
        "  %b = f32[8]{0} all-reduce(%p), replica_groups={{0,1}}, to_apply=%add\n}\n"
    )
    rows, _ = _rows(text, parse_mesh("batch=2,model=4"))
    assert rows["%a"].off_mesh and rows["%a"].mesh_source == "global"
    assert not rows["%b"].off_mesh and rows["%b"].mesh_source is None
    assert rows["%b"].per_device == rows["%a"].per_device == 8 * 4 * 2 // 2


# -- attributes found through their literal key --------------------------------------------

_REFERENCE_ATTRS = {
    "_CHANNEL": r"\bchannel_id=(\d+)",
    "_DIMS": r"(?<![\w_])dimensions=\{([\d,\s]*)\}",
    "_OP_NAME": r'\bop_name="((?:[^"\\]|\\.)*)"',
    "_SOURCE_FILE": r'\bsource_file="((?:[^"\\]|\\.)*)"',
    "_SOURCE_LINE": r"\bsource_line=(\d+)",
    "_STACK_FRAME": r"\bstack_frame_id=(\d+)",
}

_PIECES = st.sampled_from(
    [
        "channel_id=",
        "dimensions={",
        'op_name="',
        'source_file="',
        "source_line=",
        "stack_frame_id=",
        "x",
        "_",
        "é",
        " ",
        ",",
        "{",
        "}",
        '"',
        "\\",
        "12",
        "0, 1",
        "a.py",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=14).map("".join), st.integers(0, 20))
def test_keyed_attributes_find_what_the_word_boundary_regexes_find(line, start):
    """`text.keyed` finds an attribute through its literal key; the regex it replaces (a
    word boundary, the key, the value) finds the same value from the same start, on any
    text. The HloModule header's num_partitions is read the same way."""
    import re

    from meshdiag.comms import scan
    from meshdiag.ir.hlo import _num_partitions
    from meshdiag.ir.text import keyed

    for name, reference in _REFERENCE_ATTRS.items():
        want = re.compile(reference).search(line, start)
        got = keyed(line, *getattr(scan, name), start)
        assert (got.group(1) if got else None) == (want.group(1) if want else None), name
        assert (got.end() if got else None) == (want.end() if want else None), name
    header = "num_partitions=" + line
    want_np = re.search(r"\bnum_partitions=(\d+)", header)
    assert _num_partitions(header) == (int(want_np.group(1)) if want_np else None)


# -- lint measures only what its checks read -----------------------------------------------------


@pytest.mark.parametrize(
    "opts",
    [
        {},
        {"collective_budget": 1024},
        {"mesh": "batch=2,model=4"},
        {"mesh": "batch=2,model=4", "collective_budget": 0, "remat_min_bytes": 0},
        {"remat_min_bytes": 0},
    ],
)
def test_checks_find_the_same_on_only_the_collectives_they_judge(opts):
    """`judged_only` (lint) measures only the collectives some check's `judges(ctx)` keeps;
    every check must find exactly what it finds over all of them, on every fixture with
    collectives, under settings that make each check speak or stay silent."""
    from pathlib import Path

    from meshdiag.checks.context import CheckContext
    from meshdiag.checks.registry import collective_checks
    from meshdiag.comms.scan import scan_path
    from meshdiag.pipeline.comms_checks import judged_by, run_collective_checks

    root = Path(__file__).resolve().parent.parent / "fixtures"
    mesh = parse_mesh(opts["mesh"]) if "mesh" in opts else None
    ctx = CheckContext("t", **{**opts, "mesh": mesh})
    everything = collective_checks()
    found = measured = kept = 0
    for path in sorted(root.rglob("*.*")):
        if path.suffix not in (".txt", ".mlir", ".hlo"):
            continue
        f = scan_path(str(path))
        for code, check in everything.items():
            one = {code: check}
            whole, all_found = run_collective_checks(f, ctx, one)
            part, part_found = run_collective_checks(f, ctx, one, judged_only=True)
            assert part_found == all_found, (path, code)
            found += len(all_found)
            measured += sum(len(m.rows) for m in whole.modules)
            kept += sum(len(m.rows) for m in part.modules)
        keep = judged_by(everything, ctx)
        assert keep is None or all(
            isinstance(keep(c), bool) for m in f.modules for c in m.collectives
        )
    assert measured > 100
    if opts.get("collective_budget") is None and "mesh" not in opts:
        assert kept < measured  # only all-gathers are read then
    if opts.get("collective_budget") == 0:
        assert found > 0
