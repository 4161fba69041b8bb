"""Layout pictures: device-list compression, grid planning, terminal grid, SVG and HTML."""

from __future__ import annotations

import math
import random
import re
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshdiag.layouts.engine import TiledSpec, layout
from meshdiag.model.sharding import HloSharding
from meshdiag.model.tiles import TileAssignment
from meshdiag.notation.devicelist import compress_devices, device_runs, expand_devices
from meshdiag.notation.gspmd import parse_gspmd
from meshdiag.report.grid import choose_dims, plan_grid, tiles_of
from meshdiag.report.picture import render_text
from meshdiag.report.svg import to_html, to_svg

SVG_NS = "{http://www.w3.org/2000/svg}"


def tiled(dims, reshape=None, perm=None, *, rep=False):
    return HloSharding.tiled(TileAssignment.iota(dims, reshape, perm), replicate_on_last=rep)


def grid_rows(text: str) -> list[list[str]]:
    """Cell texts of each boxed row line: `│ a │ b │` → ['a', 'b'] (blank cells dropped)."""
    rows = []
    for line in text.splitlines():
        if line.startswith("│"):
            cells = [c.strip() for c in line.strip("│").split("│")]
            if any(cells):
                rows.append(cells)
    return rows


# -- device lists -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ids,text",
    [([0, 4], "0,4"), (range(256), "0-255"), ([0, 1], "0,1"), ([0, 1, 2], "0-2"),
     (range(0, 256, 2), "0-254:2"), ([3, 1, 2, 9], "1-3,9"), ([5], "5"), ([], "")],
)  # fmt: skip
def test_compress_devices(ids, text):
    assert compress_devices(ids) == text


@given(
    st.lists(st.integers(0, 10**12), max_size=2),
    st.one_of(st.none(), st.integers(1, 30)),
)
def test_compress_two_devices_as_the_general_path(ids, max_chars):
    """A tuple of up to two ids (a picture's tile) is listed without the run search: the
    same text as the general path (a list), also where `max_chars` elides it."""
    assert compress_devices(tuple(ids), max_chars=max_chars) == compress_devices(
        ids, max_chars=max_chars
    )


def test_compress_roundtrip_and_elision():
    rng = random.Random(3)
    for _ in range(200):
        ids = rng.sample(range(300), rng.randrange(1, 60))
        text = compress_devices(ids)
        assert expand_devices(text) == sorted(ids)
        short = compress_devices(ids, max_chars=20)
        assert len(short) <= 20 or "…" not in short
        if "…" in short:
            kept = expand_devices(short.split("…")[0].rstrip(","))
            left = int(re.search(r"\+(\d+)", short).group(1))
            assert len(kept) + left == len(ids)
    assert device_runs([0, 1, 2, 3, 8, 9, 10, 11]) == [(0, 3, 1), (8, 11, 1)]


# -- planning -------------------------------------------------------------------------------


def test_choose_dims_folds_and_facets():
    assert choose_dims((), ()) == ((), (), (), False)
    assert choose_dims((8,), (4,)) == ((), (0,), (), False)
    assert choose_dims((8, 8), (1, 4)) == ((0,), (1,), (), False)
    assert choose_dims((1, 7, 32, 32), (1, 8, 1, 1)) == ((), (1,), (), False)
    assert choose_dims((4, 4, 4), (2, 2, 2)) == ((1,), (2,), (0,), False)
    # too many facets: a projection with the leading dims flattened into rows
    assert choose_dims((64, 64, 128, 8), (16, 16, 32, 1)) == ((0, 1), (2,), (), True)


def test_tiles_group_devices():
    tiles = tiles_of(layout(tiled((1, 4, 2), (2, 4), (1, 0), rep=True), (32, 32)))
    assert {t.index: t.devices for t in tiles.values()} == {(0, j): (j, j + 4) for j in range(4)}


# -- terminal grid --------------------------------------------------------------------------


def test_seed_pictures_draw_the_right_devices():
    bad = render_text(layout(tiled((1, 4, 2), rep=True), (32, 32)), "bad")
    good = render_text(layout(tiled((1, 4, 2), (2, 4), (1, 0), rep=True), (32, 32)), "good")
    assert grid_rows(bad) == [
        ["0,1", "2,3", "4,5", "6,7"],
        ["[0:32, 0:8]", "[0:32, 8:16]", "[0:32, 16:24]", "[0:32, 24:32]"],
    ]
    assert grid_rows(good)[0] == ["0,4", "1,5", "2,6", "3,7"]
    assert good.splitlines()[0].startswith("good  shape 32×32  split xla  8 devices")


def test_2d_grid_rows_and_proportional_widths():
    text = render_text(layout(tiled((2, 4)), (8, 8)), "g")
    rows = grid_rows(text)
    assert rows[0] == ["0", "1", "2", "3"] and rows[2] == ["4", "5", "6", "7"]
    assert rows[1][0] == "[0:4, 0:2]"
    # 10 split 4 ways under xla: last column narrower than the others
    uneven = render_text(layout(tiled((4,)), (10,)), "u")
    top = next(line for line in uneven.splitlines() if line.startswith("┌"))
    widths = [len(w) for w in top.strip("┌┐").split("┬")]
    assert widths[3] < widths[0]


def test_rank0_picture():
    text = render_text(layout(HloSharding.replicated(), (), num_devices=256), "{replicated}")
    assert grid_rows(text) == [["0-255"], ["scalar"]]
    assert "shape ()" in text


