"""The streaming IR scanner on the seed dump, hand-made edge cases and broken input."""

from __future__ import annotations

import gzip
import io
import time
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshdiag.ir.scan import expand_paths, scan_file, scan_path, scan_paths
from meshdiag.layouts.engine import layout

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "fixtures" / "seed" / "distorted_mesh.mlir"


def scan_text(text: str | bytes, path: str = "t.mlir"):
    data = text.encode() if isinstance(text, str) else text
    return scan_file(path, io.BytesIO(data))


def errors(report):
    return [f for f in report.findings if f.severity == "error"]


# -- the seed dump -----------------------------------------------------------------------


def test_seed_dump():
    r = scan_path(str(SEED))
    assert errors(r) == []
    before, after = r.modules
    assert before.name == "ReplicateShardedData.6"
    assert before.section == "IR Dump Before AnalyzeMeshPass (analyze-mesh)"
    assert after.section == "IR Dump After AnalyzeMeshPass Failed (analyze-mesh)"
    assert (before.line, after.line) == (2, 13)
    (mesh,) = before.meshes
    assert mesh.mesh.axes == (("_axis_0", 4), ("_axis_1", 2)) and mesh.line == 3
    arg0 = before.values[0]
    assert (arg0.name, arg0.line, arg0.kind, arg0.shape) == ("%arg0", 4, "arg", (32, 32))
    line4 = SEED.read_text().splitlines()[3]
    assert line4[arg0.column - 1 :].startswith('#sdy.sharding<@mesh, [{}, {"_axis_0"}]>')
    lay = layout(arg0.hlo, arg0.shape, num_devices=8)
    for d in lay.devices():  # tile j (columns 8j..8j+8) on devices 2j, 2j+1
        j = d.device // 2
        assert d.slices == ((0, 32), (8 * j, 8 * j + 8))
    cons = before.values[1]
    assert (cons.name, cons.kind, cons.text) == ("%0", "constraint", "<@mesh, [{}, {}]>")
    assert [(d.severity, d.message, d.line) for d in before.diagnostics] == [
        ("error", "Mesh is not valid", 11)
    ]
    assert after.diagnostics == []
    assert [v.name for v in after.values] == ["%arg0", "%0"]


# -- MLIR forms ---------------------------------------------------------------------------

MLIR = """\
module @m attributes {mhlo.num_partitions = 8 : i32, mhlo.frontend_attributes = {xla.sdy.meshes = "{mesh = #sdy.mesh<[\\22x\\22=2, \\22y\\22=4]>, maximal_mesh = #sdy.mesh<[], device_ids=[3]>}"}} {
  sdy.mesh @empty = <[]>
  sdy.mesh @max = <[], device_ids=[5]>
  func.func @main(%arg0: tensor<8x16xf32> {mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding<@mesh, [{\\22x\\22}, {}]>"}, mhlo.sharding = "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"}, %arg1: tensor<?x4xf32>) -> (tensor<8x16xf32> {mhlo.sharding = "{replicated}"}, tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}]>}) {
    %0:2 = stablehlo.custom_call @foo(%arg0) {mhlo.sharding = "{{devices=[2,4]<=[8]}, {maximal device=1}}"} : (tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<4xf32>)
    %1 = sdy.reshard %0#0 <@mesh, [{"x"}, {"y"}]> : tensor<8x16xf32>
    %2 = ttir.foo %1 {ttcore.shard_status = #ttcore.shard_status<presharded>} : tensor<8x16xf32>
    %3 = stablehlo.custom_call @SPMDFullToShardShape(%2) {mhlo.sharding = "{manual}"} : (tensor<8x16xf32>) -> tensor<4x4xf32>
    %4 = "sdy.sharding_constraint"(%1) <{sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}> : (tensor<8x16xf32>) -> tensor<8x16xf32>
    return %1, %0#1 : tensor<8x16xf32>, tensor<4xf32>
  }
}
"""


