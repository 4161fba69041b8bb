"""A summary's picture of a value whose tiles are all whole is drawn from its tiling and
shape (`module_summary.value_whole`, `grid.whole_text`), its layout made only if the
picture needs it: `value_whole` names such a value only where `value_layout` makes a
layout of the same tiling and shape, and the picture drawn before the layout is the one
rich draws of the layout."""

from __future__ import annotations

import io
import math
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from meshdiag.ir.model import Value
from meshdiag.ir.scan import scan_file
from meshdiag.ir.scancache import ScanCache
from meshdiag.layouts.engine import MAX_TILING_DEVICES
from meshdiag.memo import RunMemos
from meshdiag.model.sharding import HloSharding
from meshdiag.model.tiles import TileAssignment
from meshdiag.pipeline.inspect import num_devices
from meshdiag.pipeline.module_summary import value_layout, value_whole
from meshdiag.report.picture import LayoutPicture

ROOT = Path(__file__).resolve().parent.parent / "fixtures"


def _rich_draws(pic, width: int) -> str:
    from rich.console import Console

    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None, soft_wrap=True).print(pic)
    return buf.getvalue()


def _same_picture(v: Value, n: int | None, split: str, memos: RunMemos) -> bool:
    """Whether `v` is drawn from its tiling (`value_whole`); asserting, when it is, that
    its layout exists and the picture is the one rich draws of it."""
    spec = value_whole(v, n, split, memos)
    lay = value_layout(v, n, split, memos)
    if spec is None:
        return False
    assert lay is not None and (lay.tiling is not None or lay.kind == "replicated")
    assert (spec.tiling.tiles, spec.tiling.n, spec.shape, spec.split) == (
        lay.tiles,
        lay.num_devices,
        lay.shape,
        lay.split,
    )
    options = dict(max_cells=32, compact=True, legend=False, use_color=False)
    made: list[int] = []
    early = LayoutPicture(lambda: made.append(1) or lay, v.text, whole=spec, **options)
    text = early.plain(80)
    if text is not None and not made:  # drawn from the tiling alone
        assert text == _rich_draws(LayoutPicture(lay, v.text, **options), 80)
    return True


def test_fixture_values_drawn_from_their_tiling_are_their_layouts():
    """Every value of the fixtures with a picture, over its module's device count, none,
    fewer and more devices."""
    memos = RunMemos()
    files = sorted(p for p in ROOT.rglob("*") if p.suffix in (".txt", ".mlir"))
    cache = ScanCache()
    drawn = 0
    for p in files:
        for m in scan_file(str(p), io.BytesIO(p.read_bytes()), cache=cache).modules:
            for v in m.values:
                if v.shape is None or v.hlo is None:
                    continue
                n = num_devices(v, m, None)
                for count in {n, None, 1, 3, (n or 8) * 2}:
                    for split in ("xla", "even"):
                        drawn += _same_picture(v, count, split, memos)
    assert drawn > 100


@st.composite
def _values(draw):
    rank = draw(st.integers(0, 4))
    dims = [draw(st.sampled_from([1, 2, 3, 4])) for _ in range(rank)]
    rep = draw(st.booleans())
    tile_dims = (*dims, draw(st.sampled_from([2, 4]))) if rep else tuple(dims)
    if not tile_dims:
        tile_dims, rep = (2,), True
    sharding = HloSharding.tiled(TileAssignment.iota(tile_dims), replicate_on_last=rep)
    if draw(st.integers(0, 3)) == 0:  # untiled: drawn from a tiling only when replicated
        sharding = draw(
            st.sampled_from(
                [
                    HloSharding.replicated(),
                    HloSharding.maximal(1),
                    HloSharding("manual"),
                    HloSharding("unknown"),
                ]
            )
        )
    # the value's own rank, now and then not the sharding's
    shape_rank = rank if draw(st.integers(0, 5)) else draw(st.integers(0, 4))
    shape = tuple(
        draw(st.sampled_from([0, 1, 2, 3, 4, 6, 8, 12, 16, 10**6])) for _ in range(shape_rank)
    )
    v = Value("%x", 1, 1, "s", "gspmd", shape=shape, sharding=sharding, hlo=sharding)
    n = draw(st.sampled_from([None, math.prod(tile_dims), math.prod(tile_dims) + 2, 1]))
    return v, n, draw(st.sampled_from(["xla", "chunk", "array-split", "even"]))


#: a tiling of 4**5 = 1024 devices over 1026: more than a run keeps a tiling of (hypothesis
#: found it: the layout is whole, but it is left to the general path)
_OVER_THE_KEPT = HloSharding.tiled(TileAssignment.iota((4, 4, 4, 4, 4)), replicate_on_last=True)


