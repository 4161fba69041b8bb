"""The checks' keys of a module's values (`checks.keys`): the native `new_keys`
(`ir/fast/_keys.c`) gives what its Python twin gives, for every field, over every fixture
value and over generated ones (shapes past 2**63, per-device shapes, every kind of GSPMD
sharding); a value the native fields do not know goes to the twin; nothing leaks."""

from __future__ import annotations

import itertools
import sys

import pytest
from fixture_modules import scanned_modules
from hypothesis import given, settings
from hypothesis import strategies as st
from leaks import bytes_grown

from meshdiag.checks import keys
from meshdiag.checks.keys import FIELDS, Decides, new_keys_py
from meshdiag.ir.fast import _fastscan
from meshdiag.ir.model import LineValues, Value
from tests.test_properties import gspmd_values

#: every fixture module, read through one scan cache
MODULES = scanned_modules()

#: every field alone, every rule's key, and a few more combinations
SPECS = [(f,) for f in FIELDS] + [
    ("notation", "mesh_name", "#sharding", "#hlo"),
    ("notation", "#sharding"),
    ("#hlo", "uneven_shape"),
    ("#sharding", "rank"),
    ("#sharding", "mesh_name"),
    FIELDS,
]


def native(items, decides, clean):
    return _fastscan.new_keys(items, Value, decides.codes, clean)


def _values():
    out = []
    for m in MODULES:
        for it in m.items:
            out.extend(it.protos if it.__class__ is LineValues else [it])
    return out


VALUES = _values()


def test_the_rules_keys_are_fields():
    from meshdiag.checks import (
        md102_off_mesh_sharding,
        md104_device_count_mismatch,
        md105_uneven_shard,
        md107_rank_mismatch,
        md108_invalid_sharding,
    )

    for rule in (
        md102_off_mesh_sharding,
        md104_device_count_mismatch,
        md105_uneven_shard,
        md107_rank_mismatch,
        md108_invalid_sharding,
    ):
        assert isinstance(rule.DECIDES, Decides) and rule.DECIDES.fields in SPECS
    with pytest.raises(ValueError):
        Decides("name")  # never a value's name or place
    with pytest.raises(ValueError):
        Decides()


@pytest.mark.parametrize("fields", SPECS, ids=lambda f: "+".join(f))
def test_native_keys_are_the_twins_on_every_fixture_value(fields):
    d = Decides(*fields)
    assert len(VALUES) > 300
    want = new_keys_py(VALUES, d, {})
    assert native(VALUES, d, {}) == want
    assert [k for k, _ in want] == [d(v) for _, v in want]
    # keys already clean are left out; the rest keep their first value, in order
    clean = {k: v for k, v in want[::2]}
    assert native(VALUES, d, clean) == new_keys_py(VALUES, d, clean) == want[1::2]
    # other entries of a module's columns are passed over
    mixed = [LineValues(tuple(VALUES[:3])), *VALUES, None, "x"]
    assert native(mixed, d, {}) == want


@pytest.mark.parametrize("fields", SPECS, ids=lambda f: "+".join(f))
@pytest.mark.parametrize("twin", [False, True], ids=["native", "twin"])
def test_keys_picked_from_the_distinct_full_keys_are_the_keys(monkeypatch, fields, twin):
    """A rule's first values by key, picked from the list's distinct full keys (worked out
    once for all its rules), are the ones keyed value by value, with some keys clean."""
    if twin:
        monkeypatch.setattr(keys, "_native_new_keys", None)
    d = Decides(*fields)
    mixed = [LineValues(tuple(VALUES[:3])), *VALUES, *VALUES[:50], None]
    among = keys.distinct(mixed)
    assert len(among) < len(VALUES) and all(full == keys.ALL(v) for full, v in among)
    want = new_keys_py(mixed, d, {})
    assert keys.new_keys(mixed, d, {}, among) == want
    clean = {k: v for k, v in want[1::3]}
    assert keys.new_keys(mixed, d, clean, among) == new_keys_py(mixed, d, clean)


_SHAPES = st.one_of(
    st.none(),
    st.lists(st.one_of(st.integers(0, 40), st.integers(2**62, 2**70)), max_size=5).map(tuple),
)


@settings(max_examples=300, deadline=None)
@given(
    h=st.one_of(st.none(), gspmd_values),
    shape=_SHAPES,
    local=_SHAPES,
    notation=st.sampled_from(["sdy", "gspmd"]),
    mesh=st.sampled_from([None, "mesh", "m2"]),
)
def test_native_keys_are_the_twins_on_generated_values(h, shape, local, notation, mesh):
    vs = [
        Value("%a", 1, 1, "t", notation, "op", None, shape, local, "f32", mesh, h, h),
        Value("%b", 2, 1, "t", notation, "op", None, local, shape, "f32", mesh, None, h),
        Value("%c", 3, 1, "t", notation, "op", None, shape, None, "f32", None, h, None),
    ]
    for fields in SPECS:
        d = Decides(*fields)
        assert native(vs, d, {}) == new_keys_py(vs, d, {})


