"""A tiled sharding's layouts share what does not depend on the tensor's dims (`_Tiling`,
kept in the run's memos): every layout made so is the layout made alone, for any GSPMD
sharding, shape and split rule (`chunk` leaves devices without data), and what is kept is
bounded."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from meshdiag.errors import MeshdiagError
from meshdiag.layouts import engine
from meshdiag.layouts.engine import layout
from meshdiag.memo import RunMemos
from meshdiag.model.sharding import HloSharding
from tests.test_properties import factorisation, gspmd_leaves

ARRAYS = ("starts", "stops", "present", "buffers", "tile_index", "groups")
FIELDS = ("shape", "split", "num_devices", "kind", "tiles", "partial", "manual", "notes")


def groups_hold(lay) -> bool:
    """The replica groups as `Layout.groups` promises them, whatever made them: -1 exactly
    where a device holds nothing, numbered 0.. by lowest device, and a group's devices hold
    the same slices."""
    g, present = lay.groups, lay.present
    if not ((g[~present] == -1).all() and (g[present] >= 0).all()):
        return False
    firsts = [int(x) for x in g[present]]
    order = list(dict.fromkeys(firsts))
    if order != list(range(len(order))):
        return False
    for k in order:
        rows = np.flatnonzero(g == k)
        if not (lay.starts[rows] == lay.starts[rows[0]]).all():
            return False
        if not (lay.stops[rows] == lay.stops[rows[0]]).all():
            return False
    return True


def same(a, b) -> bool:
    return all(getattr(a, f) == getattr(b, f) for f in FIELDS) and all(
        np.array_equal(getattr(a, f), getattr(b, f)) for f in ARRAYS
    )


#: a GSPMD sharding, shapes drawn for it, a split rule (`chunk` leaves devices without
#: data) and devices beyond the sharding's (they hold nothing)
TILED = {
    "h": gspmd_leaves(),
    "data": st.data(),
    "split": st.sampled_from(["xla", "chunk", "array-split"]),
    "extra": st.integers(0, 3),
}


@settings(max_examples=200, deadline=None)
@given(**TILED)
def test_layouts_sharing_a_tiling_are_the_layouts_made_alone(h, data, split, extra):
    assume(h.is_tiled and h.data_rank is not None and h.tile is not None)
    n = h.tile.num_devices + extra  # devices the sharding does not name hold nothing
    memos = RunMemos()
    for _ in range(3):
        shape = tuple(data.draw(st.integers(0, 30)) for _ in range(h.data_rank))
        got = layout(h, shape, split=split, num_devices=n, memos=memos, keep=False)
        assert same(got, layout(h, shape, split=split, num_devices=n))
        assert groups_hold(got)
        for f in ARRAYS:
            assert not getattr(got, f).flags.writeable
    assert len(memos.table("layouts.tilings", engine.MAX_TILINGS).data) == 1


@settings(max_examples=150, deadline=None)
@given(
    h=gspmd_leaves(),
    data=st.data(),
    split=st.sampled_from(["xla", "chunk", "array-split"]),
)
def test_tiles_and_dim_splits_shared_by_layouts_are_those_made_alone(h, data, split):
    """Layouts of one tiling share its tile order (the picture's tiles come out the same
    as from a layout made alone), and dims that repeat share their split (read-only)."""
    from meshdiag.report.grid import TileIndex

    assume(h.is_tiled and h.data_rank is not None and h.tile is not None)
    memos = RunMemos()
    dims = st.sampled_from([0, 1, 2, 5, 8, 13])  # few sizes: the splits repeat
    orders = set()
    for _ in range(4):
        shape = tuple(data.draw(dims) for _ in range(h.data_rank))
        got = layout(h, shape, split=split, memos=memos, keep=False)
        alone = layout(h, shape, split=split)
        assert same(got, alone)
        assert list(TileIndex(got)) == list(TileIndex(alone))
        assert [TileIndex(got).get(t.index) for t in TileIndex(alone)] == list(TileIndex(alone))
        orders.add(id(got.tile_order()))
    assert len(orders) == 1
    kept = memos.table("layouts.splits", engine.MAX_SPLITS).data
    assert len(kept) >= (h.data_rank > 0)
    for s in kept.values():
        assert not any(a.flags.writeable for a in (s.starts, s.stops, s.present, s.buffers))


@settings(max_examples=200, deadline=None)
@given(**TILED)
def test_small_tilings_gathered_at_once_lay_out_as_dim_by_dim(h, data, split, extra):
    """A small tiling's layout taken in one gather (`_gathered`) is the one made dim by dim
    (what bigger tilings do), devices without data (`chunk`, devices the sharding does
    not name) and replica groups included."""
    assume(h.is_tiled and h.data_rank is not None and h.tile is not None)
    n = h.tile.num_devices + extra
    shape = tuple(data.draw(st.integers(0, 30)) for _ in range(h.data_rank))
    gathered = layout(h, shape, split=split, num_devices=n)
    assert engine._tiling(h, h.data_rank, n).grid.gather is not None
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine, "MAX_GATHER_DEVICES", 0)
        assert engine._tiling(h, h.data_rank, n).grid.gather is None
        by_dim = layout(h, shape, split=split, num_devices=n)
    assert same(gathered, by_dim)
    assert groups_hold(gathered)
    for f in ARRAYS:
        assert not getattr(gathered, f).flags.writeable


def test_a_wrong_rank_fails_the_same_with_a_tiling_kept():
    from meshdiag.notation.gspmd import parse_gspmd

    h = parse_gspmd("{devices=[2,4]<=[8]}")
    memos = RunMemos()
    layout(h, (8, 8), memos=memos, keep=False)
    for m in (memos, None):
        with pytest.raises(MeshdiagError, match="tensor has rank 3"):
            layout(h, (8, 8, 8), memos=m, keep=False)


def test_big_tilings_are_not_kept(monkeypatch):
    from meshdiag.notation.gspmd import parse_gspmd

    monkeypatch.setattr(engine, "MAX_TILING_DEVICES", 4)
    memos = RunMemos()
    layout(parse_gspmd("{devices=[2,4]<=[8]}"), (8, 8), memos=memos, keep=False)
    layout(parse_gspmd("{devices=[2,2]<=[4]}"), (8, 8), memos=memos, keep=False)
    kept = memos.table("layouts.tilings", engine.MAX_TILINGS).data
    assert [k[0].tile.num_devices for k in kept] == [4]
    # keep=False remembers no layout itself
    assert memos.slot("layouts.engine", lambda: None) is None


def _whole_truth(lay) -> bool:
    """Every device holds data, none empty, none padded: read off the per-device arrays."""
    if not lay.present.all() or lay.padded.any():
        return False
    return not lay.rank or not (lay.stops <= lay.starts).any()


@pytest.mark.parametrize(
    "sharding, shape, split, n, whole",
    [
        ("{devices=[2,1]0,1}", (4, 3), "xla", 2, True),
        ("{devices=[2,1]0,1}", (5, 3), "xla", 2, False),  # padded
        ("{devices=[2,1]0,1}", (5, 3), "array-split", 2, True),  # short, not padded
        ("{devices=[2,1]0,1}", (0, 3), "xla", 2, False),  # empty
        ("{devices=[4]0,1,2,3}", (2,), "chunk", 4, False),  # past the last chunk
        ("{devices=[2,1]0,1}", (4, 3), "xla", 3, False),  # a device the sharding leaves out
        ("{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}", (4, 3), "xla", 4, True),
        ("{replicated}", (4, 3), "xla", 4, True),
        ("{replicated}", (4, 0), "xla", 4, False),
        ("{maximal device=1}", (4, 3), "xla", 4, False),
    ],
)
def test_whole_shards_of_listed_layouts(sharding, shape, split, n, whole):
    for memos in (None, RunMemos()):
        lay = layout(sharding, shape, split=split, num_devices=n, memos=memos, keep=False)
        assert bool(lay.whole_shards) is whole is _whole_truth(lay)


def _drawn_layouts(h, data, split: str, extra: int):
    """The layouts of `TILED`'s draws: a shape drawn for `h` (dims a multiple of their tile
    count, or a little more: padded, empty, past a chunk) on its devices and `extra` more,
    made with the run's memos and without; none where the sharding does not fit it."""
    tiled = h.is_tiled and h.tile is not None and h.data_rank is not None
    n = (h.tile.num_devices if tiled else 1) + extra
    tiles = h.tile.dims[: h.data_rank] if tiled else (1,) * data.draw(st.integers(0, 3))
    shape = tuple(
        k * data.draw(st.integers(0, 3)) + data.draw(st.sampled_from([0, 0, 1, 2])) for k in tiles
    )
    for memos in (None, RunMemos()):
        try:
            yield layout(h, shape, split=split, num_devices=n, memos=memos, keep=False)
        except MeshdiagError:
            return


