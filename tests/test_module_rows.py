"""A module's values by device layout (`dump_summary.module_rows`, what `inspect DIR`
sums): the native rows (`ir/fast/_rows.c`) are what the twin `module_rows_py` gives, on
every fixture module read with its lines shared and with every value its module's own,
partitioned or not, and on generated entries; the callbacks are asked as the twin asks
them; bad input is refused, and nothing leaks."""

from __future__ import annotations

import sys

import pytest
from fixture_modules import scanned_modules
from hypothesis import given, settings
from hypothesis import strategies as st
from leaks import bytes_grown

from meshdiag.ir.model import LineValues, ModuleReport, Value
from meshdiag.memo import RunMemos
from meshdiag.notation.gspmd import parse_gspmd
from meshdiag.pipeline import dump_summary
from meshdiag.pipeline.dump_summary import _devices, layout_key, module_rows_py
from meshdiag.pipeline.inspect import own_text

native = dump_summary._native_module_rows
needs_native = pytest.mark.skipif(native is None, reason="no native extension to compare")


class Asked:
    """`key_of` and `draw_of` as `_module_rows` makes them, recording what they are asked."""

    def __init__(self, m, memos: RunMemos, mesh=None) -> None:
        self.m, self.memos, self.mesh = m, memos, mesh
        self.keys: list[int] = []
        self.draws: list[int] = []

    def key_of(self, v):
        self.keys.append(id(v))
        return layout_key(v, self.memos), own_text(v, self.memos)

    def draw_of(self, v):
        self.draws.append(id(v))
        h = v.hlo
        return None if h is None or h.is_tuple else (v.shape, _devices(v, self.m, self.mesh))


def _both(items, lines, part, m=None, memos=None):
    """(twin's rows, what it asked), (native rows, what it asked)."""
    memos = memos if memos is not None else RunMemos()
    m = m if m is not None else ModuleReport("m", 1, "hlo", num_partitions=2)
    a, b = Asked(m, memos), Asked(m, memos)
    want = module_rows_py(items, lines, part, a.key_of, a.draw_of)
    got = native(items, lines, part, Value, b.key_of, b.draw_of)
    return (want, a), (got, b)


@needs_native
@pytest.mark.parametrize("learned", [True, False], ids=["shared", "own"])
def test_native_rows_are_the_twins_on_every_fixture_module(learned):
    modules = scanned_modules(learned)
    memos = RunMemos()
    rows = 0
    for m in modules:
        for part in (False, True):
            (want, a), (got, b) = _both(m.items, m.lines, part, m, memos)
            # the same rows in the same order, each the same to its dicts' orders
            assert list(got) == list(want)
            assert [[*r[:4], r[4], r[5]] for r in got.values()] == list(want.values())
            assert [list(r[k]) for r in got.values() for k in (1, 2, 3)] == [
                list(r[k]) for r in want.values() for k in (1, 2, 3)
            ]
            assert b.keys == a.keys and b.draws == a.draws
            rows += len(got)
    assert rows > 100


SHARDINGS = [
    ("gspmd", "{devices=[2,1]0,1}"),
    ("gspmd", "{devices=[2,1]<=[2]}"),  # the same layout as the first, spelled otherwise
    ("gspmd", "{{replicated}, {maximal device=0}}"),  # a tuple: never drawn
    ("gspmd", "{replicated}"),
    ("sdy", '<@mesh, [{"x"}, {}]>'),  # no tiled form here: keyed by its text
]
PARSED = {t: (parse_gspmd(t) if n == "gspmd" else None) for n, t in SHARDINGS}
SHAPES = [(4, 8), None, (2, 2)]


def _value(name, line, s, shape_at, local):
    n, t = SHARDINGS[s]
    h = PARSED[t]
    shape = SHAPES[shape_at]
    return Value(
        name,
        line,
        3,
        t,
        n,
        "op",
        None,
        None if local else shape,
        shape if local else None,
        "f32",
        None,
        h,
        h,
    )