def test_rank3_facets():
    text = render_text(layout(tiled((2, 2, 2)), (4, 4, 4)), "r3")
    assert "dim0=0/2 [0:2]" in text and "dim0=1/2 [2:4]" in text
    rows = grid_rows(text)
    assert rows[0] == ["0", "1"] and rows[4] == ["4", "5"]
    assert "cell ranges: dim1, dim2" in text


def test_rank4_projection_when_many_facets():
    lay = layout(tiled((3, 3, 2, 2)), (6, 6, 4, 4))
    plan = plan_grid(lay)
    assert plan.projected and plan.row_dims == (0, 1, 2) and plan.col_dims == (3,)
    text = render_text(lay, "p", width=120, max_cells=64)
    assert "projection: rows = dim0 (3 tiles) × dim1 (3 tiles) × dim2 (2 tiles)" in text
    rows = grid_rows(text)
    assert len(rows) == 36  # 18 rows × (devices line + ranges line)
    assert rows[0] == ["0", "1"] and rows[1] == ["[0:2, 0:2, 0:2, 0:2]", "[0:2, 0:2, 0:2, 2:4]"]
    # a few facets stay facets
    assert not plan_grid(layout(tiled((3, 4, 2, 1)), (6, 8, 4, 5))).projected


def test_uneven_and_empty_markings():
    text = render_text(layout(tiled((4,)), (5,)), "u")
    rows = grid_rows(text)
    assert rows[1] == ["[0:2]", "[2:4]", "[4:5]", "[5:5]"]
    assert rows[2][2] == "1+pad 1" and rows[2][3].startswith("∅ empty")
    assert "padded buffers (2, split xla): devices 2,3" in text
    assert "empty shards (no elements): devices 3" in text

    chunk = render_text(layout(tiled((1, 8, 1, 1)), (1, 7, 32, 32), split="chunk"), "c")
    assert "∅ no data" in chunk and "no data (past the last chunk): devices 7" in chunk
    arr = render_text(layout(tiled((4,)), (10,), split="array-split"), "a")
    assert "short 2<3" in arr


def test_8192_devices_fall_back_to_an_elided_table():
    lay = layout(tiled((16, 16, 32, 1), (16, 16, 32), (2, 0, 1)), (64, 64, 128, 7))
    text = render_text(lay, "big", max_cells=64)
    lines = text.splitlines()
    assert len(lines) < 100
    assert "8192 tiles" in text and "8128 tiles omitted" in text
    assert "(0,0,0,0)" in text and "(15,15,31,0)" in text


def test_replicated_thousands_of_devices_is_one_cell():
    text = render_text(layout(HloSharding.replicated(), (8, 8), num_devices=4096), "rep")
    assert grid_rows(text)[0] == ["0-4095"]


def test_color_output_has_fills():
    text = render_text(layout(tiled((2, 2)), (4, 4)), "c", color=True)
    assert "\x1b[" in text and "48;2;" in text  # truecolor backgrounds


# -- SVG / HTML -----------------------------------------------------------------------------


def _tile_rects(svg: str):
    root = ET.fromstring(svg)
    return [e for e in root.iter(f"{SVG_NS}rect") if "tile" in e.get("class", "").split()]


@pytest.mark.parametrize(
    "sharding,shape,split,n_tiles",
    [
        (tiled((1, 4, 2), (2, 4), (1, 0), rep=True), (32, 32), "xla", 4),
        (tiled((4,)), (5,), "xla", 4),
        (tiled((1, 8, 1, 1)), (1, 7, 32, 32), "chunk", 8),
        (tiled((2, 2, 2)), (4, 4, 4), "xla", 8),
        (tiled((3, 4, 2, 1)), (6, 8, 4, 5), "xla", 24),
        (tiled((3, 3, 2, 2)), (6, 6, 4, 4), "xla", 36),
        (HloSharding.replicated(), (), "xla", 1),
    ],
)
def test_svg_is_valid_with_one_rect_per_tile(sharding, shape, split, n_tiles):
    lay = layout(sharding, shape, split=split)
    svg = to_svg(lay, "s <&> t")
    rects = _tile_rects(svg)
    assert len(rects) == n_tiles
    assert all(float(r.get("width")) > 0 and float(r.get("height")) > 0 for r in rects)
    for r in rects:
        assert r.find(f"{SVG_NS}title") is not None  # tooltip with devices and ranges


def test_svg_proportional_rectangles_and_empty_hatching():
    lay = layout(tiled((4,)), (10,))
    rects = _tile_rects(to_svg(lay))
    widths = [float(r.get("width")) for r in rects]
    assert widths[0] == pytest.approx(3 * widths[3], rel=0.01)
    empty = _tile_rects(to_svg(layout(tiled((4,)), (5,))))
    assert "empty" in empty[3].get("class") and empty[3].get("fill") == "url(#hatch)"
    assert empty[2].get("stroke-dasharray")  # padded tile outlined dashed
    fills = {r.get("fill") for r in _tile_rects(to_svg(layout(tiled((2, 4)), (8, 8))))}
    assert len(fills) == 8  # distinct fills per replica group