@settings(max_examples=400, deadline=None, derandomize=True)
@given(**TILED)
def test_whole_shards_is_what_the_devices_say(h, data, split, extra):
    """`Layout.whole_shards`, worked out from the dims' splits (a picture's header then
    looks at no device), never claims what the devices do not hold; where the tiling is
    small enough to gather, it says so whenever it holds (the headers' shortcut is taken),
    with the run's memos or without."""
    for lay in _drawn_layouts(h, data, split, extra):
        n = lay.num_devices
        truth = _whole_truth(lay)
        assert not lay.whole_shards or truth
        if lay.kind in ("tiled", "replicated") and n <= engine.MAX_GATHER_DEVICES:
            assert bool(lay.whole_shards) == truth


@settings(max_examples=200, deadline=None, derandomize=True)
@given(**TILED)
def test_grid_plans_of_layouts_sharing_a_tiling_are_made_alone(h, data, split, extra):
    """A grid plan's skeleton (dims shown, each cell's tile) is kept with the tiling: the
    plans of layouts sharing one, on shapes drawn one after another, are the plans of the
    same layouts made alone."""
    from meshdiag.report.grid import plan_grid

    assume(h.is_tiled and h.data_rank is not None and h.tile is not None)
    n = h.tile.num_devices + extra
    assume(n <= 512)
    memos = RunMemos()
    for _ in range(3):
        shape = tuple(data.draw(st.integers(0, 30)) for _ in range(h.data_rank))
        shared = layout(h, shape, split=split, num_devices=n, memos=memos, keep=False)
        for max_facets in (8, 1):
            for max_rows, max_cols in ((None, None), (1, None), (3, 2), (None, 2)):
                kw = {"max_facets": max_facets, "max_rows": max_rows, "max_cols": max_cols}
                alone = layout(h, shape, split=split, num_devices=n)  # its own tiling
                assert plan_grid(shared, **kw) == plan_grid(alone, **kw)


