"""Pictures of layouts whose tiles are all whole (every device the sharding names holds
data, every dim splits evenly), drawn from the tiling and the tensor's shape alone: each
dim's ranges are `i*c:(i+1)*c`, each cell or table row a tile's devices (kept per tiling)
and ranges. A big file's summaries draw ten thousand such pictures on shapes that never
repeat; made through a `Layout` and the general planner (`grid.plan_grid`, `grid._drawn`,
`grid.table_rows`) each took about 50 us. `whole_text` draws them with no layout made
(`LayoutPicture.plain` draws every tiled layout through it first); the grid's lines are
drawn in C (`grid_text`, twin `grid_text_py`), a table's from its columns' widths
(`whole_table`). A summary's usual picture (one grid of one or two dims, or its table) is
drawn in C whole, header and all (`_drawn_natively`: the rest of `whole_text` is its
twin). Where these draw, the general path draws the same (tested)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from operator import getitem
from typing import TYPE_CHECKING, NamedTuple

from meshdiag.ir.fast import native
from meshdiag.notation.devicelist import compress_devices
from meshdiag.report.grid import (
    _MARKUP,
    MAX_FACETS,
    MIN_CELL_WIDTH,
    MIN_LABEL_WIDTH,
    TABLE_COLUMNS,
    GridPlan,
    TableRow,
    _as_is,
    _devices_text,
    _head_lines,
    _plan_notes,
    _table_width,
    checked_text,
    choose_dims,
    dims_text,
    table_cells,
    table_lines,
    table_title,
    tiles_cells,
)

if TYPE_CHECKING:
    from meshdiag.layouts.engine import Layout, TiledSpec, TileOrder, _Tiling
    from meshdiag.model.splits import DimSplit


def _whole_ranges(s: DimSplit) -> list[str] | None:
    """Each shard's range as a picture prints it (`a:b`), or None when some shard is not a
    whole tile (shorter, empty or without data: its cell has a mark); once per split."""
    known = s.derived
    if "grid.ranges" in known:
        return known["grid.ranges"]
    out = known["grid.ranges"] = _even_range(s.n, s.k)
    return out


def _even_range(n: int, k: int) -> list[str] | None:
    """The ranges (`a:b`) of a dim of `n` elements in `k` shards when it splits evenly, else
    None: every rule's shards are whole tiles (`DimSplit.part`'s fit 0, held) exactly when
    they split a dim evenly, and shard i is [i*c, (i+1)*c) under each."""
    if n <= 0 or n % k:
        return None
    c = n // k
    return [f"{i * c}:{i * c + c}" for i in range(k)]


def _whole_tiles(lay: Layout) -> list[list[str]] | None:
    """Each dim's shard ranges as pictures print them (`a:b`, `_whole_ranges`) when every
    tile of `lay` is whole and held, so that no cell or table row has a mark: a tiling whose
    devices all hold data and whose dims split evenly, or an untiled matrix with data; None
    for any other layout."""
    if lay.rank == 0 or lay.partial:
        return None
    t = lay.tiling
    if t is None:  # untiled: one tile, the whole tensor on the devices holding data
        return [[f"0:{n}"] for n in lay.shape] if lay.rank == 2 and 0 not in lay.shape else None
    if not t.every_member:
        return None
    maybe = [_whole_ranges(s) for s in lay.ranges]
    ranges = [r for r in maybe if r is not None]
    return ranges if len(ranges) == len(maybe) else None


#: `direct_grids`' answer for a picture no grid of which fits the console
_TABLE = object()


class _GridCells(NamedTuple):
    """The cells of a grid of whole tiles (`whole_grid`), kept per tiling:
    each cell's devices, their text, and each column's longest text."""

    groups: list[list[tuple[int, ...]]]
    texts: list[list[str]]
    widest: list[int]

    @classmethod
    def of(cls, groups: list[list[tuple[int, ...]]]) -> _GridCells:
        texts = [[compress_devices(g) for g in row] for row in groups]
        return cls(groups, texts, [max(map(len, column)) for column in zip(*texts, strict=True)])


class _WholeGrid(NamedTuple):
    """The grids of whole tiles the direct picture draws (`whole_grid`): their
    rows' ranges (of the dim on rows; None when one row shows no dim), their columns', each
    grid's title (None for a single grid) and cells, and the plan the header's notes name
    (from rank 3 on; else None)."""

    rows: list[str] | None
    cols: list[str]
    grids: list[tuple[str | None, _GridCells]]
    plan: GridPlan | None


class _Direct(NamedTuple):
    """A picture's grids drawn directly (`direct_grids`): their lines joined
    by newlines, and the plan the header's notes name (None: none)."""

    text: str
    plan: GridPlan | None