def test_html_is_self_contained():
    lay = layout(tiled((1, 4, 2), rep=True), (32, 32))
    page = to_html(lay, "{devices=[1,4,2]<=[8] last_tile_dim_replicate}")
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "<table>" in page
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")  # no external refs
    assert page.count('<tr><td class="swatch"') == 4
    assert "&lt;=[8]" in page  # escaped


# -- inspect's piped fast path matches rich ------------------------------------------------


def test_piped_lines_match_rich_for_summary_lines():
    """Piped (soft wrap, no colour) `inspect` writes a line's plain text itself; rich
    prints the same. Other consoles go through rich (its word wrap is not copied)."""
    import io

    from rich.console import Console
    from rich.text import Text

    from meshdiag.memo import RunMemos
    from meshdiag.report.file_text import Line, render_part

    samples = [
        Line(("module ", "dim"), ("jit_f", "bold"), "  line 3  (mlir, num_partitions=8)"),
        Line(
            ("  ×17 ", "bold"),
            ("{devices=[2,1,4]<=[8] last_tile_dim_replicate}", "green"),
            "  %x.1@26:50, %sharding_constraint.16@32:116, %sharding_constraint.17@38:116 (+14 more)",
            ("\n      = {devices=[2,1,4]<=[8] last_tile_dim_replicate}", "dim"),
        ),
        Line("  section: IR Dump Before AnalyzeMeshPass (analyze-mesh)", style="cyan"),
    ]
    for width in (12, 33, 80, 200):
        for soft in (True, False):
            console = Console(
                file=io.StringIO(), width=width, height=25, color_system=None, soft_wrap=soft
            )
            memos = RunMemos()
            for line in samples:
                with console.capture() as cap:
                    console.print(line.text())
                for _ in range(2):  # rendered, then from the memo
                    assert render_part(line, console, memos) == cap.get()
                    assert render_part(line.text(), console, memos) == cap.get()
    assert isinstance(samples[0].text(), Text)


# -- the picture drawn without rich ----------------------------------------------------------


@st.composite
def _pictured_layouts(draw):
    rank = draw(st.integers(0, 4))
    dims = [draw(st.sampled_from([1, 2, 3, 4])) for _ in range(rank)]
    rep = draw(st.booleans()) and rank > 0
    tile_dims = (*dims, draw(st.sampled_from([2, 4]))) if rep else tuple(dims)
    n = math.prod(tile_dims)
    perm = None
    if len(tile_dims) > 1 and draw(st.booleans()):
        perm = tuple(draw(st.permutations(range(len(tile_dims)))))
    sharding = (
        HloSharding.tiled(
            TileAssignment.iota(tile_dims, tile_dims if perm else None, perm),
            replicate_on_last=rep,
        )
        if rank
        else HloSharding.replicated()
    )
    shape = tuple(d * draw(st.integers(1, 3)) + draw(st.integers(-1, 2)) for d in dims)
    shape = tuple(max(0, s) for s in shape)
    split = draw(st.sampled_from(["xla", "chunk", "array-split"]))
    return layout(sharding, shape, num_devices=max(n, 1), split=split)


@settings(max_examples=250, deadline=None)
@given(
    _pictured_layouts(),
    st.sampled_from([24, 40, 60, 80, 120, 200]),
    st.booleans(),
    st.sampled_from([8, 32, 64]),
)
def test_plain_picture_is_what_rich_draws(lay, width, compact, max_cells):
    """A colourless picture drawn without rich is rich's drawing byte for byte, or not
    drawn (None: rich's table fallback, wide characters)."""
    import io

    from rich.console import Console

    from meshdiag.report.picture import LayoutPicture

    pic = LayoutPicture(
        lay, "s", max_cells=max_cells, use_color=False, compact=compact, legend=not compact
    )
    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None, soft_wrap=True).print(pic)
    plain = pic.plain(width)
    assert plain is None or plain == buf.getvalue()


def test_plain_picture_draws_the_usual_grids():
    from meshdiag.report.picture import LayoutPicture

    for lay in (layout(tiled((2, 4)), (8, 8)), layout(tiled((4,)), (10,))):
        assert LayoutPicture(lay, "s", use_color=False).plain(100) == render_text(lay, "s")


def _rich_draws(pic, width: int) -> str:
    import io

    from rich.console import Console

    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None, soft_wrap=True).print(pic)
    return buf.getvalue()


@pytest.mark.parametrize(
    ("dims", "shape", "width", "max_cells"),
    [
        ((1, 4), (9640, 9648), 80, 32),  # a grid too wide for the console: a table
        ((8,), (63,), 100, 4),  # more tiles than cells: the middle rows elided
        ((2, 2, 2), (7, 9, 5), 140, 2),  # uneven: short and padded notes in the table
    ],
)
def test_plain_picture_draws_the_table_fallback(dims, shape, width, max_cells):
    """A layout shown as a table (too wide for a grid, or more tiles than cells) is drawn
    without rich, byte for byte what rich draws."""
    from meshdiag.report.picture import LayoutPicture

    pic = LayoutPicture(
        layout(tiled(dims), shape), "s", max_cells=max_cells, use_color=False, legend=False
    )
    plain = pic.plain(width)
    assert plain is not None and "table instead of a grid" in plain
    assert plain == _rich_draws(pic, width)


