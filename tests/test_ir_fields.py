"""The one-pass field readers (`ir/fields.py`) against the general MLIR reader: every line
they accept gives the same values (names, lines, columns, kinds, ops, shapes, parses) and
problems as when the general reader reads it, and the lines they refuse are read by it."""

from __future__ import annotations

import io

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scan_reference import value_fields

from meshdiag.ir import fields
from meshdiag.ir.scan import scan_file
from meshdiag.ir.scancache import ScanCache

HEAD = 'module @m {\n  sdy.mesh @mesh = <["x"=2, "y"=4]>\n  sdy.mesh @other = <["x"=8]>\n'


def scanned(body: str):
    text = HEAD + body + "\n}\n"
    r = scan_file("m.mlir", io.BytesIO(text.encode()))
    values = [value_fields(v) for m in r.modules for v in m.values]
    return values, [f.to_json() for f in r.findings]


def general(monkeypatch, body: str):
    """`scanned` with the field readers refusing every line and no prototype kept: every
    way to them (`_op`'s, a signature's, the walker's copies) goes to the general reader."""
    with monkeypatch.context() as mp:
        refuse(mp)
        return scanned(body)


def refuse(mp) -> None:
    mp.setattr(fields, "constraint_fields", lambda *a: None)
    mp.setattr(fields, "entry_fields", lambda *a: None)
    mp.setattr(fields, "op_fields", lambda *a: None)
    # no prototype either: no value is made from one (test_plain_values.py)
    mp.setattr(ScanCache, "keep_proto", lambda *a: None)


def used(monkeypatch, body: str) -> int:
    """How many values the field readers read themselves."""
    count = 0
    real_c, real_s, real_o = fields.add_constraint, fields.signature_entry, fields.op_line

    def c(*a):  # every constraint line read by its fields ends here, whichever way it came
        nonlocal count
        real_c(*a)
        count += 1

    def s(*a):
        nonlocal count
        ok = real_s(*a)
        count += ok
        return ok

    def o(*a):
        nonlocal count
        ok = real_o(*a)
        count += ok
        return ok

    with monkeypatch.context() as mp:
        mp.setattr(fields, "add_constraint", c)
        mp.setattr(fields, "signature_entry", s)
        mp.setattr(fields, "op_line", o)
        scanned(body)
    return count


