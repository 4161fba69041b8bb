"""A module's values grouped by their own sharding text (`module_summary.text_groups`):
the native grouping (`ir/fast/_groups.c`) gives what its twin `text_groups_py` gives, on
every fixture module read with its lines shared and with every value its module's own, and
on generated entries; it keeps no reference it should not."""

from __future__ import annotations

import sys

import pytest
from fixture_modules import scanned_modules
from hypothesis import given, settings
from hypothesis import strategies as st
from leaks import bytes_grown

from meshdiag.ir.model import LineValues, Value
from meshdiag.memo import RunMemos
from meshdiag.pipeline import module_summary
from meshdiag.pipeline.inspect import own_text
from meshdiag.pipeline.module_summary import FIRST_LOCATIONS, _rows, text_groups_py

native = module_summary._native_text_groups
needs_native = pytest.mark.skipif(native is None, reason="no native extension to compare")


def _native(items, part, memos, keep=FIRST_LOCATIONS):
    return native(
        items, Value, lambda v: own_text(v, memos), lambda it: _rows(it, part, memos), keep
    )


def _plain(groups):
    """Groups as comparable data: the values by identity."""
    return [(t, n, firsts, [id(v) for v in d]) for t, (n, firsts, d) in groups.items()]


@needs_native
@pytest.mark.parametrize("learned", [True, False], ids=["shared", "own"])
def test_native_groups_are_the_twins_on_every_fixture_module(learned):
    modules = scanned_modules(learned)
    memos = RunMemos()
    for m in modules:
        items = m.entries()[0]
        for part in (False, True):
            want = text_groups_py(items, part, memos)
            got = _native(items, part, memos)
            assert list(got) == list(want) and _plain(got) == _plain(want)


SHARDINGS = [
    ("sdy", '#sdy.sharding<@mesh, [{"x"}]>'),
    ("sdy", '<@mesh, [{"x"}, {}]>'),
    ("sdy", '#sdy.sharding_per_value<[<@mesh, [{"x"}]>, <@mesh, [{}]>]>'),
    ("gspmd", "{devices=[2,4]<=[8]}"),
    ("gspmd", "{{replicated}, {maximal device=0}}"),
]


@needs_native
@settings(max_examples=200, deadline=None)
@given(
    picks=st.lists(st.tuples(st.integers(0, 4), st.booleans(), st.integers(0, 3)), max_size=30),
    keep=st.integers(0, 4),
)
def test_native_groups_are_the_twins_on_generated_entries(picks, keep):
    """Values of their own and shared lines, in any mix, under a few texts; the twin keeps
    `FIRST_LOCATIONS`, so the native one is asked for that many too."""
    memos = RunMemos()
    shared = [
        LineValues(
            (Value(f"%s{k}", 0, 3, t, n, "op", None, (8,), None, "f32", "mesh", None, None),)
        )
        for k, (n, t) in enumerate(SHARDINGS)
    ]
    items = []
    for k, (s, own, col) in enumerate(picks):
        n, t = SHARDINGS[s]
        if own:
            items.append(
                Value(f"%v{k}", k + 1, col, t, n, "op", None, None, None, None, None, None, None)
            )
        else:
            items.append(shared[s])
    for part in (False, True):
        want = text_groups_py(tuple(items), part, memos)
        assert _plain(_native(items, part, memos)) == _plain(want)
    got = _native(items, False, memos, keep)
    assert all(len(firsts) == min(n, max(keep, 1)) for n, firsts, _ in got.values())


@needs_native
def test_native_groups_of_thousands_of_distinct_values_are_the_twins():
    """Thousands of distinct values, each shared line's given again and again (the table
    of the values seen made for them at once, `fs_ptrmap_reserve`): the twin's groups."""
    memos = RunMemos()
    own = [
        Value(f"%v{k}", k, 1, t, n, "op", None, (8,), None, "f32", "mesh", None, None)
        for k in range(1500)
        for n, t in [SHARDINGS[k % len(SHARDINGS)]]
    ]
    shared = [LineValues((v,)) for v in own[:700]]
    items = own + [shared[k * 7 % 700] for k in range(2000)]
    for part in (False, True):
        assert _plain(_native(items, part, memos)) == _plain(text_groups_py(items, part, memos))