def test_plain_table_leaves_rich_what_only_rich_draws():
    """A table wider than the console even with its cells wrapped (rich squeezes it) or a
    cell rich reads as markup is not drawn plain; a cell that only looks like an emoji
    code is."""
    from meshdiag.report.grid import TableRow, table_lines
    from meshdiag.report.picture import LayoutPicture

    pic = LayoutPicture(layout(tiled((1, 4)), (9640, 9648)), "s", use_color=False)
    assert pic.plain(30) is None  # narrower than the table's column names: rich squeezes
    assert pic.plain(40) == _rich_draws(pic, 40)  # its cells wrapped: drawn plain

    def table(note: str) -> list[str] | None:
        row = TableRow("(0)", "0-6:2,1-7:2", "[0:8]", "8", "8", note)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr("meshdiag.report.picture.table_rows", lambda lay, n, index=None: ([row], 0))
            mp.setattr(LayoutPicture, "_direct_rows", lambda self: None)  # (rows from tiles)
            return table_lines(pic._table_cells(200), 200)

    assert table("[bold]x[/bold]") is None
    assert table(":smile:") is None
    lines = table("")
    assert lines is not None and " 0-6:2,1-7:2 " in lines[3]


@settings(max_examples=100, deadline=None)
@given(_pictured_layouts(), st.sampled_from([1, 2, 4, 8]))
def test_plain_table_is_what_rich_draws(lay, max_cells):
    """Layouts with more tiles than cells, on a console wide enough for their table: the
    table drawn without rich is rich's, byte for byte."""
    from meshdiag.report.picture import LayoutPicture

    pic = LayoutPicture(lay, "s", max_cells=max_cells, use_color=False, legend=False)
    plain = pic.plain(400)
    assert plain is None or plain == _rich_draws(pic, 400)
    if "table instead of a grid" in _rich_draws(pic, 400):
        assert plain is not None  # a table this narrow is always drawn plain


@pytest.mark.parametrize(("text", "plain"), [("s", True), ("s全", False), ("s\u200dx", False)])
def test_plain_picture_leaves_rich_text_not_one_column_a_character(text, plain):
    """A picture holding a wide or zero-width character (here in its sharding's text) is
    left to rich, which measures it; one column a character, it is drawn plain."""
    from meshdiag.report.picture import LayoutPicture

    pic = LayoutPicture(layout(tiled((2, 4)), (8, 8)), text, use_color=False)
    drawn = pic.plain(100)
    assert (drawn is not None) == plain
    if plain:
        assert drawn == _rich_draws(pic, 100)


@pytest.mark.parametrize(
    ("shape", "width", "left_out"),
    [
        ((105880, 105888), 80, True),  # all columns: 81 wide; without buffer and note: 59
        ((105880, 105888), 100, False),  # the grid is 109 wide, the whole table fits
        ((105881, 105887), 80, False),  # padded: the buffers differ from the shards
    ],
)
def test_a_table_too_wide_leaves_out_the_columns_that_say_nothing(shape, width, left_out):
    """Too wide for the console, a table leaves out a buffer column equal to the shards and
    an empty note column, and says so, rather than have rich narrow the devices column
    (to nothing, when slices are long); plain and rich draw the same."""
    from meshdiag.report.picture import LayoutPicture

    lay = layout(parse_gspmd("{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"), shape)
    pic = LayoutPicture(lay, "s", use_color=False, legend=False)
    drawn = _rich_draws(pic, width)
    header = next(line for line in drawn.splitlines() if line.startswith(" tile"))
    assert ("buffer" not in header) == left_out
    assert ("every tile's buffer is its shard" in drawn) == left_out
    assert "(a grid is wider than the console)" in drawn  # 4 tiles: not --max-cells
    plain = pic.plain(width)
    assert plain is None or plain == drawn
    if "buffer" not in header or width == 100:  # it fits: every device list is shown
        assert "devices" in header and " 0,4 " in drawn and " 3,7 " in drawn
        assert plain == drawn


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(
        [
            "{devices=[3,5,4]<=[60] last_tile_dim_replicate}",
            "{devices=[4,8]<=[32]}",
            "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}",
            "{devices=[2,2,2]<=[8]}",
        ]
    ),
    st.integers(1, 3_000_000),
    st.integers(1, 300_000),
    st.integers(60, 120),
    st.sampled_from([2, 4, 64]),
)
def test_a_table_too_wide_wraps_and_shows_every_tile(text, n, m, width, max_cells):
    """A table too wide for the console even without its quiet columns wraps its device
    lists, slices, sizes and notes over several lines of their cells: no line is wider than
    the console, every column and every shown tile's devices are there (rich used to
    squeeze the devices and tile columns to nothing), plain and rich draw the same. (From
    60 columns: narrower than its column names, a rank-3 table is left to rich.)"""
    from meshdiag.report.grid import table_rows
    from meshdiag.report.picture import LayoutPicture

    h = parse_gspmd(text)
    shape = (n, m, 7)[: h.data_rank]
    lay = layout(h, shape)
    pic = LayoutPicture(lay, "s", max_cells=max_cells, use_color=False, legend=False)
    drawn = _rich_draws(pic, width)
    if "table instead of a grid" not in drawn:
        return
    lines = drawn.splitlines()
    at = next(k for k, line in enumerate(lines) if line.startswith(" tile"))
    table = lines[at : lines.index(" " * len(lines[at]), at)]
    assert all(len(line) <= width for line in table)
    header = table[0].split()
    assert header[:3] == ["tile", "devices", "slices"]
    cells = "".join(line[len(" tile   ") :].replace(" ", "") for line in table[2:])
    for row in table_rows(lay, max_cells)[0]:
        if row is not None:
            assert row.devices.replace(" ", "") in cells.replace("\n", "")
    assert pic.plain(width) == drawn


