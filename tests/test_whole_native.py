"""A summary's usual picture drawn in C (`report.whole._drawn_natively`: the grid of whole
tiles, or the table of every tile where no grid fits, with its header, in `ir/fast/_grid.c`)
is what `whole_text` draws without it, character for character, and it leaves every other
picture (non-ASCII or unprintable text, uneven dims, facets, cells to wrap) to that path."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from meshdiag.ir.fast import native
from meshdiag.ir.model import Value
from meshdiag.memo import RunMemos
from meshdiag.notation.gspmd import parse_gspmd
from meshdiag.pipeline.module_summary import value_whole
from meshdiag.report import whole

pytestmark = pytest.mark.skipif(
    native("whole_grid_text") is None, reason="the native code is not built"
)

OPTIONS = dict(max_cells=32, compact=True, legend=False)


def _spec(text: str, shape: tuple[int, ...], n: int | None, split: str = "xla"):
    h = parse_gspmd(text)
    v = Value("%x", 1, 1, text, "gspmd", shape=shape, sharding=h, hlo=h)
    return value_whole(v, n, split, RunMemos())


def _twin(spec, title, width) -> object:
    """`whole_text` with the native drawing switched off (a fresh tiling: nothing kept)."""
    drawn = whole._native_whole_grid_text
    whole._native_whole_grid_text = None
    try:
        return whole.whole_text(spec, title, width, **OPTIONS)
    finally:
        whole._native_whole_grid_text = drawn


def _both(case) -> tuple[object, object, object]:
    """What `whole_text` asked the native drawing (None: nothing), its answer with it and
    its answer without it."""
    text, shape, n, split, title, width = case
    spec = _spec(text, shape, n, split)
    if spec is None:
        return None, None, None
    asked = []
    real = whole._drawn_natively
    whole._drawn_natively = lambda *a: asked.append(real(*a)) or asked[-1]
    try:
        got = whole.whole_text(spec, title, width, **OPTIONS)
    finally:
        whole._drawn_natively = real
    return asked[0] if asked else None, got, _twin(_spec(text, shape, n, split), title, width)


@st.composite
def _cases(draw):
    rank = draw(st.integers(1, 3))
    tiles = [draw(st.sampled_from([1, 1, 2, 3, 4, 8])) for _ in range(rank)]
    last = draw(st.sampled_from(["", " last_tile_dim_replicate", " last_tile_dims={manual}"]))
    extra = draw(st.sampled_from([2, 4])) if last else 1
    total = math.prod(tiles) * extra
    dims = [*tiles, extra] if last else tiles
    order = f"<=[{total}]"
    if draw(st.booleans()) and total % 2 == 0 and total > 2:
        order = f"<=[2,{total // 2}]T(1,0)"
    text = "{devices=[" + ",".join(map(str, dims)) + "]" + order + last + "}"
    shape = tuple(
        k * draw(st.sampled_from([1, 2, 3, 5, 8, 16, 1000, 123457, 9999999]))
        + draw(st.sampled_from([0] * 6 + [1]))
        for k in tiles
    )
    n = draw(st.sampled_from([None, total, total + 2]))
    split = draw(st.sampled_from(["xla", "chunk", "even"]))
    title = draw(
        st.sampled_from(
            ["", "{devices=[2,4]<=[8]}", '#sdy.sharding<@mesh, [{}, {"x"}]>', "é title", "a\tb"]
        )
    )
    # (a table where no grid fits: long ranges, or a narrow console)
    width = draw(st.one_of(st.integers(10, 200), st.sampled_from([40, 50, 60, 70, 80])))
    return text, shape, n, split, title, width


@settings(max_examples=600, deadline=None)
@given(_cases())
@example(("{devices=[2,4]<=[8]}", (16, 19280), 8, "xla", "t", 80))  # a table
@example(("{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}", (16, 8), 8, "xla", "", 80))
@example(("{devices=[2,2,2]<=[8] last_tile_dims={manual}}", (4, 4), 8, "xla", "m", 80))
@example(("{devices=[8]<=[8]}", (123457 * 8,), 8, "xla", "wide", 30))  # a table without buffer
def test_the_native_picture_is_the_python_one(case):
    direct, got, want = _both(case)
    assert got == want
    if direct is not NotImplemented and direct is not None:
        assert direct == want


def test_each_kind_of_picture_is_drawn_natively():
    """The grid, the table with and without its buffer column, a header with notes: each
    drawn in C (not left to the Python path) and the same as that path's."""
    cases = [
        ("{devices=[2,4]<=[8]}", (16, 8), 8, "xla", "grid", 80),
        ("{devices=[4]<=[4]}", (8,), 4, "chunk", "row", 80),
        ("{devices=[2,4]<=[8]}", (16, 19280), 8, "xla", "table", 80),
        ("{devices=[8]<=[8]}", (123457 * 8,), 8, "xla", "narrow table", 50),
        ("{devices=[2,2,2]<=[8] last_tile_dims={manual}}", (4, 4), 8, "xla", "notes", 80),
    ]
    for case in cases:
        direct, got, want = _both(case)
        assert isinstance(direct, str), case
        assert got == want == direct
    assert "table instead of a grid" in _both(cases[2])[0]
    assert "every tile's buffer is its shard" in _both(cases[3])[0]
    assert "manual subgroups" in _both(cases[4])[0]