def test_mlir_forms():
    r = scan_text(MLIR)
    assert errors(r) == []
    (m,) = r.modules
    assert m.num_partitions == 8
    meshes = {d.name: d for d in m.meshes}
    assert meshes["mesh"].source == "xla.sdy.meshes"
    assert meshes["mesh"].mesh.axes == (("x", 2), ("y", 4))
    assert meshes["maximal_mesh"].mesh.is_maximal
    assert meshes["empty"].mesh.is_empty and meshes["max"].mesh.device_ids == (5,)
    vals = [(v.name, v.kind, v.notation, v.shape) for v in m.values]
    assert vals == [
        ("%arg0", "arg", "sdy", (8, 16)),
        ("%arg0", "arg", "gspmd", (8, 16)),
        ("result#0", "result", "gspmd", (8, 16)),
        ("result#1", "result", "sdy", (4,)),
        ("%0#0", "custom_call", "gspmd", (8, 16)),
        ("%0#1", "custom_call", "gspmd", (4,)),
        ("%1", "reshard", "sdy", (8, 16)),
        ("%3", "custom_call", "gspmd", None),  # {manual}: 4x4 is what each device holds
        ("%4", "constraint", "sdy", (8, 16)),
    ]
    by = {(v.name, v.notation): v for v in m.values}
    assert by[("%arg0", "sdy")].text == '#sdy.sharding<@mesh, [{"x"}, {}]>'  # \22 decoded
    assert by[("%0#1", "gspmd")].hlo.kind == "maximal"
    assert by[("%3", "gspmd")].op == "stablehlo.custom_call @SPMDFullToShardShape"
    assert by[("%3", "gspmd")].local_shape == (4, 4)
    line = MLIR.splitlines()[5]
    assert line[by[("%1", "sdy")].column - 1 :].startswith('<@mesh, [{"x"}, {"y"}]>')
    # the sdy value resolves @mesh to the xla.sdy.meshes declaration
    assert by[("%1", "sdy")].hlo is not None


def test_manual_computation_local_shapes():
    text = """\
module @sm {
  sdy.mesh @mesh = <["a"=2, "b"=4]>
  func.func @main(%arg0: tensor<16x32xf32>) -> tensor<16x32xf32> {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"a"}, {"b"}]>] out_shardings=[<@mesh, [{"a"}, {}]>] manual_axes={"a"} (%arg1: tensor<8x32xf32>) {
      %1 = sdy.sharding_constraint %arg1 <@mesh, [{}, {"b"}]> : tensor<8x32xf32>
      sdy.return %1 : tensor<8x32xf32>
    } : (tensor<16x32xf32>) -> tensor<16x32xf32>
    %2 = sdy.sharding_constraint %0 <@mesh, [{"a"}, {"b"}]> : tensor<16x32xf32>
    return %2 : tensor<16x32xf32>
  }
}
"""
    (m,) = scan_text(text).modules
    v = {v.name + v.kind: v for v in m.values}
    assert v["%arg0manual_in"].local_shape == (8, 32) and v["%arg0manual_in"].shape == (16, 32)
    assert v["%0manual_out"].shape == (16, 32)
    inner = v["%1constraint"]
    assert inner.shape is None and inner.local_shape == (8, 32)
    assert v["%2constraint"].shape == (16, 32) and v["%2constraint"].local_shape is None


def test_split_file_and_new_style_headers():
    text = """\
// -----// IR Dump Before CanonicalizerPass: canonicalize{max-iterations=5} //----- //
module @a {
  func.func @f(%arg0: tensor<4xf32> {mhlo.sharding = "{replicated}"}) {
    return
  }
}

x.py:3:1: error: something failed
// -----// IR Dump After Foo Failed: foo{} ('builtin.module' operation: @a) //----- //
module @a {
}
// -----
module @b {
  func.func @f(%arg0: tensor<4xf32> {mhlo.sharding = "{maximal device=0}"}) {
    return
  }
}
"""
    mods = scan_text(text).modules
    assert [(m.name, m.section) for m in mods] == [
        ("a", "IR Dump Before CanonicalizerPass: canonicalize{max-iterations=5}"),
        ("a", "IR Dump After Foo Failed: foo{}"),
        ("b", None),
    ]
    (d,) = mods[0].diagnostics
    assert (d.message, d.location, d.line) == ("something failed", "x.py:3:1", 8)


HLO = """\
HloModule jit_f, entry_computation_layout={(f32[8,6]{1,0})->f32[8,6]{1,0}}, num_partitions=4

ENTRY %main.3_spmd (p: f32[4,6]) -> (f32[4,6], s32[]) {
  %p = f32[4,6]{1,0} parameter(0), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}, metadata={op_name="x{y}" source_file="a}b"}
  custom-call.3 = f32[4,6] custom-call(%p), custom_call_target="Sharding", sharding={devices=[2,2]<=[4]}
  ROOT %t = (f32[4,6]{1,0}, s32[]) tuple(%p, %c), sharding={{devices=[2,2]<=[2,2]T(1,0)}, {replicated}}
}
"""