def test_a_table_that_fits_without_its_quiet_columns_is_not_wrapped():
    """Leaving out the quiet columns is enough here: the table is not wrapped, and its
    elided rows' line stays whole in the devices column."""
    from meshdiag.report.picture import LayoutPicture

    lay = layout(parse_gspmd("{devices=[16,16]<=[256]}"), (64, 64))
    pic = LayoutPicture(lay, "s", max_cells=32, use_color=False, legend=False)
    drawn = _rich_draws(pic, 80)
    assert "every tile's buffer is its shard" in drawn
    assert " …         … 224 tiles omitted (--max-cells) … " in drawn
    assert all("\n" not in c for row in pic._table_cells(80) for c in row)
    assert pic.plain(80) == drawn


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["0-3", ",", "8-11", ", ", "[0:333334", "15556:31112]", "d0 ", "×", "x"]),
        max_size=12,
    ).map("".join),
    st.integers(1, 30),
)
def test_wrapped_cell_text_keeps_every_character_in_lines_that_fit(text, width):
    from meshdiag.report.grid import _wrap_text

    wrapped = _wrap_text(text, width)
    assert all(len(line) <= width for line in wrapped.split("\n")) or wrapped == text
    assert wrapped.replace("\n", "").replace(" ", "") == text.replace(" ", "")


def test_a_table_for_more_tiles_than_cells_says_to_raise_max_cells():
    from meshdiag.report.picture import LayoutPicture

    pic = LayoutPicture(layout(tiled((8,)), (64,)), "s", max_cells=4, use_color=False)
    assert "(raise --max-cells for a grid)" in _rich_draws(pic, 100)


def test_the_characters_pictures_draw_without_a_look_up_are_one_column():
    """`LayoutPicture.plain` skips rich's per-character width look-up for pictures of these
    characters only: each must be printable and one column wide for rich."""
    import re

    from rich.cells import get_character_cell_size

    from meshdiag.report import grid

    chars = [chr(c) for c in range(0x110000) if not grid._OTHER_CHARACTER.match(chr(c))]
    assert len(chars) == 95 + 128 + 4
    for c in chars:
        assert c.isprintable() and get_character_cell_size(c) == 1, hex(ord(c))
    assert re.fullmatch(f"[{grid._ONE_COLUMN}]+", " ~─╿×…∅—")


#: mesh axes: names as meshes name them, sizes up to 8 (grids of up to 64 devices)
_MESH_AXES = st.lists(
    st.tuples(st.from_regex(r"[a-z_][a-z0-9_]{0,11}", fullmatch=True), st.integers(1, 8)),
    min_size=1,
    max_size=3,
    unique_by=lambda a: a[0],
).filter(lambda axes: math.prod(n for _, n in axes) <= 64)


@settings(max_examples=200, deadline=None)
@given(_MESH_AXES, st.sampled_from([16, 30, 50, 80, 120]), st.booleans())
def test_plain_mesh_grid_is_what_rich_draws(axes, width, color):
    """A mesh's grid drawn without rich is rich's drawing byte for byte (or left to rich:
    None), and device ids wider than the console say so on the title line (rich squeezed
    them to an empty line) whatever draws them; a header too wide is rich's to narrow."""
    import io

    from rich.console import Console

    from meshdiag.inputs.mesh_input import parse_mesh
    from meshdiag.ir.model import MeshDecl
    from meshdiag.report.file_text import MeshGrid, mesh_grid

    text = ",".join(f"{name}={n}" for name, n in axes)
    grid = mesh_grid(MeshDecl("mesh", parse_mesh(text), 1, 1, text))
    assert isinstance(grid, MeshGrid)
    buf = io.StringIO()
    Console(
        file=buf, width=width, color_system="truecolor" if color else None, soft_wrap=True
    ).print(grid)
    drawn = buf.getvalue()
    plain = grid.plain(width)
    shown = [grid.header, *grid.rows] if grid.named else grid.rows
    whole = sum(max(map(len, c)) + 2 for c in zip(*shown, strict=True))  # header and all
    if not color:
        assert plain is None or plain == drawn
        assert plain is not None or len(grid.title) > width or whole > width
    wide = "(device grid wider than the console)" in drawn
    assert wide == (grid.cells_width() > width)
    if whole <= width:  # (narrowing a header, rich may narrow the ids' columns too)
        assert all(str(d) in drawn for d in range(math.prod(n for _, n in axes)))


@pytest.mark.parametrize(
    "text, width",
    [
        ("data=2,model=8", 80),  # rich cuts the headers to `model[…`
        ("data=4,model=8", 80),
        ("data=2,model=8", 60),  # the row names too, the columns a character apart
        ("data=2,model=8", 40),  # every column narrowed evenly at the end
        ("batch=2,expert=4,model=2", 40),
    ],
)
def test_a_mesh_grid_wider_than_the_console_is_narrowed_as_rich_narrows_it(text, width):
    """(common meshes, drawn without importing rich: 8 columns of `model[0]` are 82
    characters wide)"""
    import io

    from rich.console import Console

    from meshdiag.inputs.mesh_input import parse_mesh
    from meshdiag.ir.model import MeshDecl
    from meshdiag.report.file_text import mesh_grid

    grid = mesh_grid(MeshDecl("mesh", parse_mesh(text), 1, 1, text))
    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None, soft_wrap=True).print(grid)
    assert "…" in buf.getvalue()
    assert grid.plain(width) == buf.getvalue()