def test_a_value_the_native_fields_do_not_know_goes_to_the_twin():
    v = VALUES[0]
    odd = Value("%x", 1, 1, "t", "sdy", "op", None, [4, 8], None, "f32", None, v.sharding, None)
    d = Decides("#sharding", "rank")
    assert native([v, odd], d, {}) is None
    assert keys.new_keys([v, odd], d, {}) == new_keys_py([v, odd], d, {})
    with pytest.raises(TypeError):
        _fastscan.new_keys([v], Value, [2], {})
    with pytest.raises(ValueError):
        _fastscan.new_keys([v], Value, (9,), {})


def test_native_keys_leak_nothing():
    import tracemalloc

    d = Decides(*FIELDS)
    sample = list(itertools.islice(VALUES, 400))
    native(sample, d, {})
    h = next(v.hlo for v in sample if v.hlo is not None)
    before = sys.getrefcount(h)
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for _ in range(100):
            native(sample, d, {})
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert sys.getrefcount(h) == before
    assert grown < 20_000, grown


def test_a_lists_full_keys_are_worked_out_once_for_its_rules(monkeypatch):
    from meshdiag.checks import values

    calls = []
    real = values.distinct
    monkeypatch.setattr(values, "distinct", lambda items: calls.append(len(items)) or real(items))
    book = values._Book()
    items = list(VALUES[:40])
    assert book.distinct(items) is book.distinct(items)
    assert calls == [40]
    items.append(VALUES[41])  # grown: keyed again
    book.distinct(items)
    book.distinct(list(items))  # another list, equal: keyed again
    assert calls == [40, 41, 41]


@settings(max_examples=200, deadline=None)
@given(
    picks=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3), st.booleans()), max_size=80),
    clean_every=st.integers(2, 5),
)
def test_native_keys_of_repeated_fields_are_the_twins(picks, clean_every):
    """Values that share their fields' objects (skipped by identity in C after the first)
    and values whose equal fields are other objects (equal strings, equal shapes), evenly
    split or not, with some keys already clean."""
    hs = [v.hlo for v in VALUES if v.hlo is not None][:6]
    shapes = [(8, 16), (7, 16), (16,), (6, 4, 2), None]
    vs = []
    for k, s, copy in picks:
        h = hs[k % len(hs)]
        shape = shapes[s]
        notation, mesh = "sdy", "mesh"
        if copy:  # equal, not the same objects
            notation, mesh = "".join(["s", "dy"]), "".join(["me", "sh"])
            shape = None if shape is None else tuple(list(shape))
        vs.append(Value("%v", 1, 1, "t", notation, "op", None, shape, None, "f32", mesh, h, h))
    for fields in SPECS:
        d = Decides(*fields)
        want = new_keys_py(vs, d, {})
        assert native(vs, d, {}) == want
        clean = {k: v for k, v in want[::clean_every]}
        assert native(vs, d, clean) == new_keys_py(vs, d, clean)


#: the shared column entries of every fixture module, in order
ENTRIES = [it for m in MODULES for it in m.items if it.__class__ is LineValues]


@settings(max_examples=200, deadline=None)
@given(
    picks=st.lists(st.integers(0, len(ENTRIES) - 1), max_size=60),
    judged=st.lists(st.integers(0, len(ENTRIES) - 1), max_size=30),
    stale=st.lists(st.integers(0, len(ENTRIES) - 1), max_size=5),
    part=st.booleans(),
)
def test_native_fresh_entries_are_the_twins(picks, judged, stale, part):
    """The entries a rule has not judged (`checks.values.fresh_entries`): the native one
    gives the twin's entries, each once in order, and values, and leaves the verdicts'
    dict as the twin leaves it, whatever was judged before (an identity held for another
    object too: judged anew)."""
    from meshdiag.checks.values import fresh_entries_py

    shared = [ENTRIES[i] for i in picks]
    seen: dict = {id(ENTRIES[i]): (ENTRIES[i], True) for i in judged}
    for i in stale:
        seen[id(ENTRIES[i])] = (object(), True)
    twin_seen = dict(seen)
    got = _fastscan.fresh_entries(shared, seen, part)
    want = fresh_entries_py(shared, twin_seen, part)
    assert got[0] == want[0] and [id(v) for v in got[1]] == [id(v) for v in want[1]]
    assert seen.keys() == twin_seen.keys()
    assert all(seen[k][0] is twin_seen[k][0] and seen[k][1] == twin_seen[k][1] for k in seen)


def test_native_fresh_entries_refuse_and_leak_nothing():
    with pytest.raises(TypeError):
        _fastscan.fresh_entries(ENTRIES, [], False)
    with pytest.raises(AttributeError):
        _fastscan.fresh_entries([object()], {}, False)
    sample = ENTRIES[:300]
    _fastscan.fresh_entries(sample, {}, True)  # (each entry's `partitioned`, kept)
    first = sample[0]  # (not `sample[0]` in the assert: pytest's rewriting holds it)
    before = sys.getrefcount(first)
    grown = bytes_grown(lambda: _fastscan.fresh_entries(sample, {}, True), times=100)
    assert sys.getrefcount(first) == before
    assert grown < 20_000, grown