def test_what_the_native_picture_leaves_to_python():
    """Non-ASCII or unprintable text, three split dims (a header naming the dims), a table
    whose cells must wrap: NotImplemented, and `whole_text` draws (or refuses) them as its
    twin does. (A dim split unevenly never gets here: `value_whole` names no such layout.)"""
    cases = [
        ("{devices=[2,4]<=[8]}", (16, 8), 8, "xla", "é", 80),
        ("{devices=[2,4]<=[8]}", (16, 8), 8, "xla", "a\tb", 80),
        ("{devices=[2,2,2]<=[8]}", (4, 4, 4), 8, "xla", "rank 3", 80),
        ("{devices=[2,4]<=[8]}", (16, 19280), 8, "xla", "wrapped", 30),
    ]
    for case in cases:
        direct, got, want = _both(case)
        assert direct is NotImplemented, case
        assert got == want


def test_the_native_pictures_refuse_what_they_do_not_expect():
    """Called with what no tiling gives (wrong types, negative or huge counts, lists of the
    wrong length): NotImplemented or 0, never a crash or a list of a trillion ranges."""
    grid = whole._native_whole_grid_text
    table = whole._native_whole_table_text
    cells = whole._GridCells.of([[(0,), (1,)]])
    head = ("t", (8, 8), "xla", 2, (), (1, 2))
    assert isinstance(grid(*head, [(None, cells)], -1, 1, 80, 4, 4), str)
    odd = [
        ("t", (8, 10**12), "xla", 2, (), (1, 10**12)),  # a trillion tiles
        ("t", (8, 8), "xla", 2, (), (1, -2)),
        ("t", (8, 8), "xla", 2.0, (), (1, 2)),
        ("t", (8,), "xla", 2, (), (1, 2)),  # ranks that differ
        ("t", (8, 8), "xla", 2, ("é",), (1, 2)),
        ("t", (8, 8), "xla", 2, [], (1, 2)),
    ]
    for args in odd:
        assert grid(*args, [(None, cells)], -1, 1, 80, 4, 4) is NotImplemented, args
        assert table(*args, ["a", "b"], 1, 1, 80) is NotImplemented, args
    assert grid(*head, [(None, cells)], 1, 1, 80, 4, 4) is NotImplemented  # the same dim
    assert grid(*head, [(None, "cells")], -1, 1, 80, 4, 4) is NotImplemented
    assert grid(*head, [(None, cells)], -1, 1, -5, 4, 4) == 0  # no room: a table
    assert table(*head, ["a"], 1, 1, 80) is NotImplemented  # a start per tile, or none
    assert table(*head, ["a", "b"], 1, 1, -5) is NotImplemented
    assert grid(*head[:5]) is NotImplemented and table() is NotImplemented


def test_a_tilings_native_grid_is_kept_per_picture_size():
    """The native drawing's arguments are kept with the tiling per largest grid and facet
    count (`whole._native_grid`): one tiling drawn at several sizes in turn draws each as the
    Python path does on a fresh tiling."""
    text, shape = "{devices=[2,4]<=[8]}", (16, 8)
    spec = _spec(text, shape, 8)
    sizes = [(32, 4), (4, 4), (8, 1), (2, 1), (32, 4)]
    drawn = []
    for max_cells, max_facets in sizes:
        opts = dict(max_cells=max_cells, max_facets=max_facets, compact=True, legend=False)
        got = whole.whole_text(spec, "t", 80, **opts)
        native = whole._native_whole_grid_text
        whole._native_whole_grid_text = None
        try:
            want = whole.whole_text(_spec(text, shape, 8), "t", 80, **opts)
        finally:
            whole._native_whole_grid_text = native
        assert got == want, (max_cells, max_facets)
        drawn.append(got)
    assert len(set(drawn)) > 1  # (a grid, then a table where no grid fits)