FAST = [
    '    %5 = sdy.sharding_constraint %4 <@mesh, [{"x"}, {}]> : tensor<16x24xf32>',
    '    %5 = sdy.reshard %4 <@mesh, [{}, {"y", "x"}]> : tensor<16x24xbf16>',
    "    %a.1 = sdy.sharding_constraint %b <@other, [{}]> : tensor<f32>",
    '    %5 = sdy.sharding_constraint %4 <@mesh, [{"y":(1)2}, {"x"}], replicated={"y":(2)2}> '
    ": tensor<8x8xf32>",
    '    %5 = sdy.sharding_constraint %4 <@mesh, [{"x", ?}, {?}]> : tensor<16x24xf32>  ',
    '  func.func @main(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}'
    ', %arg1: tensor<8xi32> {sdy.sharding = #sdy.sharding<@other, [{"x"}]>}) -> tensor<8xi32> {',
    # errors the parser reports: read by the field reader, reported the same
    '    %5 = sdy.sharding_constraint %4 <@mesh, [{"z"}, {}]> : tensor<16x24xf32>',
    '    %5 = sdy.sharding_constraint %4 <@nope, [{"x"}]> : tensor<16xf32>',
    '    %5 = sdy.sharding_constraint %4 <@mesh, [{"x"}]> : tensor<16x24xf32>',
    # a bracket inside a quoted axis name: balanced for the bracket matcher too
    '    %5 = sdy.sharding_constraint %4 <@mesh, [{"x]"}, {}]> : tensor<16x24xf32>',
    # the location MLIR prints with debug info
    '    %5 = sdy.sharding_constraint %4 <@mesh, [{"x"}, {}]> : tensor<16x24xf32> loc(#loc3)',
    '    %5 = sdy.reshard %4 <@mesh, [{"x"}, {}]> : tensor<16x24xf32> loc("a/b.py":3:1) ',
    '  func.func @main(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}'
    ' loc("x"), %arg1: tensor<8xi32> {sdy.sharding = #sdy.sharding<@other, [{"x"}]>} loc(#loc)'
    ") -> tensor<8xi32> {",
    # signature entries as XLA's export prints them: a GSPMD string
    '  func.func @main(%arg0: tensor<16x8xf32> {mhlo.sharding = "{devices=[2,1,4]<=[8] '
    'last_tile_dim_replicate}"}, %arg1: tensor<8xi32> {mhlo.sharding = "{replicated}"} '
    'loc("x")) -> tensor<8xi32> {',
    '  func.func @main(%arg0: tensor<16x8xf32> {mhlo.sharding = "{devices=[3,1]<=[8]}"}) {',
    # op lines as Shardy's propagation and XLA's export print them
    "    %2 = stablehlo.dot_general %0, %1, contracting_dims = [1] x [0] {sdy.sharding = "
    '#sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule'
    "<([i, k], [k, j])->([i, j]) {i=16, j=8, k=4} reduction={k}>} : (tensor<16x4xf32>, "
    "tensor<4x8xf32>) -> tensor<16x8xf32>",
    '    %3 = stablehlo.tanh %2 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>} '
    ": tensor<16x8xf32>",
    '    %3 = "stablehlo.tanh"(%2) {sdy.sharding = #sdy.sharding_per_value<[<@other, [{}, {}]>]>}'
    " : (tensor<16x8xf32>) -> tensor<16x8xf32> loc(#loc7)",
    "    %11 = stablehlo.reduce(%9 init: %10) applies stablehlo.maximum across dimensions = [1] "
    '{mhlo.sharding = "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"} : (tensor<16x8xf32>, '
    "tensor<f32>) -> tensor<16xf32>",
    "    %4 = stablehlo.transpose %3, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>"
    ', sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {"x"}]>]>, xla_shape = "f32[8,16]{0,1}"}'
    " : (tensor<16x8xf32>) -> tensor<8x16xf32>",
    '    %5 = stablehlo.add %4, %4 {mhlo.sharding = "{replicated}"} : tensor<8x16xbf16>',
    '    %5 = stablehlo.add %4, %4 {mhlo.sharding = "{maximal device=3}"} : tensor<i32>  ',
    # errors the parsers report: read by the field reader, reported the same
    '    %3 = stablehlo.tanh %2 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"q"}, {}]>]>} '
    ": tensor<16x8xf32>",
    "    %3 = stablehlo.tanh %2 {sdy.sharding = #sdy.sharding_per_value<[<@gone, [{}, {}]>]>} "
    ": tensor<16x8xf32>",
    '    %5 = stablehlo.add %4, %4 {mhlo.sharding = "{devices=[3,1]<=[8]}"} : tensor<8x16xf32>',
]
GENERAL = [
    '    %5:2 = sdy.sharding_constraint %4 <@mesh, [{"x"}, {}]> : tensor<16x24xf32>',
    '    %5 = sdy.sharding_constraint %4 <@mesh, [{"x"}, {}]> : tensor<?x24xf32>',
    '    %5 = sdy.sharding_constraint %4 <@mesh, [{"x"}, {}]> : tensor<16x24xf32, #enc>',
    '    %5 = sdy.sharding_constraint %4 <mesh<["a"=2]>, [{"a"}]> : tensor<16xf32>',
    '    %5 = sdy.sharding_constraint %4 <@mesh, [{"x"}, {}]> : tensor<16x24xf32> {a}',
    '    %5 = sdy.sharding_constraint %4 <@mesh, [{"sdy.manual_computation("}]> : tensor<4xf32>',
    '  func.func @f(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>, '
    'jax.result_info = "r"}) -> tensor<16x8xf32> {',
    '  func.func @f(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"mhlo.sharding'
    ' = \\"x"}, {}]>}) -> tensor<16x8xf32> {',
    "  func.func @f(%arg0: tuple<tensor<4xf32>> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}) {",
    # a location of another form, or one that names an annotation: the general reader's
    '    %5 = sdy.sharding_constraint %4 <@mesh, [{"x"}, {}]> : tensor<16x24xf32> loc(unknown)',
    '    %5 = sdy.sharding_constraint %4 <@mesh, [{"x"}]> : tensor<16xf32> loc("\\"q")',
    '    %5 = sdy.sharding_constraint %4 <@mesh, [{"x"}]> : tensor<16xf32> loc(#loc3) loc(#l)',
    '    %5 = sdy.sharding_constraint %4 <@mesh, [{"x"}]> : tensor<16xf32> '
    'loc("#sdy.sharding<@mesh, [{}]>")',
    '  func.func @f(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}'
    ' loc("mhlo.sharding = \\"{replicated}\\"")) -> tensor<16x8xf32> {',
    '  func.func @f(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}'
    ' loc("a #sdy.sharding<@mesh, [{}]>")) -> tensor<16x8xf32> {',
    # GSPMD signature entries of other forms: a tuple, escapes, more attributes
    '  func.func @f(%arg0: tuple<tensor<4xf32>> {mhlo.sharding = "{{replicated}}"}) {',
    '  func.func @f(%arg0: tensor<4xf32> {mhlo.sharding = "{{replicated}, {replicated}}"}) {',
    '  func.func @f(%arg0: tensor<4xf32> {mhlo.sharding = "{devices=[2]<=[2] \\22}"}) {',
    '  func.func @f(%arg0: tensor<4xf32> {mhlo.sharding = "{replicated}", jax.result_info = "r"})'
    " {",
    "  func.func @f(%arg0: tensor<4xf32> {mhlo.frontend_attributes = {xla.sdy.sharding = "
    '"#sdy.sharding<@mesh, [{}]>"}, mhlo.sharding = "{replicated}"}) {',
    # op lines of other forms: several results or shardings, a tuple sharding, escapes,
    # more annotations, an op with a reader of its own, types that are not one static tensor
    '    %3:2 = stablehlo.sort %2, %2 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}]>, '
    '<@mesh, [{"x"}]>]>} : (tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)',
    '    %3 = stablehlo.tanh %2 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}]>, '
    "<@mesh, [{}]>]>} : tensor<8xf32>",
    '    %5 = stablehlo.add %4, %4 {mhlo.sharding = "{{replicated}, {maximal device=0}}"} : '
    "tuple<tensor<8xf32>, tensor<i32>>",
    '    %5 = stablehlo.add %4, %4 {mhlo.sharding = "{{replicated}, {replicated}}"} : tensor<8xf32>',
    '    %5 = stablehlo.add %4, %4 {mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding_'
    'per_value<[<@mesh, [{\\22x\\22}]>]>"}, mhlo.sharding = "{devices=[2,4]<=[8] last_tile_dim_'
    'replicate}"} : tensor<8xf32>',
    '    %5 = stablehlo.add %4, %4 {mhlo.sharding = "{devices=[2,4]<=[8] last_tile_dim_\\72eplicate}"}'
    " : tensor<8x4xf32>",
    '    %5 = stablehlo.custom_call @Sharding(%4) {mhlo.sharding = "{replicated}"} : '
    "(tensor<8xf32>) -> tensor<8xf32>",
    '    %5 = stablehlo.add %4, %4 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}]>]>} :'
    " tensor<?xf32>",
    '    %5 = stablehlo.add %4, %4 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}]>]>} :'
    " (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)",
    '    %5 = stablehlo.add %4, %4 {sdy.sharding = #sdy.sharding_per_value<[<mesh<["a"=2]>, [{"a"}]>]>}'
    " : tensor<8xf32>",
    '    %5 = stablehlo.add %4, %4 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}]>]>, '
    "a = #sdy.sharding<@mesh, [{}]>} : tensor<8xf32>",
    '    %5 = stablehlo.add %4, %4 {s = "#sdy.sharding_per_value<[<@mesh, [{}]>]>"} : tensor<8xf32>',
    '    %5 = stablehlo.add %4, %4 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}]>]>} :'
    ' tensor<8xf32> loc("a #sdy.sharding<@mesh, [{}]>")',
    '    %5 = "x.reshard"(%4) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}]>]>} :'
    " tensor<8xf32>",
    '    stablehlo.add %4, %4 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}]>]>} :'
    " tensor<8xf32>",
]