#: untiled layouts of a matrix (every device, or one, holds it whole: one cell)
_UNTILED_MATRICES = st.builds(
    lambda text, shape, n: layout(parse_gspmd(text), shape, num_devices=n),
    st.sampled_from(["{replicated}", "{maximal device=3}", "{manual}", "{unknown}", "{unreduced}"]),
    st.tuples(st.integers(0, 40), st.integers(0, 40)),
    st.integers(4, 600),
)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(_pictured_layouts(), _UNTILED_MATRICES),
    st.sampled_from([24, 40, 60, 80, 120, 200]),
    st.sampled_from([4, 8, 32, 64]),
    st.sampled_from([None, 1, 3]),
)
def test_a_matrix_drawn_directly_is_the_planned_grid(lay, width, max_cells, extra):
    """A compact picture whose tiles are all whole is drawn without planning it
    (`_direct_grids`): where it is, its grids are the ones `plan_grid` and `_drawn` make (titled
    as theirs) under the same header, and where it says no grid fits, theirs does not (with
    devices the sharding leaves out, `extra`, and short, empty or padded tiles about)."""
    from meshdiag.report.grid import _box_lines, header_lines
    from meshdiag.report.picture import LayoutPicture

    if extra is not None and lay.kind == "tiled":  # more devices than the sharding names
        lay = layout(lay.sharding, lay.shape, num_devices=lay.num_devices + extra, split=lay.split)
    from meshdiag.report.whole import _TABLE

    pic = LayoutPicture(lay, "s", max_cells=max_cells, use_color=False, compact=True)
    direct = pic._direct_grids(width)
    if direct is None:
        return
    plan = plan_grid(lay, index=pic._tiles())
    drawn = pic._drawn(plan, width)
    if direct is _TABLE:  # no grid fits: the planned one does not either
        assert drawn is None
        return
    assert drawn is not None
    assert direct.text == "\n".join(
        x for f in drawn for x in ([f.title] if f.title else []) + _box_lines(f)
    )
    assert header_lines(lay, "s", direct.plan) == header_lines(lay, "s", plan)


@pytest.mark.parametrize(
    ("text", "shape", "split", "way"),
    [
        ("{devices=[2,1,4]<=[8] last_tile_dim_replicate}", (16, 9640), "xla", "direct"),
        ("{devices=[2,4]<=[8]}", (16, 48), "chunk", "direct"),
        ("{devices=[2,4]<=[8]}", (16, 40), "xla", "direct"),
        ("{devices=[1,3]<=[3]}", (10000, 30000), "xla", "direct"),  # ranges widen cells
        ("{devices=[4]<=[4]}", (400000,), "xla", "direct"),  # one row, `[a:b]` cells
        ("{devices=[2,1,4]<=[8]}", (8, 5, 16), "xla", "direct"),  # dims 0 and 2 shown
        ("{devices=[1,1,8]<=[8]}", (3, 5, 16), "chunk", "direct"),  # one split dim of three
        ("{devices=[2,4,1,1]<=[8]}", (4, 8, 3, 3), "xla", "direct"),
        ("{devices=[2,2,2]<=[8]}", (4, 4, 4), "xla", "direct"),  # two facets of 2 × 2
        ("{devices=[2,2,2,2]<=[16]}", (4, 4, 6, 8), "chunk", "direct"),  # facets by 2 dims
        ("{devices=[2,4,4]<=[32]}", (4, 8, 8), "xla", "direct"),  # 32 cells: all drawn
        ("{devices=[2,1,4]<=[8]}", (8, 0, 16), "xla", "planned"),  # an empty dim not shown
        ("{devices=[2,4]<=[8]}", (15, 48), "xla", "planned"),  # a padded row of tiles
        ("{devices=[2,4]<=[8]}", (16, 46), "chunk", "planned"),  # a short last chunk
        ("{devices=[2,4]<=[8]}", (16, 48), "array-split", "direct"),
        ("{devices=[2,4]<=[8]}", (16, 46), "array-split", "planned"),  # shorter shards
        ("{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}", (9640, 9648), "xla", "table"),
        ("{devices=[1,8]<=[8]}", (8, 8 * 10**6), "xla", "table"),
        ("{replicated}", (16, 48), "xla", "direct"),
        ("{maximal device=3}", (16, 48), "xla", "direct"),
        ("{replicated}", (0, 48), "xla", "planned"),  # an empty cell
        ("{unreduced}", (16, 48), "xla", "planned"),  # partial sums: a mark
    ],
)
def test_the_usual_matrix_is_drawn_directly(text, shape, split, way):
    """A compact picture of a matrix with whole tiles that fits the console takes the
    direct way, and one whose cells no grid can fit is a table without a grid planned
    first; an uneven one is planned."""
    _drawn_way(text, shape, split, 80, way)


