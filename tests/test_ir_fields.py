"""The one-pass field readers (`ir/fields.py`) against the general MLIR reader: every line
they accept gives the same values (names, lines, columns, kinds, ops, shapes, parses) and
problems as when the general reader reads it, and the lines they refuse are read by it."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scan_reference import value_fields

from meshdiag.ir import fields
from meshdiag.ir.scan import scan_file

HEAD = 'module @m {\n  sdy.mesh @mesh = <["x"=2, "y"=4]>\n  sdy.mesh @other = <["x"=8]>\n'


def scanned(body: str):
    text = HEAD + body + "\n}\n"
    r = scan_file("m.mlir", io.BytesIO(text.encode()))
    values = [value_fields(v) for m in r.modules for v in m.values]
    return values, [f.to_json() for f in r.findings]


def general(monkeypatch, body: str):
    with monkeypatch.context() as mp:
        mp.setattr(fields, "constraint", lambda *a: False)
        mp.setattr(fields, "signature_entry", lambda *a: False)
        return scanned(body)


def used(monkeypatch, body: str) -> int:
    """How many values the field readers read themselves."""
    count = 0
    real_c, real_s = fields.constraint, fields.signature_entry

    def c(*a):
        nonlocal count
        ok = real_c(*a)
        count += ok
        return ok

    def s(*a):
        nonlocal count
        ok = real_s(*a)
        count += ok
        return ok

    with monkeypatch.context() as mp:
        mp.setattr(fields, "constraint", c)
        mp.setattr(fields, "signature_entry", s)
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
]
GENERAL = [
    '    %5:2 = sdy.sharding_constraint %4 <@mesh, [{"x"}, {}]> : tensor<16x24xf32>',
    '    %5 = sdy.sharding_constraint %4 <@mesh, [{"x"}, {}]> : tensor<?x24xf32>',
    '    %5 = sdy.sharding_constraint %4 <@mesh, [{"x"}, {}]> : tensor<16x24xf32> loc(#loc3)',
    '    %5 = sdy.sharding_constraint %4 <@mesh, [{"x"}, {}]> : tensor<16x24xf32, #enc>',
    '    %5 = sdy.sharding_constraint %4 <mesh<["a"=2]>, [{"a"}]> : tensor<16xf32>',
    '    %5 = sdy.sharding_constraint %4 <@mesh, [{"x"}, {}]> : tensor<16x24xf32> {a}',
    '    %5 = sdy.sharding_constraint %4 <@mesh, [{"sdy.manual_computation("}]> : tensor<4xf32>',
    '  func.func @f(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>, '
    'jax.result_info = "r"}) -> tensor<16x8xf32> {',
    '  func.func @f(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"mhlo.sharding'
    ' = \\"x"}, {}]>}) -> tensor<16x8xf32> {',
    "  func.func @f(%arg0: tuple<tensor<4xf32>> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}) {",
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
    fast = scanned(line)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fields, "constraint", lambda *a: False)
        slow = scanned(line)
    assert fast == slow