@pytest.mark.parametrize("line", FAST)
def test_plain_lines_are_read_in_one_match_with_the_same_values(monkeypatch, line):
    assert used(monkeypatch, line) >= 1
    assert scanned(line) == general(monkeypatch, line)


@pytest.mark.parametrize("line", GENERAL)
def test_other_forms_go_to_the_general_reader(monkeypatch, line):
    if "func.func" not in line:
        assert used(monkeypatch, line) == 0
    assert scanned(line) == general(monkeypatch, line)


def test_inside_a_manual_region_the_values_are_per_device(monkeypatch):
    body = (
        '    %1 = sdy.manual_computation(%0) in_shardings=[<@mesh, [{"x"}, {}]>] '
        'out_shardings=[<@mesh, [{"x"}, {}]>] manual_axes={"x"} (%arg1: tensor<8x8xf32>) {\n'
        '      %2 = sdy.sharding_constraint %arg1 <@mesh, [{}, {"y"}]> : tensor<8x8xf32>\n'
        "      sdy.return %2 : tensor<8x8xf32>\n"
        "    } : (tensor<16x8xf32>) -> tensor<16x8xf32>"
    )
    assert used(monkeypatch, body) == 1
    got = scanned(body)
    assert got == general(monkeypatch, body)
    inner = [v for v in got[0] if v[0] == "%2"]
    assert inner[0][5] is None and inner[0][6] == (8, 8)  # shape → local shape


