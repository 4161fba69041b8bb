"""Shapes the native scanner keeps as numbers (`FsShape`, `ir/fast/_fields.c`): a value it
makes from a plain line keeps up to four dims below 2**31 as numbers, and makes the tuple
only when something asks for it (Python reading `shape`, `==`, repr, pickling, the rows
writer); the checks' keys, the text groups and the JSON writer read the numbers.

Every test here makes its values anew with the native readers (`plain_line`, `entry_values`)
from the prototypes a scan kept, so that the native code meets their shapes still kept."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from leaks import bytes_grown

from meshdiag.checks.keys import FIELDS, Decides, new_keys_py
from meshdiag.ir.fast import _fastscan
from meshdiag.ir.model import ModuleReport, Value
from meshdiag.ir.scan import scan_bytes
from meshdiag.ir.scancache import ScanCache
from meshdiag.memo import RunMemos
from meshdiag.pipeline import inspect, module_summary

#: dims on each side of what a kept shape holds, with leading zeros and past a long long
DIMS = st.one_of(
    st.integers(0, 40),
    st.sampled_from([2**31 - 1, 2**31, 999_999_999, 9_999_999_999, 10**10, 2**63, 2**70]),
)
SHAPES = st.lists(DIMS, max_size=6).map(tuple)


def _sharding(rank: int) -> str:
    """A sharding of `rank` dims splitting dim 0 in two (odd sizes are uneven)."""
    return "[" + ", ".join(['{"x"}'] + ["{}"] * (rank - 1)) + "]" if rank else "[]"


def _tensor(shape: tuple[int, ...], zeros: int = 0) -> str:
    return "tensor<" + "".join("0" * zeros + str(d) + "x" for d in shape) + "f32>"


def _protos(ranks: set[int]) -> dict:
    """The prototypes a scan keeps for the shardings of `ranks` (a signature entry's and a
    constraint's text of each), read in Python from one line each."""
    args = [
        f"%p{r}: {_tensor((2,) * r)} {{sdy.sharding = #sdy.sharding<@mesh, {_sharding(r)}>}}"
        for r in sorted(ranks)
    ]
    body = [
        f"    %q{r} = sdy.sharding_constraint %p{r} <@mesh, {_sharding(r)}> : {_tensor((2,) * r)}"
        for r in sorted(ranks)
    ]
    text = (
        'module @m {\n  sdy.mesh @mesh = <["x"=2, "y"=4]>\n'
        f"  func.func public @main({', '.join(args)}) {{\n" + "\n".join(body) + "\n"
        "    return\n  }\n}\n"
    )
    cache = ScanCache()
    scan_bytes("p.mlir", text.encode(), cache=cache)
    protos = {t: p for d in cache._protos.values() for t, p in d.items()}
    assert len(protos) == 2 * len(ranks)
    return protos


def fresh(shapes: list[tuple[int, ...]], zeros=(), protos: dict | None = None) -> list[Value]:
    """Values of `shapes` made anew by the native readers, none of their shapes asked for
    yet: for each shape a constraint line's value (`plain_line`), then a signature entry's
    (`entry_values`), the dims written with `zeros` leading zeros in turn; from `protos`,
    or ones made for the call."""
    protos = protos if protos is not None else _protos({len(s) for s in shapes})
    lines, items = [], []
    for i, shape in enumerate(shapes):
        z = zeros[i % len(zeros)] if zeros else 0
        sh, t = _sharding(len(shape)), _tensor(shape, z)
        raw = f"    %c{i} = sdy.sharding_constraint %x <@mesh, {sh}> : {t}"
        assert _fastscan.plain_line(raw.encode(), 10 + i, protos, lines, items)
        entry = f"%a{i}: {t} {{sdy.sharding = #sdy.sharding<@mesh, {sh}>}}"
        assert _fastscan.entry_values(entry, [(0, len(entry))], 0, 9, protos, lines, items) == 1
    return items


@settings(max_examples=150, deadline=None)
@given(shapes=st.lists(SHAPES, min_size=1, max_size=12), zeros=st.lists(st.integers(0, 3)))
def test_kept_shapes_read_as_their_text_says(shapes, zeros):
    vs = fresh(shapes, zeros)
    assert [v.shape for v in vs] == [s for s in shapes for _ in range(2)]
    assert all(type(d) is int for v in vs for d in v.shape)
    v = vs[-1]
    assert v.shape is v.shape  # made once, then the field itself


@settings(max_examples=150, deadline=None)
@given(shapes=st.lists(SHAPES, min_size=1, max_size=12), zeros=st.lists(st.integers(0, 2)))
def test_native_keys_of_kept_shapes_are_the_twins(shapes, zeros):
    """The keys read from kept numbers (rank, an even split) and, for an uneven shape, from
    the tuple made then, are the twin's keys read from the tuples."""
    for fields in [(f,) for f in FIELDS] + [("#hlo", "uneven_shape"), FIELDS]:
        d = Decides(*fields)
        # (more than the 32 values below which the native keys skip their table)
        protos = _protos({len(s) for s in shapes})  # (keys hold the shardings' ids)
        got = _fastscan.new_keys(fresh(shapes * 3, zeros, protos), Value, d.codes, {})
        assert got == new_keys_py(fresh(shapes * 3, zeros, protos), d, {})


@settings(max_examples=60, deadline=None)
@given(shapes=st.lists(SHAPES, min_size=1, max_size=12))
def test_groups_and_json_of_kept_shapes_are_the_twins(shapes):
    memos = RunMemos()

    def module(vs):
        m = ModuleReport("m", 1)
        m.lines, m.items = [v.line for v in vs], vs
        return m

    groups = module_summary.text_groups(module(fresh(shapes)), memos)  # native: no shape read
    twin = module_summary.text_groups_py(fresh(shapes), False, memos)

    def plain(g):
        return [(t, n, f, [(v.name, v.shape) for v in vs]) for t, (n, f, vs) in g.items()]

    assert plain(groups) == plain(twin)
    assert inspect._native_values_json is not None
    written = inspect.module_values_json(module(fresh(shapes)), memos)
    saved = inspect._native_values_json
    inspect._native_values_json = None
    try:
        assert inspect.module_values_json(module(fresh(shapes)), memos) == written
    finally:
        inspect._native_values_json = saved


def twin_of(v: Value) -> Value:
    """The same value made by the constructor, its shape given as a tuple."""
    return Value(*[getattr(v, f.name) for f in dataclasses.fields(v)])


@pytest.mark.parametrize(
    "shape", [(), (7,), (16, 8), (1, 2, 3, 4), (1, 2, 3, 4, 5), (2**31 - 1, 2**31), (0, 2**70)]
)
def test_a_kept_shape_behaves_as_the_field(shape):
    """`==`, repr, pickling, copies and dataclasses' functions see the shape as the tuple
    it is; setting and deleting the field replace the kept numbers."""
    first, second, third = (fresh([shape])[-1] for _ in range(3))
    assert first == twin_of(second)  # (twin_of reads the shape: made there)
    assert repr(third) == repr(twin_of(third))
    for v in (fresh([shape])[-1] for _ in range(4)):
        assert pickle.loads(pickle.dumps(v)).shape == shape
    v = fresh([shape])[-1]
    assert copy.copy(v).shape == shape
    assert dataclasses.asdict(fresh([shape])[-1])["shape"] == shape
    assert dataclasses.replace(fresh([shape])[-1], name="%z").shape == shape
    v = fresh([shape])[-1]
    v.shape = (9, 9)
    assert v.shape == (9, 9)
    v = fresh([shape])[-1]
    del v.shape  # a kept shape deleted: unset, as the member slot would be
    with pytest.raises(AttributeError):
        v.shape  # noqa: B018
    with pytest.raises(AttributeError):
        del v.shape
    with pytest.raises(AttributeError):
        repr(v)
    v.shape = None
    assert v.shape is None


def test_kept_shapes_leak_nothing():
    """Values made, keyed, read and let go, with kept shapes and with tuples, uneven ones
    among them: nothing stays (references to the prototypes' objects included)."""
    shapes = [(16, 8), (7, 3), (), (2**31, 4), (1, 2, 3, 4, 5)] * 8
    protos = _protos({len(s) for s in shapes})
    d = Decides(*FIELDS)
    h = next(iter(protos.values())).sharding
    before = sys.getrefcount(h)

    def run():
        vs = fresh(shapes, (), protos)
        _fastscan.new_keys(vs, Value, d.codes, {})
        for v in fresh(shapes, (), protos)[::3]:
            assert v.shape == v.shape
        pickle.dumps(fresh(shapes, (), protos))

    assert bytes_grown(run) < 20_000
    assert sys.getrefcount(h) == before