def grid_text_py(
    row_ranges: list[str] | None,
    col_ranges: list[str],
    grids: list[tuple[str | None, _GridCells]],
    width: int,
) -> str | int | None:
    """The direct picture's grids (`_WholeGrid`: its rows' and columns' ranges, each grid's
    title and cells) drawn for a console `width` wide, their lines joined by newlines: each
    row's cells two lines high, devices over ranges (`[a:b, c:d]`, or `[a:b]` with no dim on
    rows); 0 when no grid of them can fit (a table instead); None when the general path must
    draw them (it elides device lists). The reference for the native `grid_text`
    (`ir/fast/_grid.c`)."""
    # a column as wide as its widest line and 2 (`[a, b]` is 4 more than a and b, `[b]` 2
    # more than b)
    longest_row, brackets = (max(map(len, row_ranges)), 4) if row_ranges else (0, 2)
    cols = len(col_ranges)
    room = width - (cols + 1)  # borders
    naturals = [
        [
            max(MIN_LABEL_WIDTH - 2, devices, longest_row + len(b) + brackets) + 2
            for devices, b in zip(cells.widest, col_ranges, strict=True)
        ]
        for _, cells in grids
    ]
    if any(sum(natural) > room for natural in naturals):
        # the general path elides device lists into cells of MIN_CELL_WIDTH + 6, which
        # cannot help when those are too wide together or a range does not fit one (the
        # ranges are every grid's)
        narrow = MIN_CELL_WIDTH + 6
        widest_range = longest_row + max(map(len, col_ranges)) + brackets
        if narrow * cols > room or widest_range + 2 > narrow:
            return 0
        return None
    out: list[str] = []
    for (title, cells), natural in zip(grids, naturals, strict=True):
        if title:
            out.append(title)
        # `distribute` by the columns' extents, which are equal: every tile is whole
        share = min(room, max(sum(natural), 60)) // cols
        widths = [max(w, share) for w in natural]
        if sum(widths) > room:
            widths = natural
        # `_box_lines` of it
        bars = ["─" * w for w in widths]
        between = "├" + "┼".join(bars) + "┤"
        out.append("┌" + "┬".join(bars) + "┐")
        ranged = list(zip(col_ranges, widths, strict=True))
        for r, (a, texts) in enumerate(zip(row_ranges or [None], cells.texts, strict=True)):
            if r:
                out.append(between)
            devices = [d.center(w) for d, w in zip(texts, widths, strict=True)]
            out.append("│" + "│".join(devices) + "│")
            if a is None:
                out.append("│" + "│".join([f"[{b}]".center(w) for b, w in ranged]) + "│")
            else:
                out.append("│" + "│".join([f"[{a}, {b}]".center(w) for b, w in ranged]) + "│")
        out.append("└" + "┴".join(bars) + "┘")
    return "\n".join(out)


_native_grid_text = native("grid_text")


def grid_text(
    row_ranges: list[str] | None,
    col_ranges: list[str],
    grids: list[tuple[str | None, _GridCells]],
    width: int,
) -> str | int | None:
    """`grid_text_py`, in C when built (`ir/fast/_grid.c`: a big file's ten thousand
    pictures spent a third of their drawing here), for texts of ASCII."""
    if _native_grid_text is not None:
        got = _native_grid_text(
            row_ranges, col_ranges, grids, width, MIN_LABEL_WIDTH, MIN_CELL_WIDTH
        )
        if got is not NotImplemented:
            return got
    return grid_text_py(row_ranges, col_ranges, grids, width)