AXES = st.sampled_from(['"x"', '"y"', '"x", "y"', '"y":(1)2', "?", '"x", ?', '"q"'])


@settings(max_examples=60, deadline=None)
@given(
    dims=st.lists(st.integers(1, 64), min_size=0, max_size=3),
    axes=st.lists(AXES, min_size=0, max_size=3),
    dtype=st.sampled_from(["f32", "bf16", "i1", "f8E4M3FN", "index"]),
    op=st.sampled_from(["sharding_constraint", "reshard"]),
    mesh=st.sampled_from(["mesh", "other", "gone"]),
)
def test_generated_constraints_read_like_the_general_reader(dims, axes, dtype, op, mesh):
    ty = "x".join([*map(str, dims), dtype])
    spec = ", ".join("{" + a + "}" for a in axes)
    line = f"    %v = sdy.{op} %w <@{mesh}, [{spec}]> : tensor<{ty}>"
    assert fields.constraint_fields(line) is not None  # the fast reader's form, every one
    assert read_alike(line)


def read_alike(line: str) -> bool:
    """Whether `line` scans the same with the field readers and with the general reader
    alone (for hypothesis, which cannot take the monkeypatch fixture)."""
    fast = scanned(line)
    with pytest.MonkeyPatch.context() as mp:
        refuse(mp)
        return fast == scanned(line)


@settings(max_examples=60, deadline=None)
@given(
    dims=st.lists(st.integers(1, 64), min_size=0, max_size=3),
    axes=st.lists(AXES, min_size=0, max_size=3),
    dtype=st.sampled_from(["f32", "bf16", "i1", "index"]),
    mesh=st.sampled_from(["mesh", "other", "gone"]),
    gspmd=st.sampled_from(
        [None, "{replicated}", "{devices=[2,4]<=[8] last_tile_dim_replicate}", "{devices=[3]<=[3]}"]
    ),
    tail=st.sampled_from(
        ["", " loc(#loc2)", ", sdy.sharding_rule = #sdy.op_sharding_rule<([])->([])>"]
    ),
)
def test_generated_op_lines_read_like_the_general_reader(dims, axes, dtype, mesh, gspmd, tail):
    ty = "x".join([*map(str, dims), dtype])
    spec = ", ".join("{" + a + "}" for a in axes)
    if gspmd is None:
        attr = f"sdy.sharding = #sdy.sharding_per_value<[<@{mesh}, [{spec}]>]>"
    else:
        attr = f'mhlo.sharding = "{gspmd}"'
    loc = tail if tail.startswith(" loc") else ""
    attrs = attr + ("" if loc else tail)
    line = f"    %v = stablehlo.abs %w {{{attrs}}} : (tensor<{ty}>) -> tensor<{ty}>{loc}"
    assert fields.op_fields(line) is not None  # the fast reader's form, every one
    assert read_alike(line)