@needs_native
def test_native_groups_of_lines_of_hundreds_of_values_are_the_twins():
    """Shared lines of 300 values each, a few entries holding thousands of values (the
    table of the values seen, made for about one value an entry, grows many times): the
    twin's groups."""
    memos = RunMemos()
    shared = [
        LineValues(
            tuple(
                Value(
                    f"%l{j}_{k}", j, k + 1, t, n, "op", None, (8,), None, "f32", "mesh", None, None
                )
                for k in range(300)
                for n, t in [SHARDINGS[(j + k) % len(SHARDINGS)]]
            )
        )
        for j in range(20)
    ]
    items = [shared[k * 3 % 20] for k in range(40)]
    for part in (False, True):
        assert _plain(_native(items, part, memos)) == _plain(text_groups_py(items, part, memos))


@needs_native
def test_native_groups_refuse_what_they_cannot_read_and_leak_nothing():
    memos = RunMemos()
    v = Value("%a", 1, 2, '<@mesh, [{"x"}]>', "sdy", "op", None, (8,), None, "f32", "m", None, None)
    with pytest.raises(TypeError):
        native([v], Value, None, None, 3)
    with pytest.raises(TypeError):
        native([object()], Value, lambda v: "", lambda it: [("t", "n")], 3)
    with pytest.raises(ZeroDivisionError):
        native([object()], Value, lambda v: "", lambda it: 1 / 0, 3)
    items = [v] * 50 + [
        Value(
            f"%g{k}", k, 1, "{replicated}", "gspmd", "op", None, None, None, None, None, None, None
        )
        for k in range(50)
    ]

    def call():
        _native(items, False, memos)

    call()
    before = sys.getrefcount(v)
    grown = bytes_grown(call)
    assert sys.getrefcount(v) == before
    assert grown < 20_000


def _fresh(text: str) -> str:
    """An equal text that is another object (the native grouping keeps recent texts by
    identity)."""
    return "".join(list(text))


@needs_native
@pytest.mark.parametrize("order", ["cycle", "runs", "scattered"])
def test_native_groups_of_values_cycling_through_more_texts_than_it_keeps_at_hand(order):
    """The native grouping keeps the groups of its last few text objects (8): values cycling
    through more texts than that, each text as two equal objects, Shardy ones per value
    among them, alone and on shared lines, are grouped as the twin groups them."""
    memos = RunMemos()
    texts = [("sdy", f'#sdy.sharding<@mesh, [{{"x{i}"}}, {{}}]>') for i in range(11)]
    texts += [("sdy", f'#sdy.sharding_per_value<[<@mesh, [{{"y{i}"}}]>]>') for i in range(3)]
    texts += [("gspmd", f"{{devices=[{i + 1},1]<=[{i + 1}]}}") for i in range(3)]
    objects = [(n, t) for n, t in texts] + [(n, _fresh(t)) for n, t in texts]
    pick = {
        "cycle": lambda k: k % len(objects),
        "runs": lambda k: (k // 5) % len(objects),
        "scattered": lambda k: (k * 11) % len(objects),
    }[order]
    items = []
    for k in range(300):
        n, t = objects[pick(k)]
        v = Value(f"%v{k}", k + 1, 3, t, n, "op", None, (8,), None, "f32", "mesh", None, None)
        items.append(v if k % 4 else LineValues((v,)))
    for part in (False, True):
        want = text_groups_py(tuple(items), part, memos)
        assert _plain(_native(items, part, memos)) == _plain(want)


@needs_native
def test_a_per_value_text_found_lately_under_itself_is_still_looked_at():
    """A per-value Shardy text object that a value of another notation was grouped under
    as it is (its own text the same object) lately: a Shardy value of that very object is
    still grouped by `own_text`, not under the text (what is skipped for a text found
    lately is only the per-value test of a text grouped as a plain Shardy one)."""
    per_value = _fresh('#sdy.sharding_per_value<[<@mesh, [{"x"}]>, <@mesh, [{}]>]>')
    items = []
    for k in range(20):
        n = "gspmd" if k % 2 else "sdy"
        items.append(
            Value(f"%v{k}", k, 1, per_value, n, "op", None, (8,), None, "f32", "m", None, None)
        )

    def own(v):  # the gspmd values' own text is the text object itself
        return v.text if v.notation == "gspmd" else f"own {v.name}"

    got = native(items, Value, own, lambda it: (), 3)
    assert got[per_value][0] == 10  # the gspmd values alone
    assert [k for k in got if k != per_value] == [f"own %v{k}" for k in range(0, 20, 2)]