def whole_grid(
    tiles: tuple[int, ...],
    ranges: list[list[str]],
    shared: Callable[[str], dict],
    order: Callable[[], TileOrder],
    max_facets: int,
    max_cells: int,
) -> _WholeGrid | None:
    """The direct picture's grids (`_WholeGrid`) of a layout whose tiles are all whole, each
    dim's ranges `ranges` (`_whole_tiles`), that a plan would draw without a projection in
    at most `max_cells` cells: a matrix, or one or two split dims on rows and columns and
    any others as facets. None for any other layout. What depends on the tiles alone is
    kept in `shared("grid.whole")` (what the tiling's layouts share, `_Tiling.shared`; a
    new dict for a layout without one, `Layout.by_tiling`), its cells made from the tile
    order `order()` when first asked."""
    facts = _whole_facts(tiles, shared, order, max_facets, max_cells)
    if facts is None:
        return None
    return _WholeGrid(*_grid_parts(facts, tiles, ranges), facts.plan)


def _whole_facts(
    tiles: tuple[int, ...],
    shared: Callable[[str], dict],
    order: Callable[[], TileOrder],
    max_facets: int,
    max_cells: int,
) -> _WholeFacts | None:
    """`_WholeFacts.of` the tiling, kept in `shared("grid.whole")`."""
    known = shared("grid.whole")
    facts = known.get((max_facets, max_cells), _UNSET)
    if facts is _UNSET:
        facts = known[max_facets, max_cells] = _WholeFacts.of(tiles, order, max_facets, max_cells)
    return facts


def _grid_parts(
    facts: _WholeFacts, tiles: tuple[int, ...], ranges: list[list[str]]
) -> tuple[list[str] | None, list[str], list[tuple[str | None, _GridCells]]]:
    """The rows' ranges, the columns' and the titled grids of a whole grid (`_WholeGrid`'s
    first three) of each dim's ranges `ranges`."""
    rows_d, cols_d, facet_d, grids, _ = facts
    if facet_d:  # `dim0=1/2 [16:32]` (`_Skeleton.title`)
        named = [[f"dim{d}={i}/{tiles[d]} [{r}]" for i, r in enumerate(ranges[d])] for d in facet_d]
        titles = [", ".join(f) for f in itertools.product(*named)]
        grids = [(title, cells) for title, (_, cells) in zip(titles, grids, strict=True)]
    return ranges[rows_d[0]] if rows_d else None, ranges[cols_d[0]], grids


#: not worked out yet (a dict's answer where None is one)
_UNSET = object()


class _WholeFacts(NamedTuple):
    """What `whole_grid` draws of a tiling whatever the dims: the tensor dims on rows, on
    columns and as facets, each grid's cells (untitled) and the plan the header names."""

    rows_d: tuple[int, ...]
    cols_d: tuple[int, ...]
    facet_d: tuple[int, ...]
    grids: list[tuple[str | None, _GridCells]]
    plan: GridPlan | None

    @classmethod
    def of(
        cls, tiles: tuple[int, ...], order: Callable[[], TileOrder], max_facets: int, max_cells: int
    ) -> _WholeFacts | None:
        rows_d, cols_d, facet_d, projected = choose_dims(tiles, tiles, max_facets)  # (a rank)
        if projected or len(rows_d) > 1 or len(cols_d) != 1:
            return None
        rows = tiles[rows_d[0]] if rows_d else 1
        cols = tiles[cols_d[0]]
        if math.prod(tiles[d] for d in facet_d) * rows * cols > max_cells:
            return None
        # every tile is held: the k-th in the tile order is tile k, row-major. The facet
        # dims come first, the rows' next, then the columns' (other dims are unsplit):
        # facet f's row r and column c is tile f * rows * cols + r * cols + c
        tile = order().tile
        grids: list[tuple[str | None, _GridCells]] = [
            (
                None,
                _GridCells.of(
                    [[tile(base + r * cols + c)[1] for c in range(cols)] for r in range(rows)]
                ),
            )
            for base in range(0, math.prod(tiles), rows * cols)
        ]
        # from rank 3 on the header names the dims the cells show (`_plan_notes`)
        plan = GridPlan(rows_d, cols_d, facet_d, (), False) if len(tiles) >= 3 else None
        return cls(rows_d, cols_d, facet_d, grids, plan)


