"""The native drawer of a picture's grids of whole tiles (`ir/fast/_grid.c`) against its
Python twin `report.whole.grid_text_py`: the same text, 0 or None for every input, and
NotImplemented (the twin decides) for any it does not expect."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from meshdiag.ir.fast import native
from meshdiag.report.grid import MIN_CELL_WIDTH, MIN_LABEL_WIDTH
from meshdiag.report.whole import _GridCells, grid_text, grid_text_py

NATIVE = native("grid_text")
pytestmark = pytest.mark.skipif(NATIVE is None, reason="the native extension is not built")

_RANGE = st.text(alphabet="0123456789:", min_size=1, max_size=12)
_DEVICES = st.text(alphabet="0123456789,-:.", min_size=1, max_size=24)


@st.composite
def _grids(draw):
    rows = draw(st.integers(1, 5))
    cols = draw(st.integers(1, 6))
    row_ranges = draw(st.none() | st.lists(_RANGE, min_size=rows, max_size=rows))
    rows = 1 if row_ranges is None else rows
    col_ranges = draw(st.lists(_RANGE, min_size=cols, max_size=cols))
    grids = []
    for _ in range(draw(st.integers(1, 4))):
        texts = draw(
            st.lists(st.lists(_DEVICES, min_size=cols, max_size=cols), min_size=rows, max_size=rows)
        )
        # the widest text of each column, or any width (the arithmetic is the twin's either way)
        widest = [max(map(len, column)) for column in zip(*texts, strict=True)]
        if draw(st.booleans()):
            widest = draw(st.lists(st.integers(0, 40), min_size=cols, max_size=cols))
        title = draw(st.none() | st.just("") | st.text(alphabet="dim0123=/[]:, ", max_size=30))
        grids.append((title, _GridCells([], texts, widest)))
    return row_ranges, col_ranges, grids


#: columns shared out one wider than the room (41 + 30 in 70): the natural widths then
_ONE_OVER = (["0:8"], ["0:4", "4:8"], [(None, _GridCells([], [["0" * 39, "1"]], [39, 1]))])


@settings(max_examples=600, deadline=None)
@given(_grids(), st.integers(4, 260))
@example(_ONE_OVER, 73)
def test_native_grid_text_is_its_twin(args, width):
    row_ranges, col_ranges, grids = args
    want = grid_text_py(row_ranges, col_ranges, grids, width)
    got = NATIVE(row_ranges, col_ranges, grids, width, MIN_LABEL_WIDTH, MIN_CELL_WIDTH)
    assert got == want and type(got) is type(want)


def test_odd_margins_are_centred_as_python_centres():
    """`str.center` puts an odd margin's extra space left or right by the width's parity."""
    cells = _GridCells([], [["1", "12"]], [1, 2])
    for width in range(20, 80):
        want = grid_text_py(["0:8"], ["0:3", "3:6"], [(None, cells)], width)
        assert NATIVE(["0:8"], ["0:3", "3:6"], [(None, cells)], width, 5, 9) == want


@pytest.mark.parametrize(
    "args",
    [
        (["0:8"], ["0:4"], [(None, _GridCells([], [["0…3"]], [3]))]),  # not ASCII
        (["0:8"], ["0:4"], [("dim0=0/2 [0:8]…", _GridCells([], [["0-3"]], [3]))]),
        (["0:8", "8:16"], ["0:4"], [(None, _GridCells([], [["0-3"]], [3]))]),  # rows short
        (None, ["0:4", "4:8"], [(None, _GridCells([], [["0", "1"]], [1]))]),  # widest short
        (None, ["0:4"], [(None, _GridCells([], [["0", "1"]], [1]))]),  # a row too long
        (None, [], [(None, _GridCells([], [[]], []))]),  # no column
        (None, ["0:4"], []),  # no grid
    ],
)
def test_inputs_it_does_not_expect_go_to_the_twin(args):
    """NotImplemented, and `grid_text` answers what the twin answers (raises what it
    raises)."""
    assert NATIVE(*args, 80, MIN_LABEL_WIDTH, MIN_CELL_WIDTH) is NotImplemented
    try:
        want = grid_text_py(*args, 80)
    except (ValueError, ZeroDivisionError) as e:
        with pytest.raises(type(e)):
            grid_text(*args, 80)
    else:
        assert grid_text(*args, 80) == want