def test_facets_of_more_cells_than_shown_are_a_table():
    """Facets whose cells together are more than the picture shows are not drawn directly
    (a grid of 2 × 4 × 8 cells, 32 shown at most): rich's table, as the plan decides."""
    from meshdiag.report.picture import LayoutPicture

    lay = layout(parse_gspmd("{devices=[2,4,8]<=[64]}"), (4, 8, 8))
    pic = LayoutPicture(lay, "s", max_cells=32, use_color=False, compact=True, legend=False)
    assert pic._direct_grids(200) is None
    drawn = pic.plain(200)
    assert drawn == _rich_draws(pic, 200) and "table instead of a grid" in drawn


@pytest.mark.parametrize("shape", [(8, 16), (100, 18)])  # ranges up to the narrow cell's
def test_a_matrix_whose_device_lists_do_not_fit_is_planned(shape):
    """Cells too wide for the console only for their device lists are planned: the grid
    elides the lists (`0,2,5,7,…(+4)`) rather than giving up for a table."""
    text = "{devices=[1,2,8]0,2,5,7,8,11,13,14,1,3,4,6,9,10,12,15 last_tile_dim_replicate}"
    drawn = _drawn_way(text, shape, "xla", 40, "planned")
    assert "0,2,5,7,…(+4)" in drawn and "table instead" not in drawn


def _drawn_way(text: str, shape: tuple, split: str, width: int, way: str) -> str:
    from meshdiag.report.picture import LayoutPicture
    from meshdiag.report.whole import _TABLE

    lay = layout(parse_gspmd(text), shape, split=split)
    pic = LayoutPicture(lay, "s", max_cells=32, use_color=False, compact=True, legend=False)
    got = pic._direct_grids(width)
    assert way == ("table" if got is _TABLE else "planned" if got is None else "direct")
    drawn = pic.plain(width)
    assert drawn == _rich_draws(pic, width)
    assert ("table instead of a grid" in drawn) == (way == "table")
    return drawn


@settings(max_examples=300, deadline=None)
@given(st.one_of(_pictured_layouts(), _UNTILED_MATRICES), st.sampled_from([2, 4, 8, 32, 64]))
def test_a_matrix_table_made_directly_is_the_tiles_table(lay, max_cells):
    """The table of a matrix whose tiles are all whole, made without building its tiles
    (`_direct_rows`), is the one `table_rows` makes from them."""
    from meshdiag.report.grid import TileIndex, table_rows
    from meshdiag.report.picture import LayoutPicture

    pic = LayoutPicture(lay, "s", max_cells=max_cells, use_color=False)
    direct = pic._direct_rows()
    if direct is None:
        return
    assert (direct, 0) == table_rows(lay, max_cells, TileIndex(lay))


def test_the_usual_matrix_table_is_made_directly():
    from meshdiag.report.grid import TileIndex, table_rows
    from meshdiag.report.picture import LayoutPicture

    text = "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"
    for shape, direct in (((9640, 9648), True), ((9640, 9647), False)):  # (padded: planned)
        pic = LayoutPicture(layout(parse_gspmd(text), shape), "s", use_color=False)
        assert (pic._direct_rows() is not None) == direct
        assert pic.plain(80) == _rich_draws(pic, 80) and "table instead" in pic.plain(80)
    # long device lists, elided in the table as in its tiles' one
    tile0 = [0, 1, 3, 4, 6, 9, 10, 12, 15, 17, 18, 20, 23, 25, 28, 30]
    devices = tile0 + [d for d in range(32) if d not in tile0]
    text = f"{{devices=[1,2,16]{','.join(map(str, devices))} last_tile_dim_replicate}}"
    lay = layout(parse_gspmd(text), (8, 2 * 10**7))
    pic = LayoutPicture(lay, "s", use_color=False, compact=True)
    rows = pic._direct_rows()
    assert rows is not None and rows[0].devices.endswith("…(+3)")
    assert (rows, 0) == table_rows(lay, 64, TileIndex(lay))
    assert pic.plain(80) == _rich_draws(pic, 80) and "table instead" in pic.plain(80)