@needs_native
@settings(max_examples=300, deadline=None)
@given(
    picks=st.lists(
        st.tuples(
            st.integers(0, len(SHARDINGS) - 1),  # sharding
            st.integers(0, 3),  # 0: a value of its own; else a shared line's
            st.integers(0, len(SHAPES) - 1),
            st.booleans(),  # a local shape
            st.integers(0, 2),  # name
        ),
        max_size=40,
    )
)
def test_native_rows_are_the_twins_on_generated_entries(picks):
    """Values of their own and shared lines (one value or two, repeated, under one name
    or two) in any mix; a value of its own on a line already counted is not counted
    again, a shared line's value counted once per (name, key) in its entry."""
    shared: dict[tuple, LineValues] = {}
    items, lines = [], []
    for k, (s, kind, sh, local, name) in enumerate(picks):
        if kind == 0:
            items.append(_value(f"%v{name}", 1 + k % 3, s, sh, local))
            lines.append(1 + k % 3)
            continue
        key = (s, kind, sh, local, name)
        lv = shared.get(key)
        if lv is None:
            protos = [_value(f"%s{name}", 0, s, sh, local)]
            if kind >= 2:  # two values on the line, under the same name when 3
                protos.append(_value(f"%s{name if kind == 3 else name + 1}", 0, 0, sh, local))
            lv = shared[key] = LineValues(tuple(protos))
        items.append(lv)
        lines.append(10 + k)
    for part in (False, True):
        (want, a), (got, b) = _both(items, lines, part)
        assert list(got) == list(want) and list(got.values()) == list(want.values())
        assert b.keys == a.keys and b.draws == a.draws


@needs_native
def test_native_rows_of_thousands_of_distinct_entries_are_the_twins():
    """Thousands of distinct entries (the table of their places made for them at once,
    `fs_ptrmap_reserve`), some held several times: the twin's rows."""
    shared = [LineValues((_value(f"%s{k}", 0, k % 5, k % 3, False),)) for k in range(1500)]
    items = [_value(f"%v{k}", k, k % 5, k % 3, k % 2 == 0) for k in range(1500)]
    items += [shared[k * 7 % 1500] for k in range(3000)]
    lines = list(range(len(items)))
    for part in (False, True):
        (want, a), (got, b) = _both(items, lines, part)
        assert list(got.items()) == list(want.items()) and b.keys == a.keys


@needs_native
def test_native_rows_past_the_tables_reservation_are_the_twins():
    """More distinct entries than a table is made for at once (2**16: past that it grows
    as they come, several times here): the twin's rows."""
    items = [_value(f"%v{k}", k, k % 5, k % 3, k % 2 == 0) for k in range(140_000)]
    lines = list(range(len(items)))
    (want, a), (got, b) = _both(items, lines, False)
    assert list(got.items()) == list(want.items()) and b.keys == a.keys


@needs_native
def test_native_rows_refuse_what_they_cannot_read_and_leak_nothing():
    v = _value("%a", 1, 0, 0, False)
    ok = (lambda v: ("k", "s"), lambda v: None)
    with pytest.raises(TypeError):
        native((v,), [1], False, Value, *ok)  # not a list
    with pytest.raises(ValueError):
        native([v], [1, 2], False, Value, *ok)
    with pytest.raises(TypeError):
        native([v], [1], False, Value, lambda v: "k", ok[1])  # not (key, spelling)
    with pytest.raises(ZeroDivisionError):
        native([v], [1], False, Value, ok[0], lambda v: 1 / 0)
    with pytest.raises(AttributeError):
        native([object()], [1], False, Value, *ok)  # not a shared line
    lv = LineValues((_value("%b", 0, 1, 0, False), _value("%c", 0, 2, 0, False)))
    # (lines held 300 times each: their counts are ints Python does not keep, so a leaked
    # one shows)
    held = [LineValues((_value(f"%h{k}", 0, k % 5, 0, False),)) for k in range(10)]
    items = [v, lv, *[h for h in held for _ in range(300)]] + [
        _value(f"%g{k}", k, k % 5, k % 3, k % 2 == 0) for k in range(50)
    ]
    lines = list(range(len(items)))
    memos = RunMemos()
    m = ModuleReport("m", 1, "hlo", num_partitions=2)

    def call():
        a = Asked(m, memos)
        native(items, lines, True, Value, a.key_of, a.draw_of)

    call()
    before = sys.getrefcount(v), sys.getrefcount(lv)
    grown = bytes_grown(call)
    assert (sys.getrefcount(v), sys.getrefcount(lv)) == before
    assert grown < 20_000