def test_hlo_partitioned_and_tuples():
    (m,) = scan_text(HLO, "f.txt").modules
    assert (m.name, m.dialect, m.num_partitions, m.partitioned) == ("jit_f", "hlo", 4, True)
    vals = [(v.name, v.kind, v.shape, v.local_shape, v.text) for v in m.values]
    assert vals[0] == (
        "%p",
        "arg",
        None,
        (4, 6),
        "{devices=[2,1,2]<=[4] last_tile_dim_replicate}",
    )
    assert vals[1][:2] == ("custom-call.3", "custom_call")
    assert [v[0] for v in vals[2:]] == ["%t#0", "%t#1"]
    assert m.values[3].hlo.kind == "replicated" and m.values[3].local_shape == ()


# -- paths --------------------------------------------------------------------------------


def test_gzip_stdin_directory_order(tmp_path, monkeypatch):
    d = tmp_path / "d"
    (d / "sub").mkdir(parents=True)
    (d / "b.mlir").write_text(MLIR)
    with gzip.open(d / "sub" / "a.mlir.gz", "wt") as f:
        f.write(MLIR)
    # a walk leaves binaries known by name out without a word (XLA dumps hold many .o);
    # one known by its content is read and noted
    (d / "c.pb").write_bytes(b"\x08\x01\x00\x00binary")
    (d / "c.dat").write_bytes(b"\x08\x01\x00\x00binary")
    skipped: list[str] = []
    assert list(expand_paths([str(d)], skipped)) == [
        str(d / "b.mlir"),
        str(d / "c.dat"),
        str(d / "sub" / "a.mlir.gz"),
    ]
    assert skipped == [str(d / "c.pb")]
    reports = list(scan_paths([str(d)]))
    assert [Path(r.path).name for r in reports] == ["b.mlir", "c.dat", "a.mlir.gz"]
    assert len(reports[2].modules[0].values) == len(reports[0].modules[0].values)
    note = reports[1].findings[0]
    assert (note.code, note.severity) == ("MD001", "info") and "binary" in note.message
    assert reports[1].skipped == "binary"
    (named,) = scan_paths([str(d / "c.pb")])  # named on its own: read, and noted
    assert named.skipped == "binary" and "binary" in named.findings[0].message
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(HLO.encode())))
    (r,) = scan_paths(["-"])
    assert r.path == "<stdin>" and r.modules[0].name == "jit_f"


def test_missing_file_is_reported_and_others_continue(tmp_path):
    (tmp_path / "ok.mlir").write_text(MLIR)
    r1, r2 = scan_paths([str(tmp_path / "nope.mlir"), str(tmp_path / "ok.mlir")])
    assert errors(r1)[0].code == "MD001" and "cannot read" in errors(r1)[0].message
    assert r2.modules and errors(r2) == []


# -- broken input -------------------------------------------------------------------------


def test_parse_errors_are_located():
    text = (
        'func.func @f(%arg0: tensor<4xf32> {mhlo.sharding = "{devices=[2,2<=[4]}"}, '
        '%arg1: tensor<4xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"]>}) {\n'
    )
    r = scan_text(text)
    errs = errors(r)
    assert len(errs) == 2 and all(e.line == 1 for e in errs)
    col = text.index("{devices=[2,2<=") + 1
    assert errs[0].column >= col  # at or after the start of the annotation
    vals = r.modules[0].values
    assert [v.name for v in vals] == ["%arg0", "%arg1"] and all(v.sharding is None for v in vals)


def test_truncated_stray_brackets_invalid_utf8_binary(tmp_path):
    seed = SEED.read_bytes()
    cut = seed[: seed.index(b'[{}, {"_axis_0"}') + 6]  # truncated mid-annotation
    (tmp_path / "1_trunc.mlir").write_bytes(cut)
    (tmp_path / "2_stray.mlir").write_text(
        'module @x {\n  %0 = sdy.reshard %a <@mesh, [{"x"}}]> : tensor<4xf32>\n'
        '  %1 = foo {mhlo.sharding = "{devices=[2]0,1}}}"} : tensor<4xf32>\n}}}}\n'
    )
    (tmp_path / "3_utf8.mlir").write_bytes(
        b"module @u {\n  // caf\xe9\n"
        b'  func.func @f(%arg0: tensor<4xf32> {mhlo.sharding = "{replicated}"}) // \xff\n}\n'
    )
    (tmp_path / "4_junk.bin.mlir").write_bytes(bytes(range(256)) * 64)
    (tmp_path / "5_ok.mlir").write_text(MLIR)
    reports = list(scan_paths([str(tmp_path)]))
    assert len(reports) == 5
    trunc, stray, utf8, junk, ok = reports
    assert errors(trunc) and trunc.modules[0].values[0].sharding is None
    assert len(errors(stray)) == 2
    bad = sorted((f.line, f.column) for f in errors(utf8))
    assert bad == [(2, 9), (3, 74)]  # the column of the bad byte
    assert utf8.modules[0].values[0].hlo.kind == "replicated"
    assert junk.findings[0].severity == "info" and junk.modules == []
    assert errors(ok) == [] and len(ok.modules[0].values) == 9