# --- the native fields against their Python twins ----------------------------------------

native_constraint = fields.native("constraint_fields")
native_entry = fields.native("entry_fields")
native_op = fields.native("op_fields")
needs_native = pytest.mark.skipif(
    native_constraint is None or native_entry is None or native_op is None,
    reason="MESHDIAG_PURE_PYTHON is set: there is no native reader to compare",
)

#: pieces of the plain forms and of the near misses around them; joined at random they make
#: lines the readers accept and lines they refuse at every step
PIECES = [
    " ",
    "  ",
    "\t",
    "\x1c",
    "\x0b",
    "%",
    "%5",
    "%arg0",
    "%a.b$c-d",
    "%4#1",
    " = ",
    " = sdy.",
    "sdy.",
    "sharding_constraint",
    "reshard",
    "sharding_constraint_x",
    " %4 ",
    " %b ",
    '<@mesh, [{"x"}, {}]>',
    "<@",
    '<@mesh, [{"x>"}]>',
    '<@m, [{"a\\"b"}]>',
    "<@m<>",
    ">",
    "<",
    " : tensor<",
    ": tensor<",
    "16x",
    "24x",
    "0x",
    "007x",
    "99999999999999999999x",
    "16",
    "x",
    "f32",
    "bf16",
    "!q.t",
    "shardingf32",
    "i1",
    "sharding",
    "computation",
    " {sdy.sharding = ",
    '#sdy.sharding<@mesh, [{"y"}]>',
    "#sdy.sharding",
    "}",
    "{",
    ">}",
    '"',
    "?x",
    "é",
    # op lines'
    "stablehlo.add",
    '"stablehlo.add"',
    "x.reshard",
    " %4, %4 ",
    "(%9 init: %10)",
    " {",
    "sdy.sharding = ",
    "#sdy.sharding_per_value<[",
    '#sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>',
    "]>",
    ", ",
    "sdy.sharding_rule = #sdy.op_sharding_rule<([i])->([i]) {i=8}>",
    'mhlo.sharding = "',
    ' {mhlo.sharding = "',
    '"}',
    '{devices=[2,4]<=[8] last_tile_dim_replicate}"',
    "\\22",
    "xla.sdy.sharding",
    " : (tensor<8xf32>) -> ",
    " -> ",
    "(",
    ")",
    "tensor<8x4xf32>",
    " attributes ",
    "custom_call",
    ": error:",
    "out_sharding=<",
    "sharding=<",
    ",",
    " loc(",
    " loc(#loc3)",
    ' loc("x")',
    ' loc("a.py":3:1)',
    ":3:1",
    ":3",
    "#loc",
    ")",
]


def plain_constraint(dims: list[int], dtype: str, op: str) -> str:
    ty = "".join(f"{d}x" for d in dims) + dtype
    return f'    %v.1 = sdy.{op} %w#2 <@mesh, [{{"x"}}, {{}}]> : tensor<{ty}>'


def plain_op(dims: list[int], dtype: str, gspmd: bool = False) -> str:
    ty = "".join(f"{d}x" for d in dims) + dtype
    if gspmd:
        return f'    %2 = stablehlo.add %1, %1 {{mhlo.sharding = "{{replicated}}"}} : tensor<{ty}>'
    return (
        "    %2 = stablehlo.dot_general %0, %1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, "
        '[{"x"}, {}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, k])->([i]) {i=8}>} : '
        f"(tensor<8xf32>, tensor<8xf32>) -> tensor<{ty}>"
    )