@st.composite
def _even_layouts(draw):
    """Tiled layouts whose dims all split evenly, their ranges short or wide (wide ones make
    a grid too wide for the console: a table)."""
    rank = draw(st.integers(1, 4))
    dims = [draw(st.sampled_from([1, 2, 3, 4, 8])) for _ in range(rank)]
    while math.prod(dims) > 64:  # (a table of every tile: a few at most)
        dims[dims.index(max(dims))] = 1
    rep = draw(st.booleans())
    tile_dims = (*dims, draw(st.sampled_from([2, 4]))) if rep else tuple(dims)
    perm = None
    if len(tile_dims) > 1 and draw(st.booleans()):
        perm = tuple(draw(st.permutations(range(len(tile_dims)))))
    sharding = HloSharding.tiled(
        TileAssignment.iota(tile_dims, tile_dims if perm else None, perm), replicate_on_last=rep
    )
    shape = tuple(d * draw(st.sampled_from([1, 2, 3, 1000, 10**5, 10**7])) for d in dims)
    split = draw(st.sampled_from(["xla", "chunk", "array-split", "even"]))
    return layout(sharding, shape, num_devices=math.prod(tile_dims), split=split)


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(_pictured_layouts(), _even_layouts()),
    st.sampled_from([24, 40, 60, 80, 120, 200]),
    st.sampled_from([2, 4, 8, 32, 64]),
    st.booleans(),
    st.booleans(),
    st.sampled_from([None, 1, 3]),
)
def test_a_whole_tiling_is_drawn_from_its_tiling_as_rich_draws_its_layout(
    lay, width, max_cells, compact, legend, extra
):
    """`whole_text` draws a tiled layout from its tiling and shape alone, no `Layout` made:
    where it draws (a direct grid, or a table of every tile) its text is what rich draws
    of the layout, byte for byte; None where rich alone draws it. It leaves to the general
    path only layouts whose tiles are not all whole (uneven dims, devices left out, with
    `extra` devices) or whose grid is planned (a projection, elided device lists, a table
    of some tiles)."""
    from meshdiag.report.grid import MAX_FACETS, grid_cells
    from meshdiag.report.picture import LayoutPicture
    from meshdiag.report.whole import _TABLE, NOT_WHOLE, _Direct, whole_text

    if lay.tiling is None:  # (a scalar: replicated)
        return
    if extra is not None:  # more devices than the sharding names: not every one holds data
        lay = layout(lay.sharding, lay.shape, num_devices=lay.num_devices + extra, split=lay.split)
    t = lay.tiling
    options = dict(max_cells=max_cells, compact=compact, legend=legend)
    got = whole_text(TiledSpec(t, lay.shape, lay.split), "s", width, **options)
    even = all(n > 0 and n % k == 0 for n, k in zip(lay.shape, lay.tiles, strict=True))
    pic = LayoutPicture(lay, "s", use_color=False, **options)
    if got is NOT_WHOLE:  # the general path draws it
        if even and t.every_member and not t.partial and lay.rank > 0:
            direct = pic._direct_grids(width) if compact else None
            assert not isinstance(direct, _Direct)
            if direct is _TABLE or grid_cells(lay, MAX_FACETS) > max_cells:
                assert math.prod(lay.tiles) > max_cells  # a table of some tiles
        return
    assert even and t.every_member and lay.rank > 0
    drawn = _rich_draws(pic, width)
    assert got is None or got == drawn
    # the picture made before its layout draws the same, making none
    made = []
    lazy = LayoutPicture(
        lambda: made.append(1) or lay, "s", use_color=False, whole=pic.whole, **options
    )
    assert lazy.plain(width) == got and (got is None or not made)


@settings(max_examples=300, deadline=None)
@given(_even_layouts(), st.integers(20, 200))
def test_a_whole_table_is_the_table_of_its_cells(lay, width):
    """`whole_table` (the lines worked out from the widths alone) draws what `table_lines`
    draws of `table_cells` of the same rows, with the same columns; where it says the
    cells must be wrapped, `table_cells` wraps them (or rich squeezes them), and where it
    leaves the table to rich, so does `table_lines`."""
    from meshdiag.report.grid import table_cells, table_lines
    from meshdiag.report.whole import (
        NOT_WHOLE,
        _table_facts,
        even_ranges,
        table_tiles,
        whole_rows,
        whole_table,
    )

    t, tiles = lay.tiling, lay.tiles
    ranges = even_ranges(lay.shape, tiles)
    assert t is not None and ranges is not None
    rows = table_tiles(tiles, {}, {}, t.listed_order)
    got = whole_table(tiles, lay.shape, ranges, _table_facts(rows, lambda name: {}), width)
    cells = table_cells(whole_rows(tiles, lay.shape, ranges, rows), True, 0, width)
    want = table_lines(cells, width)
    if got is NOT_WHOLE:  # too wide even without buffer and note: wrapped, or squeezed
        assert len(cells[0]) == 4
        assert any("\n" in c for row in cells for c in row) or want is None
    elif got is None:
        assert want is None
    else:
        assert got == (cells[0], want)


@pytest.mark.parametrize("compact", [True, False])
@pytest.mark.parametrize("shape", [(8, 16), (7, 16), (8, 8 * 10**6)])  # grid, uneven, table
def test_a_picture_says_what_its_labels_mean_unless_told_not_to(compact, shape):
    """The legend line follows the header of a picture (`legend=True`, the default) and is
    left out for a report that prints it once (`legend=False`), whichever way it is drawn."""
    from meshdiag.report.grid import LEGEND
    from meshdiag.report.picture import LayoutPicture

    lay = layout(tiled((2, 4)), shape)
    for legend in (True, False):
        pic = LayoutPicture(lay, "s", use_color=False, compact=compact, legend=legend)
        lines = pic.plain(100).splitlines()
        assert lines[0].startswith("s  shape ")
        assert (lines[1] == LEGEND) == legend and lines.count(LEGEND) == legend


def test_whole_ranges_are_the_shards_when_every_one_is_a_whole_tile():
    """A split's range texts for a direct picture (`_whole_ranges`), worked out from n and k,
    are its shards' ranges when every shard is a whole tile (`DimSplit.part`: held, fit 0),
    and None otherwise, under every rule."""
    from meshdiag.model.splits import SPLIT_RULES, split_dim
    from meshdiag.report.whole import _whole_ranges

    for rule in SPLIT_RULES:
        for n in range(0, 60):
            for k in range(1, 14):
                if rule == "even" and n % k:
                    continue
                s = split_dim(n, k, rule)
                parts = [s.part(i) for i in range(k)]
                whole = all(held and not fit for _, held, _, fit in parts)
                want = [f"{a}:{b}" for (a, b), *_ in parts] if whole else None
                assert _whole_ranges(split_dim(n, k, rule)) == want, (n, k, rule)