def test_a_splits_whole_is_what_its_shards_say():
    """`DimSplit.whole` and a shard alone (`part`), worked out from n and k, against the
    ranges and buffers of all shards (numpy)."""
    from meshdiag.model.splits import split_dim

    for n in range(0, 50):
        for k in range(1, 14):
            for rule in ("xla", "chunk", "array-split", "even"):
                try:
                    s = split_dim(n, k, rule)
                except MeshdiagError:
                    continue
                full = (s.buffers == s.stops - s.starts).all()
                assert s.whole == bool(s.present.all() and (s.stops > s.starts).all() and full)
                c = -(-n // k)
                for i in range(k):  # a shard alone is what the arrays hold
                    start, stop = int(s.starts[i]), int(s.stops[i])
                    fit = 2 if stop <= start else 1 if stop - start < c else 0
                    held, buf = bool(s.present[i]), int(s.buffers[i])
                    assert s.part(i) == ((start, stop), held, buf, fit)


@settings(max_examples=200, deadline=None)
@given(
    h=st.one_of(
        gspmd_leaves().filter(lambda h: h.kind != "maximal"),
        st.integers(0, 5).map(HloSharding.maximal),
    ),
    data=st.data(),
    split=st.sampled_from(["xla", "chunk", "array-split"]),
    extra=st.integers(0, 3),
)
def test_tiles_read_from_the_splits_are_the_device_rows(h, data, split, extra):
    """A tile as a picture reads it (`Layout.tile_part` of the dims' splits, the tiling's
    tile order) is what the per-device arrays say of each of its devices: its coordinate,
    whether they hold data, their ranges and buffers; and the devices holding no tile are
    the ones the arrays leave outside every tile."""
    from meshdiag.report.grid import TileIndex

    if h.is_tiled:
        assume(h.data_rank is not None and h.tile is not None)
        rank, n = h.data_rank, h.tile.num_devices + extra
    else:
        rank = data.draw(st.integers(0, 3))
        n = (h.device or 0) + 1 + extra if h.kind == "maximal" else 1 + extra
    shape = tuple(data.draw(st.integers(0, 12)) for _ in range(rank))
    lay = layout(h, shape, split=split, num_devices=n, memos=RunMemos(), keep=False)
    tiles = list(TileIndex(lay))
    assert "arrays" not in lay.__dict__  # the tiles were read without the device rows
    seen = set()
    for t in tiles:
        for d in t.devices:
            seen.add(d)
            assert tuple(lay.tile_index[d]) == t.index
            assert bool(lay.present[d]) == (t.slices is not None)
            if t.slices is not None:
                assert tuple(zip(lay.starts[d], lay.stops[d], strict=True)) == t.slices
                assert tuple(lay.buffers[d]) == t.buffer
    holding = {d for d in range(n) if (lay.tile_index[d, 0] >= 0 if rank else lay.present[d])}
    assert seen == holding


def test_a_picture_of_whole_shards_makes_no_device_rows():
    """Drawing a layout whose shards are all whole reads its tiles from the splits: the
    per-device arrays are never made (the layout of a big file's pictures)."""
    from meshdiag.notation.gspmd import parse_gspmd
    from meshdiag.report.picture import LayoutPicture

    memos = RunMemos()
    for text, shape in (
        ("{devices=[2,1,4]<=[8] last_tile_dim_replicate}", (16, 8)),
        ("{devices=[4,2]<=[2,4]T(1,0)}", (8, 16)),
        ("{replicated}", (3, 5)),
    ):
        lay = layout(parse_gspmd(text), shape, num_devices=8, memos=memos, keep=False)
        assert lay.whole_shards
        assert LayoutPicture(lay, text, max_cells=32, compact=True).plain(80)
        assert "arrays" not in lay.__dict__
        assert lay.present.all()  # asked for, they are made
        assert "arrays" in lay.__dict__


@settings(max_examples=200, deadline=None)
@given(**TILED)
def test_tilings_listed_in_python_are_the_numpy_ones(h, data, split, extra):
    """A small tiling checked and ordered in Python (its devices listed, its tile order
    grouped from them: no numpy) draws the tiles and makes the device rows of the same
    tiling done with numpy."""
    from meshdiag.report.grid import TileIndex

    assume(h.is_tiled and h.data_rank is not None and h.tile is not None)
    n = h.tile.num_devices + extra
    shape = tuple(data.draw(st.integers(0, 30)) for _ in range(h.data_rank))
    listed = layout(h, shape, split=split, num_devices=n, memos=RunMemos(), keep=False)
    assert listed.tiling is not None and listed.tiling.devices is not None
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine, "MAX_LISTED_TILING", 0)
        by_numpy = layout(h, shape, split=split, num_devices=n, memos=RunMemos(), keep=False)
        assert by_numpy.tiling is not None and by_numpy.tiling.devices is None
        assert list(TileIndex(listed)) == list(TileIndex(by_numpy))
    assert same(listed, by_numpy)