def plain_entry(dims: list[int], dtype: str, gspmd: bool = False) -> str:
    ty = "".join(f"{d}x" for d in dims) + dtype
    if gspmd:
        return f'%arg3: tensor<{ty}> {{mhlo.sharding = "{{devices=[2,4]<=[8]}}"}}'
    return f'%arg3: tensor<{ty}> {{sdy.sharding = #sdy.sharding<@mesh, [{{"x"}}, {{}}]>}}'


EDITS = st.lists(st.tuples(st.floats(0, 1), st.integers(0, 3), st.sampled_from(PIECES)), max_size=3)


def edited(line: str, edits: list[tuple[float, int, str]]) -> str:
    """`line` with each edit made: at a place (a fraction of its length), drop a few
    characters and put a piece in their place."""
    for where, drop, piece in edits:
        at = int(where * len(line))
        line = line[:at] + piece + line[at + drop :]
    return line


@needs_native
@settings(max_examples=500, deadline=None)
@given(
    base=st.sampled_from(
        [
            "",
            plain_constraint([16, 24], "f32", "reshard"),
            plain_entry([8], "bf16"),
            plain_entry([8, 4], "f32", gspmd=True),
            plain_op([16, 8], "f32"),
            plain_op([4], "bf16", gspmd=True),
        ]
    ),
    parts=st.lists(st.sampled_from(PIECES), max_size=14),
    edits=EDITS,
    cut=st.integers(-3, 3),
    grow=st.integers(0, 3),
)
def test_native_fields_match_their_twins_on_edited_lines(base, parts, edits, cut, grow):
    line = edited(base or "".join(parts), edits)
    if line.isascii():
        assert native_constraint(line) == fields.constraint_fields_py(line)
        assert native_op(line) == fields.op_fields_py(line)
        n = len(line)
        for start, end in ((0, n), (max(cut, 0), n - grow), (cut, n + grow)):
            assert native_entry(line, start, end) == fields.entry_fields_py(line, start, end)
    assert fields.constraint_fields(line) == fields.constraint_fields_py(line)


@needs_native
@settings(max_examples=200, deadline=None)
@given(
    dims=st.lists(st.integers(0, 10**30), max_size=4),
    dtype=st.sampled_from(["f32", "bf16", "i1", "f8E4M3FN", "index", "xf32", "!q.t", "x"]),
    op=st.sampled_from(["sharding_constraint", "reshard"]),
    pad=st.sampled_from(["", " ", "\t ", " x"]),
)
def test_native_fields_read_plain_lines_like_their_twins(dims, dtype, op, pad):
    line = plain_constraint(dims, dtype, op) + pad
    got = native_constraint(line)
    assert got == fields.constraint_fields_py(line)
    if pad.strip() == "":
        assert got is not None and got[4] == tuple(dims) and got[5] == dtype
    for gspmd in (False, True):
        line = plain_op(dims, dtype, gspmd) + pad
        got = native_op(line)
        assert got == fields.op_fields_py(line)
        if pad.strip() == "":
            assert got is not None and got[4] == tuple(dims) and got[5] == dtype
    for gspmd in (False, True):
        entry = f"  func.func @main({plain_entry(dims, dtype, gspmd)}{pad}) -> f32"
        start = entry.index("%")
        end = entry.index(")", start)
        got = native_entry(entry, start, end)
        assert got == fields.entry_fields_py(entry, start, end)
        if pad.strip() == "":
            text = entry[got[1] : got[2]]
            assert text.startswith("{devices" if gspmd else "#sdy.sharding<@")