def test_huge_mesh_line_is_refused_quickly(tmp_path):
    axes = ", ".join(f'"a{i}"=1' for i in range(300_000))
    p = tmp_path / "big.mlir"
    p.write_text(f'module @b {{\n  sdy.mesh @big = <[{axes}]>\n  sdy.mesh @ok = <["x"=2]>\n}}\n')
    t = time.monotonic()
    r = scan_path(str(p))
    assert time.monotonic() - t < 10
    (err,) = errors(r)
    assert err.line == 2
    assert [d.name for d in r.modules[0].meshes if d.mesh is not None] == ["ok"]


def test_100mb_line_bounded_memory(tmp_path):
    p = tmp_path / "long.mlir"
    chunk = b'"x"=1, ' * (1 << 17)
    with open(p, "wb") as f:
        f.write(b"module @l {\n  sdy.mesh @m = <[")
        for _ in range(100 * (1 << 20) // len(chunk)):
            f.write(chunk)
        f.write(b'"y"=2]>\n  sdy.mesh @after = <["z"=4]>\n}\n')
    tracemalloc.start()
    t = time.monotonic()
    try:
        r = scan_path(str(p))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.monotonic() - t < 20
    assert peak < 40 * (1 << 20)
    (err,) = errors(r)
    assert err.line == 2 and "longer than" in err.message
    assert [d.name for d in r.modules[0].meshes] == ["after"]
    assert r.modules[0].meshes[0].line == 3


@pytest.mark.parametrize("cut", [10, 200, 700, 1200])
def test_any_truncation_of_the_seed_scans(cut):
    r = scan_text(SEED.read_bytes()[:cut])
    assert all(f.code == "MD001" for f in r.findings)


MANUAL_MODULE = """\
module @jit_pm attributes {mhlo.num_partitions = 16 : i32} {
  sdy.mesh @mesh = <["i"=4, "j"=4]>
  func.func public @main(%arg0: tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"i"}, {}]>}) -> (tensor<8x64xf32>) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"i", ?}, {?}]>] out_shardings=[<@mesh, [{?}, {?}]>] manual_axes={"i"} (%arg1: tensor<8x64xf32>) {
      %1 = stablehlo.sine %arg1 : tensor<8x64xf32>
      %2 = sdy.sharding_constraint %1 <@mesh, [{?}, {?}]> : tensor<8x64xf32>
      sdy.return %2 : tensor<8x64xf32>
    } : (tensor<32x64xf32>) -> tensor<8x64xf32>
    return %0 : tensor<8x64xf32>
  }
}
"""


def test_a_line_seen_in_a_manual_region_keeps_its_per_device_shape_next_time():
    """A line first read inside a manual region is not replayed by the scanner on its own
    later (it would skip the builder, which makes the shape per-device): the second
    module's body values are per-device like the first's."""
    r = scan_text((MANUAL_MODULE + "// -----\n" + MANUAL_MODULE).encode())
    bodies = [[v for v in m.values if v.name == "%2"] for m in r.modules]
    assert [len(b) for b in bodies] == [1, 1]
    for (v,) in bodies:
        assert (v.shape, v.local_shape) == (None, (8, 64))


_DIAG_PIECES = [
    "error:", "warning:", "note:", "remark:", "error", ": ", ":", " ", "\t", "x.py", "a b",
    "3", "12", "%0 = ", "func.func @f(", "// ", "loc(", '"', "msg",
]  # fmt: skip


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(_DIAG_PIECES), max_size=12).map("".join))
def test_the_diagnostic_precheck_never_hides_a_diagnostic(s):
    """`mlir._may_be_diagnostic` is asked before searching a line for `: error:`: false only
    where `DIAG` cannot match."""
    from meshdiag.ir import mlir

    if mlir.DIAG.match(s):
        assert mlir._may_be_diagnostic(s)
    for diag in ("x.py:3:1: error: m", "error: m", "a:1:2: remark: m", "note: "):
        assert mlir.DIAG.match(diag) and mlir._may_be_diagnostic(diag)
    for other in ('func.func @f(%a: t {x = "y: error: z"})', "%0 = a : error: b", ""):
        assert not mlir._may_be_diagnostic(other)