@settings(max_examples=300, deadline=None)
@given(
    devices=st.lists(st.integers(-2, 9), max_size=10),
    num_devices=st.none() | st.integers(0, 10),
)
def test_devices_checked_in_python_fail_as_checked_by_numpy(devices, num_devices):
    """A tile assignment's devices checked in Python give the device count, or the error,
    that the numpy check gives."""

    def outcome(check, devs):
        try:
            return check(devs, num_devices)
        except MeshdiagError as e:
            return str(e)

    got = outcome(engine._checked_devices, tuple(devices))
    assert got == outcome(engine._checked_array, np.array(devices, dtype=np.int64))


@st.composite
def _iota_assignments(draw):
    n = draw(st.sampled_from([1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64]))
    dims, reshape = draw(factorisation(n)), draw(factorisation(n))
    return dims, reshape, draw(st.permutations(range(len(reshape))))


@settings(max_examples=200, deadline=None)
@given(_iota_assignments())
def test_an_iota_assignment_listed_in_python_is_its_array(form):
    from meshdiag.model.tiles import TileAssignment

    dims, reshape, perm = form
    tile = TileAssignment.iota(dims, reshape, perm)
    listed = tile.devices()  # (no array made yet: listed in Python)
    assert listed == tuple(tile.array().reshape(-1).tolist())