@needs_native
def test_an_entry_whose_sharding_names_sharding_again_is_not_plain():
    """An entry whose sharding holds another `sharding` word (an axis named so, quoted or
    not, anywhere in its text) is left to the general reader, natively as by the twin: a
    plain entry's sharding holds its own token and no other."""
    for gspmd in (False, True):
        entry = plain_entry([8, 4], "f32", gspmd)
        a = entry.index("{devices" if gspmd else "#sdy.sharding<@")
        e = entry.rindex('"' if gspmd else ">")
        for at in range(a + (0 if gspmd else 13), e + 1):
            for word in ("sharding", '"sharding"'):
                line = entry[:at] + word + entry[at:]
                got = native_entry(line, 0, len(line))
                assert got == fields.entry_fields_py(line, 0, len(line)), (line,)
                assert got is None, (line,)
    for axis in ('{"sharding"}', '{"x_sharding"}'):
        line = f"%a: tensor<8xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{axis}]>}}"
        assert native_entry(line, 0, len(line)) is None
        assert fields.entry_fields_py(line, 0, len(line)) is None


def test_non_ascii_lines_are_read_by_the_twins():
    line = '    %café = sdy.sharding_constraint %4 <@mesh, [{"x"}, {}]> : tensor<16xf32>'
    assert fields.constraint_fields(line) == fields.constraint_fields_py(line) is not None
    entry = '%ärg: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}'
    assert fields.entry_fields(entry, 0, len(entry)) == fields.entry_fields_py(entry, 0, len(entry))
    assert fields.entry_fields(entry, 0, len(entry)) is not None
    if native_constraint is not None:
        with pytest.raises(TypeError):
            native_constraint(line)


# --- plain HLO instructions ----------------------------------------------------------------

HLO_HEAD = "HloModule m, num_partitions=8\n\nENTRY %main {\n"
HLO_FAST = [
    "  %x.0 = f32[4,16,32]{2,1,0} parameter(0), sharding={devices=[2,1,1,4]<=[8] "
    'last_tile_dim_replicate}, metadata={op_name="x"}',
    "  %d = f32[4,16]{1,0} dot(%x.0, %w), lhs_contracting_dims={2}, sharding={devices=[2,4]<=[8]}",
    "  ROOT %t = bf16[8]{0} tanh(%d), sharding={replicated}",
    "  %s = s32[] constant(0), sharding={maximal device=1}",
    "  %u = f32[6]{0} copy(%d), sharding={devices=[4]<=[4]}",  # uneven: MD105's, same
    "  %e = f32[6]{0} copy(%d), sharding={devices=[3]<=[8]}",  # a parse error, same
]
HLO_GENERAL = [
    "  %t = (f32[8]{0}, s32[]) tuple(%a, %b), sharding={{replicated}, {maximal device=0}}",
    '  %c = f32[8]{0} custom-call(%a), custom_call_target="Sharding", sharding={replicated}',
    "  %a = f32[8]{0} copy(%b), sharding={replicated}, frontend_attributes={xla.sdy.sharding="
    '"#sdy.sharding<@mesh, [{}]>"}',
    '  %a = f32[8]{0} copy(%b), sharding={devices=[2]<=[2] metadata={op_name="}"}}',
    "  %a = f32[8]{0} copy(%b), sharding={replicated}, x_sharding={replicated}, sharding={manual}",
    "  %a = f32[?,8]{1,0} copy(%b), sharding={replicated}",
    "  %a = f32[8]{0}copy(%b), sharding={replicated}",
]


def hlo_scanned(body: str):
    text = HLO_HEAD + body + "\n}\n"
    r = scan_file("m.txt", io.BytesIO(text.encode()))
    values = [value_fields(v) for m in r.modules for v in m.values]
    return values, [f.to_json() for f in r.findings]


@pytest.mark.parametrize("line", HLO_FAST + HLO_GENERAL)
def test_hlo_instructions_read_like_the_general_reader(monkeypatch, line):
    read = []
    real = fields.hlo_line
    monkeypatch.setattr(fields, "hlo_line", lambda *a: read.append(1) or real(*a))
    fast = hlo_scanned(line)
    assert (sum(read) > 0 and fields.hlo_fields(line) is not None) == (line in HLO_FAST)
    with monkeypatch.context() as mp:
        mp.setattr(fields, "hlo_fields", lambda *a: None)
        assert fast == hlo_scanned(line)