def direct_grids(whole: _WholeGrid, width: int) -> _Direct | object | None:
    """The lines of a big file's usual picture's grids, made directly: the grids of whole
    tiles `whole` (`whole_grid`, drawn by `grid_text`: each cell two lines, its devices and
    its ranges) when they fit `width` as they are; `_TABLE` when no grid of them can fit
    (eliding device lists would not help). None where `plan_grid`, `_drawn` and
    `_box_lines` must draw them (where this draws or gives up, they draw the same or give
    up: tested). Planned in general, such a picture was two thirds of drawing it, and boxed
    in general a fifth of the rest."""
    return _drawn_grids(*whole, width)


def _drawn_grids(
    row_ranges: list[str] | None,
    col_ranges: list[str],
    grids: list[tuple[str | None, _GridCells]],
    plan: GridPlan | None,
    width: int,
) -> _Direct | object | None:
    """`direct_grids` of a `_WholeGrid`'s four fields."""
    text = grid_text(row_ranges, col_ranges, grids, width)
    if text is None:
        return None
    if text.__class__ is int:
        return _TABLE
    return _Direct(text, plan)  # type: ignore[arg-type]


def whole_rows(
    tiles: tuple[int, ...],
    shape: tuple[int, ...],
    ranges: list[list[str]],
    tile_rows: list[tuple[str, str, tuple[int, ...]]],
) -> list[TableRow | None]:
    """`table_rows` of a layout whose tiles are all whole, each dim's ranges `ranges`
    (`_whole_tiles`), made directly from its tiles' labels, devices and indices
    (`table_tiles`): each row the tile, its devices, its ranges (`slice_text`'s), the
    tile's size as its shard and buffer, no note (a big file's tables are mostly such)."""
    size = _tile_size(shape, tiles)
    slices = _slices(tiles, ranges, tile_rows)
    return [
        TableRow(label, devices, sl, size, size, "")
        for (label, devices, _), sl in zip(tile_rows, slices, strict=True)
    ]