def test_a_picture_of_an_even_dump_imports_no_numpy():
    """`inspect` of files whose shardings split evenly draws their pictures from the
    splits and the tilings alone: numpy (40 ms to import) is never loaded."""
    from tests.test_lazy_pydantic import imported

    for path in ("fixtures/seed", "fixtures/jax"):
        assert "numpy" not in imported(["inspect", path, "-j", "1"])
    assert "numpy" in imported(["layout", "{devices=[2,2]<=[4]}", "--shape", "8,8", "-f", "json"])


def test_lint_of_correct_dumps_and_listed_replicated_tiles_import_no_numpy(tmp_path):
    """Correct every-pass dumps and collectives linted (Shardy collectives' axes checked
    without making their device groups; replica groups of small meshes and iotas, and iota
    device ids, listed in Python), listed tiles with replication (their groups sorted and
    read as iotas in Python) and a lint finding of an uneven shard never load numpy."""
    from tests.test_lazy_pydantic import imported

    for path in ("fixtures/xla_dump/mlp2", "fixtures/xla_dump/loop", "fixtures/comms"):
        assert "numpy" not in imported(["lint", path]), path
    hlo = tmp_path / "listed.txt"
    hlo.write_text(
        "HloModule m, num_partitions=4\n\nENTRY %main (p: f32[8,8]) -> f32[8,8] {\n"
        "  %p = f32[8,8]{1,0} parameter(0), "
        "sharding={devices=[2,1,2]3,1,0,2 last_tile_dim_replicate}\n"
        "  ROOT %c = f32[8,8]{1,0} copy(%p), sharding={devices=[2,1,2]0,2,1,3 last_tile_dims={replicated}}\n"
        "}\n"
    )
    assert "numpy" not in imported(["inspect", str(tmp_path), "-j", "1"])
    # MD105 names the short and empty devices of a small tile from lists
    uneven = tmp_path / "uneven.txt"
    uneven.write_text(
        "HloModule m, num_partitions=8\n\nENTRY %main (p: f32[7,8]) -> f32[7,8] {\n"
        "  ROOT %p = f32[7,8]{1,0} parameter(0), sharding={devices=[8,1]3,1,0,2,4,5,6,7}\n}\n"
    )
    assert "numpy" not in imported(["lint", str(uneven), "--split", "chunk"])


@settings(max_examples=400, deadline=None)
@given(**TILED)
def test_a_headers_notes_read_from_the_tiles_are_the_devices_notes(h, data, split, extra):
    """A picture header's notes (padded buffers, empty shards, devices without data) read
    from a small tiling's tiles (`listed_notes`, no numpy) are those its per-device arrays
    give (`array_notes`); every tiled layout of a few devices is read so."""
    from meshdiag.report.grid import array_notes, listed_notes

    for lay in _drawn_layouts(h, data, split, extra):
        listed = listed_notes(lay)
        small = lay.tiling is not None and lay.tiling.devices is not None
        if small and lay.rank and lay.num_devices <= engine.LISTED_ORDER_DEVICES:
            assert listed is not None
        if listed is not None:
            assert listed == array_notes(lay)