native_hlo = fields.native("hlo_fields")
HLO_PIECES = [
    " ", "  ", "ROOT", "ROOT ", "%a.1", "%x-y", "t", " = ", "=", "f32", "bf16", "s32", "pred",
    "[", "]", "4", "4,8", ",", "{1,0}", "{0}", "(", ")", "(%a, %b)", " copy(%a)", "dot",
    "custom-call", ", ", "sharding={", "sharding={replicated}", "{devices=[2,4]<=[8]}", "}",
    "{", '"', "x_sharding={", ".sharding={", "xla.sdy.", "metadata={op_name=\"a\"}", "é", "\t",
]  # fmt: skip


@needs_native
@settings(max_examples=500, deadline=None)
@given(
    base=st.sampled_from(["", *HLO_FAST, *HLO_GENERAL]),
    parts=st.lists(st.sampled_from(HLO_PIECES), max_size=16),
    edits=st.lists(
        st.tuples(st.floats(0, 1), st.integers(0, 3), st.sampled_from(HLO_PIECES)), max_size=3
    ),
)
@example(  # a tab among the dims (the general path strips it: so does the native one)
    base="  %x.0 = f32[4,16,32]{2,1,0} parameter(0), sharding={devices=[2,1,1,4]<=[8]}",
    parts=[],
    edits=[(0.125, 0, "\t")],
)
def test_native_hlo_fields_match_their_twin_on_edited_lines(base, parts, edits):
    line = edited(base or "".join(parts), edits)
    if line.isascii():
        assert native_hlo(line) == fields.hlo_fields_py(line)
    assert fields.hlo_fields(line) == fields.hlo_fields_py(line)


#: the characters that decide where a sharding ends: quotes and escapes, every bracket, `->`
SHARDING_CHARS = st.sampled_from(list('"\\<>-[]{}(),x ') + ['"x"', "{}", "[{", "}]"])


@needs_native
@settings(max_examples=1500, deadline=None)
@given(body=st.lists(SHARDING_CHARS, max_size=24).map("".join), deep=st.integers(0, 40))
def test_a_shardings_end_is_read_as_the_bracket_matcher_reads_it(body, deep):
    """The native readers find a sharding's `>` and check the bracket matcher closes it there
    in one pass (`take_closed_ref`): whatever quotes, escapes and brackets its text holds,
    and nested deeper than that pass follows (its two-pass way), they read the line as the
    twins do."""
    inner = "[" * deep + body + "]" * deep
    constraint, entry = _constraint_with(inner), _entry_with(inner)
    assert native_constraint(constraint) == fields.constraint_fields_py(constraint)
    assert native_entry(entry, 0, len(entry)) == fields.entry_fields_py(entry, 0, len(entry))


def _constraint_with(sharding: str) -> str:
    return f"    %1 = sdy.sharding_constraint %0 <@mesh, {sharding}> : tensor<8x4xf32>"


def _entry_with(sharding: str) -> str:
    return f"%arg0: tensor<8x4xf32> {{sdy.sharding = #sdy.sharding<@mesh, {sharding}>}}"


@needs_native
@pytest.mark.parametrize(
    "sharding, plain",
    [
        ('[{"x"}, {}]', True),
        ('[{"a\\"b"}, {}]', True),  # an escaped quote in a name
        ("[" * 40 + "]" * 40, True),  # deeper than the one pass follows
        ('[{"a>b"}, {}]', False),  # a `>` in a quoted name: the general reader's
        ('[{"a\\>"}, {}]', False),
        ('[{"x"}, {}]->', False),
        ('[{"x"}, {)]', False),
        ("[" * 40 + "]" * 39 + ")", False),
        ('[{"x}, {}]', False),  # a quote left open
    ],
)
def test_the_end_of_a_sharding_in_a_plain_line(sharding, plain):
    constraint, entry = _constraint_with(sharding), _entry_with(sharding)
    got = native_constraint(constraint)
    assert got == fields.constraint_fields_py(constraint)
    assert (got is not None) == plain
    got = native_entry(entry, 0, len(entry))
    assert got == fields.entry_fields_py(entry, 0, len(entry))
    assert (got is not None) == plain