@settings(max_examples=400, deadline=None)
@given(_values())
@example(
    (
        Value(
            "%x",
            1,
            1,
            "s",
            "gspmd",
            shape=(4, 4, 4, 4),
            sharding=_OVER_THE_KEPT,
            hlo=_OVER_THE_KEPT,
        ),
        1026,
        "xla",
    )
)
def test_a_value_is_drawn_from_its_tiling_only_where_it_has_that_layout(case):
    """Generated values (ranks the sharding does not tile, dims of 0, uneven dims, more
    devices than the sharding names, each split rule; untiled ones: only a replicated
    matrix is named; nor a layout over more devices than a run keeps a tiling of)."""
    v, n, split = case
    drawn = _same_picture(v, n, split, RunMemos())
    lay = value_layout(v, n, split, RunMemos())
    named = lay is not None and lay.rank > 0 and lay.num_devices <= MAX_TILING_DEVICES
    named = named and (lay.tiling is not None or (lay.kind == "replicated" and lay.rank == 2))
    named = named and all(d > 0 and d % k == 0 for d, k in zip(lay.shape, lay.tiles, strict=True))
    assert drawn == named  # each such layout is named, and no other


def test_a_tiling_of_more_devices_than_a_run_keeps_is_left_to_its_layout():
    """Over more than MAX_TILING_DEVICES devices (a 1024×1024 mesh) a tiling is an array of
    every device and is not kept for the run: `value_whole` does not work it out (the
    layout, made once, does), for a tiled value and a replicated one alike."""
    from meshdiag.layouts.engine import MAX_TILING_DEVICES
    from meshdiag.notation.gspmd import parse_gspmd

    big = MAX_TILING_DEVICES * 1024
    for text in ("{devices=[1024,1024]<=[1048576]}", "{replicated}"):
        h = parse_gspmd(text)
        v = Value("%x", 1, 1, text, "gspmd", shape=(1024, 1024), sharding=h, hlo=h)
        memos = RunMemos()
        assert value_whole(v, big, "xla", memos) is None
        assert value_layout(v, big, "xla", memos) is not None
        assert not memos.table("layouts.replicated").data  # nothing that big kept
    small = parse_gspmd("{replicated}")
    v = Value("%x", 1, 1, "{replicated}", "gspmd", shape=(8, 8), sharding=small, hlo=small)
    assert value_whole(v, 8, "xla", RunMemos()) is not None


@settings(max_examples=200, derandomize=True, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.integers(0, 70), st.integers(1, 9)), min_size=1, max_size=4),
        min_size=1,
        max_size=40,
    )
)
def test_ranges_kept_by_dim_are_the_ranges_worked_out(shapes):
    """`even_ranges` with the ranges it keeps by (n, k) (what `whole_text` passes: a
    tiling's pictures' dims repeat, their shapes do not) gives what it works out without
    them, call after call, and keeps at most KEPT_RANGES."""
    from meshdiag.report import whole

    known: dict = {}
    old = whole.KEPT_RANGES
    whole.KEPT_RANGES = 16  # (cleared now and then within the examples)
    try:
        for dims in shapes * 2:
            shape, tiles = tuple(n for n, _ in dims), tuple(k for _, k in dims)
            assert whole.even_ranges(shape, tiles, known) == whole.even_ranges(shape, tiles)
            assert len(known) <= whole.KEPT_RANGES
    finally:
        whole.KEPT_RANGES = old


def test_a_summarys_pictures_drawn_plain_are_its_layout_pictures(monkeypatch):
    """What a summary prints of each picture to a pipe (`file_text._summary_plain`: from
    the tiling where it can, no `LayoutPicture` made) is what its `LayoutPicture` draws,
    at widths from narrow to wide, for every picture of every fixture module; those of
    whole tiles in grids or tables without a `LayoutPicture`."""
    from meshdiag.pipeline.module_summary import summarise_module
    from meshdiag.report import file_text

    made = []
    real = file_text._summary_picture
    monkeypatch.setattr(file_text, "_summary_picture", lambda pic: made.append(1) or real(pic))
    memos = RunMemos()
    files = sorted(p for p in ROOT.rglob("*") if p.suffix in (".txt", ".mlir"))
    cache = ScanCache()
    seen = direct = 0
    for p in files:
        for m in scan_file(str(p), io.BytesIO(p.read_bytes()), cache=cache).modules:
            for row in summarise_module(m, mesh=None, split="xla", memos=memos).shardings:
                pic = row.picture
                if pic is None:
                    continue
                for width in (30, 60, 80, 132, 200):
                    seen += 1
                    before = len(made)
                    got = file_text._summary_plain(pic, width)
                    direct += len(made) == before
                    assert got == real(pic).plain(width)
    assert seen > 500 and direct > 50, (direct, seen)