def _tile_size(shape: tuple[int, ...], tiles: tuple[int, ...]) -> str:
    """A whole tile's size (`4×8`), its shard and its buffer: ceil(n/k) along each dim."""
    return dims_text(tuple(-(-n // k) for n, k in zip(shape, tiles, strict=True)))


def _slices(
    tiles: tuple[int, ...],
    ranges: list[list[str]],
    tile_rows: list[tuple[str, str, tuple[int, ...]]],
) -> list[str]:
    """Each tile's ranges as a table row prints them (`[0:8, 16:32]`, `slice_text`'s): from
    rank 3 on, a dim in one piece prints as `:`."""
    if len(tiles) >= 3:
        ranges = [[":"] if k == 1 else r for r, k in zip(ranges, tiles, strict=True)]
    # (each dim's range at the tile's index along it)
    return ["[" + ", ".join(map(getitem, ranges, index)) + "]" for _, _, index in tile_rows]


class _TableFacts(NamedTuple):
    """What `whole_table` draws of a tiling's tiles whatever the dims: each tile's label,
    devices and index (`table_tiles`), the widest label and device list (or the column
    names), whether rich prints every device list as it is (no markup), and each row's
    first two cells as drawn (the same in every table of the tiling)."""

    rows: list[tuple[str, str, tuple[int, ...]]]
    w_tile: int
    w_devices: int
    as_is: bool
    starts: list[str]


def _table_facts(
    tile_rows: list[tuple[str, str, tuple[int, ...]]], shared: Callable[[str], dict]
) -> _TableFacts:
    """`_TableFacts` of `tile_rows`, kept in `shared("grid.table_facts")`."""
    known = shared("grid.table_facts")
    facts = known.get("facts")
    if facts is None or facts.rows is not tile_rows:
        w_tile = max(len("tile"), *(len(r[0]) for r in tile_rows))
        w_devices = max(len("devices"), *(len(r[1]) for r in tile_rows))
        facts = known["facts"] = _TableFacts(
            tile_rows,
            w_tile,
            w_devices,
            all(not _MARKUP.search(r[1]) or _as_is(r[1]) for r in tile_rows),
            [
                " " + _cells_text((label, devices), (w_tile, w_devices)) + "   "
                for label, devices, _ in tile_rows
            ],
        )
    return facts


def _cells_text(cells: tuple[str, ...], widths: list[int] | tuple[int, ...]) -> str:
    """Cells, each padded to its column's width, three spaces between them: a table line as
    `table_lines` draws it, but for its edges."""
    return "   ".join([c.ljust(w) for c, w in zip(cells, widths, strict=True)])


def whole_table(
    tiles: tuple[int, ...],
    shape: tuple[int, ...],
    ranges: list[list[str]],
    facts: _TableFacts,
    width: int,
) -> tuple[tuple[str, ...], list[str]] | None | object:
    """The columns and the lines `table_lines` draws of `table_cells` of a layout whose
    tiles are all whole, each dim's ranges `ranges` (`whole_rows`'s rows), worked out from
    their widths alone: every tile's shard and buffer are its size and no row has a note,
    so a table too wide for `width` leaves those two columns out. None where rich draws it
    (a device list it reads as markup); NOT_WHOLE where the cells must be wrapped
    (`table_cells`)."""
    if not facts.as_is:
        return None
    size = _tile_size(shape, tiles)
    slices = _slices(tiles, ranges, facts.rows)
    widths = [facts.w_tile, facts.w_devices, max(len("slices"), *map(len, slices))]
    widths += [max(len("shard"), len(size)), max(len("buffer"), len(size)), len("note")]
    head = TABLE_COLUMNS
    if _table_width(widths) > width:  # the buffer (the shard) and the note (none) left out
        widths, head = widths[:4], TABLE_COLUMNS[:4]
        if _table_width(widths) > width:
            return NOT_WHOLE
    total = _table_width(widths)
    blank = " " * total
    lines = [blank, " " + _cells_text(head, widths) + " ", " " + "─" * (total - 2) + " "]
    # each row: its tiling's first two cells (drawn once), its slices, then what is the
    # same in every row (the shard, and the buffer of the same size and an empty note)
    w = widths[2]
    tail = "   " + _cells_text((size, size, "")[: len(widths) - 3], widths[3:]) + " "
    lines += [start + sl.ljust(w) + tail for start, sl in zip(facts.starts, slices, strict=True)]
    lines.append(blank)
    return head, lines


def table_tiles(
    tiles: tuple[int, ...], known: dict, device_texts: dict, order: Callable[[], TileOrder]
) -> list[tuple[str, str, tuple[int, ...]]]:
    """Each tile's label, devices (as text) and index, in the table's order, when every
    tile is held (the k-th is tile k, row-major, in `order()`): kept in `known` (and the
    device lists in `device_texts`) per tiling, whose tile assignment alone they depend on
    (a big file draws 1,459 tables of a few tilings)."""
    got = known.get(tiles)
    if got is None:
        tile = order().tile
        got = known[tiles] = [
            (
                "(" + ",".join(map(str, index)) + ")",
                _devices_text(device_texts, tile(k)[1], 40),
                index,
            )
            for k, index in enumerate(itertools.product(*(range(n) for n in tiles)))
        ]
    return got


#: `whole_text`'s answer for a layout it does not draw
NOT_WHOLE = object()

_native_whole_grid_text = native("whole_grid_text")
_native_whole_table_text = native("whole_table_text")


#: how many dims' ranges a tiling keeps (`even_ranges`' `known`): its pictures' shapes
#: never repeat in a big file, their dims do
KEPT_RANGES = 1024


def even_ranges(
    shape: tuple[int, ...], tiles: tuple[int, ...], known: dict | None = None
) -> list[list[str]] | None:
    """Each dim's shard ranges as pictures print them (`a:b`, `_whole_ranges`) when every
    dim of `shape` splits evenly into its `tiles` (so that under every split rule each
    shard is a whole tile); None otherwise. `known`: the ranges worked out before, by
    (n, k), kept there (up to KEPT_RANGES; the lists are shared: read them only)."""
    out = []
    get = known.get if known is not None else None
    for n, k in zip(shape, tiles, strict=True):
        r = get((n, k)) if get is not None else None
        if r is None:
            r = _even_range(n, k)
            if r is None:
                return None
            if known is not None:
                if len(known) >= KEPT_RANGES:
                    known.clear()
                known[n, k] = r
        out.append(r)
    return out


def whole_text(
    whole: TiledSpec,
    title: str | None,
    width: int,
    *,
    max_cells: int,
    max_facets: int = MAX_FACETS,
    compact: bool = False,
    legend: bool = True,
) -> str | None | object:
    """`LayoutPicture(lay, title, ..., whole=whole).plain(width)` of the layout `lay` named
    by `whole` (a tiling, a shape and a split) when its tiles are all whole (every device
    holds data, every dim splits evenly) and the picture is a direct grid or a table of
    every tile (`whole_picture`), drawn from the tiling and the shape alone: no `Layout`
    made (a big file's summaries draw ten thousand such, on shapes that never repeat, and
    making each one's layout was as long as drawing it; a summary draws them without a
    `LayoutPicture` either). NOT_WHOLE for any other picture."""
    t, shape, split = whole
    title = title or "tiled"
    # the dims' ranges worked out (`even_ranges`), kept once the tiling is known to draw
    known = t.derived.get("whole.ranges")
    if known is None:
        if not t.tiles or t.partial or not t.every_member or t.listed_order() is None:
            return NOT_WHOLE  # (no order listed: a big tiling's comes from a layout's arrays)
        known = t.derived["whole.ranges"] = {}
    tiles = t.tiles
    if compact and not legend and _native_whole_grid_text is not None:
        got = _drawn_natively(t, title, shape, split, width, max_facets, max_cells)
        if got is not NotImplemented:
            return got
    ranges = even_ranges(shape, tiles, known)
    if ranges is None:
        return NOT_WHOLE

    def head(plan: GridPlan | None) -> list[str]:  # `header_lines` of the whole layout
        out = _head_lines(title, shape, split, t.n, t.notes, legend)
        _plan_notes(tiles, plan, out)
        return out

    return whole_picture(
        tiles,
        shape,
        ranges,
        t.shared,
        t.listed_order,
        head,
        width,  # type: ignore[arg-type]
        max_cells=max_cells,
        max_facets=max_facets,
        compact=compact,
    )


def _drawn_natively(
    t: _Tiling,
    title: str,
    shape: tuple[int, ...],
    split: str,
    width: int,
    max_facets: int,
    max_cells: int,
) -> str | object:
    """`whole_text` of a compact picture without a legend whose one grid shows one or two
    dims (a summary's usual picture), drawn in C (`ir/fast/_grid.c`): its grid, or its
    table of every tile where no grid fits. NotImplemented where the Python path must draw
    it (that path is the twin: tests/test_whole_native.py). In Python, the header, the
    ranges and the joins around the grid took three times as long as drawing the grid."""
    tiles = t.tiles
    grid = _native_grid(t, max_facets, max_cells)
    if grid is None:
        return NotImplemented
    head = (title, shape, split, t.n, t.notes, tiles)
    got = _native_whole_grid_text(*head, *grid, width, MIN_LABEL_WIDTH, MIN_CELL_WIDTH)
    if got.__class__ is not int:
        return got
    # no grid fits: a table of every tile (`whole_picture`'s), each row's first two cells
    # the tiling's
    rows = table_tiles(
        tiles, t.shared("grid.table_tiles"), t.shared("grid.devices"), t.listed_order
    )
    table = _table_facts(rows, t.shared)
    if not table.as_is:  # (rich draws it)
        return NotImplemented
    return _native_whole_table_text(*head, table.starts, table.w_tile, table.w_devices, width)


def _native_grid(t: _Tiling, max_facets: int, max_cells: int) -> tuple | None:
    """(the grids, the rows' dim or -1, the columns' dim) the native drawing takes for a
    compact picture of the tiling, kept with it (a big file draws ten thousand pictures of
    a few tilings); None where the Python path draws (a plan, facets)."""
    key = ("whole.native", max_facets, max_cells)
    got = t.derived.get(key, _UNSET)
    if got is _UNSET:
        facts = _whole_facts(t.tiles, t.shared, t.listed_order, max_facets, max_cells)
        if facts is None or facts.plan is not None or facts.facet_d:
            got = None
        else:
            rows_d, cols_d = facts.rows_d, facts.cols_d
            got = (facts.grids, rows_d[0] if rows_d else -1, cols_d[0])
        t.derived[key] = got
    return got


def whole_picture(
    tiles: tuple[int, ...],
    shape: tuple[int, ...],
    ranges: list[list[str]],
    shared: Callable[[str], dict],
    order: Callable[[], TileOrder],
    head: Callable[[GridPlan | None], list[str]],
    width: int,
    *,
    max_cells: int,
    max_facets: int,
    compact: bool,
) -> str | None | object:
    """The text of a picture of whole tiles (each dim's ranges `ranges`, `_whole_tiles`;
    what the tiling's pictures share in `shared(name)`, its tile order `order()`) under the
    header lines `head(plan)`, where it is a direct grid (compact pictures) or a table of
    every tile: None where rich must draw it, NOT_WHOLE where the planner must (a grid
    with a projection or elided device lists, a table of some tiles)."""
    direct = None
    if compact:
        # `direct_grids(whole_grid(...))`, without a `_WholeGrid` between them (a big
        # file's summaries draw ten thousand such pictures)
        facts = _whole_facts(tiles, shared, order, max_facets, max_cells)
        if facts is not None:
            direct = _drawn_grids(*_grid_parts(facts, tiles, ranges), facts.plan, width)
    if direct.__class__ is _Direct:
        top = checked_text(head(direct.plan))  # type: ignore[union-attr]
        # (the grids' lines hold ranges, device lists and box lines alone: no check)
        return None if top is None else top + direct.text + "\n"  # type: ignore[union-attr]
    too_many = tiles_cells(tiles, shared("grid.cells"), max_facets) > max_cells
    if (direct is not _TABLE and not too_many) or math.prod(tiles) > max_cells:
        return NOT_WHOLE  # planned (a grid or a table), or a table of some tiles only
    tile_rows = table_tiles(tiles, shared("grid.table_tiles"), shared("grid.devices"), order)
    drawn = whole_table(tiles, shape, ranges, _table_facts(tile_rows, shared), width)
    if drawn is None:
        return None
    if drawn is NOT_WHOLE:  # (its cells wrapped: as `table_cells` wraps them)
        cells = table_cells(whole_rows(tiles, shape, ranges, tile_rows), True, 0, width)
        lines = table_lines(cells, width)
        if lines is None:
            return None
        drawn = cells[0], lines
    columns, lines = drawn  # type: ignore[misc]
    top = checked_text(head(None))
    if top is None:
        return None
    # (the table's lines hold tile numbers, device lists, ranges and sizes alone: no check)
    return top + table_title(tiles, [columns], too_many) + "\n" + "\n".join(lines) + "\n"
