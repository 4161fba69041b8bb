"""The layout picture's pure half: a boxed grid of tiles like `jax.debug.visualize_sharding`,
for any rank, worked out as text with no console involved.

`tiles_of`, `plan_grid`, `cell_lines` and `header_lines` turn a finished `Layout` into
tiles, facets and text (the SVG/HTML export reuses them); the table helpers draw the
compact table (tile → devices → slices) a grid too big or too wide falls back to. The rich
half, the renderable `LayoutPicture`, is `report.picture`; pictures of whole tiles drawn
from their tiling alone are `report.whole`.

Rank ≥ 3: dims split into one tile are folded away; with three or more split dims the leading
ones become facets (one grid each, titled `dim0=1/2 [16:32]`) or, when there would be too many
facets, are flattened into the rows (a 2-D projection, stated in an axis legend). When the
grid would exceed `max_cells` or not fit the width, a compact table with the middle elided
is drawn instead.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Literal, NamedTuple

from meshdiag.notation.devicelist import NOTATION, compress_devices

if TYPE_CHECKING:
    from meshdiag.layouts.engine import Layout

Status = Literal["ok", "short", "empty", "absent"]

#: fills, after matplotlib's tab20b (what jax.debug.visualize_sharding uses) plus tab20c
PALETTE = (
    "#393b79", "#5254a3", "#6b6ecf", "#9c9ede", "#637939", "#8ca252", "#b5cf6b", "#cedb9c",
    "#8c6d31", "#bd9e39", "#e7ba52", "#e7cb94", "#843c39", "#ad494a", "#d6616b", "#e7969c",
    "#7b4173", "#a55194", "#ce6dbd", "#de9ed6", "#3182bd", "#6baed6", "#9ecae1", "#c6dbef",
    "#e6550d", "#fd8d3c", "#fdae6b", "#fdd0a2", "#31a354", "#74c476", "#a1d99b", "#c7e9c0",
)  # fmt: skip
EMPTY_FILL = "#eeeeee"

#: facets drawn before switching to a 2-D projection
MAX_FACETS = 8
#: narrowest readable cell (JAX's min_width) and the floor for cells with short labels
MIN_CELL_WIDTH = 9
MIN_LABEL_WIDTH = 5


class Tile(NamedTuple):
    """One tile of the tensor and the devices holding it (a named tuple: a picture makes a
    few per layout, and a frozen dataclass took 2 us each)."""

    index: tuple[int, ...]  # tile coordinate per tensor dim
    devices: tuple[int, ...]  # sorted
    slices: tuple[tuple[int, int], ...] | None  # None when its devices hold nothing
    buffer: tuple[int, ...] | None
    status: Status
    fill: int  # palette index


def fill_color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def text_color(fill: str) -> str:
    """Black or white text for a fill (JAX's rule: 0.299r + 0.587g + 0.114b > 186)."""
    r, g, b = (int(fill[k : k + 2], 16) for k in (1, 3, 5))
    return "#000000" if 0.299 * r + 0.587 * g + 0.114 * b > 186 else "#ffffff"


# -- pure planning -------------------------------------------------------------------------


#: up to this many tiles `TileIndex.position` finds a tile by a dict (made at first use)
#: rather than by a numpy search a tile: a picture asks for a handful of tiles
SMALL_INDEX = 4096


class TileIndex:
    """The tiles of a layout, built on demand.

    The member devices are sorted by tile once per tiling (`Layout.tile_order`); any tile,
    or the k-th tile in row-major order, is then built alone from the dims' splits. A
    million-device layout has up to a million tiles: pictures and tables look at a few of
    them and must not build the rest.
    """

    def __init__(self, lay: Layout):
        self.layout = lay
        self._order = lay.tile_order()
        self._made: dict[int, Tile] = {}  # tiles made (the grid and a table ask again)
        n_tiles = math.prod(lay.tiles)
        self._n_tiles = n_tiles
        self._stride = n_tiles // 2 + (1 if n_tiles % 2 == 0 else 0)  # neighbours contrast

    def __len__(self) -> int:
        return len(self._order)

    def __iter__(self):
        return (self.nth(k) for k in range(len(self)))

    def nth(self, k: int) -> Tile:
        """The k-th tile holding devices, in row-major tile order."""
        made = self._made.get(k)
        if made is not None:
            return made
        index, group, lin = self._order.tile(k)
        part = self.layout.tile_part(index)
        fill = (lin * self._stride) % self._n_tiles
        if part is None:
            tile = Tile(index, group, None, None, "absent", fill)
        else:
            slices, buffer, fit = part
            tile = Tile(index, group, slices, buffer, _FIT_STATUS[fit], fill)
        self._made[k] = tile
        return tile

    def get(self, index: tuple[int, ...]) -> Tile | None:
        """The tile at `index` (each within the layout's tiles), or None when no device
        holds it."""
        lin = 0
        for i, n in zip(index, self.layout.tiles, strict=True):  # row-major
            lin = lin * n + i
        k = self.position(lin)
        return None if k is None else self.nth(k)

    def position(self, lin: int) -> int | None:
        """Where the tile whose row-major number is `lin` is in the tile order (`nth`), or
        None when no device holds it."""
        order = self._order
        if len(order) <= SMALL_INDEX:  # a picture's few tiles: numpy calls cost more
            return order.position().get(lin)
        import numpy as np

        k = int(np.searchsorted(order.lin, lin))
        if k < len(order) and int(order.lin[k]) == lin:
            return k
        return None


#: a held tile's status by its fit (`Layout.tile_part`): "empty" when a dim's range is
#: empty (a present scalar never is), else "short" when one is shorter than a full tile
_FIT_STATUS: tuple[Status, ...] = ("ok", "short", "empty")


def tiles_of(lay: Layout) -> dict[tuple[int, ...], Tile]:
    """Every tile of the layout by index (small layouts; large ones use `TileIndex`)."""
    return {t.index: t for t in TileIndex(lay)}


class Facet(NamedTuple):
    """One grid of a picture (named tuples: a picture makes one or two per layout, and a
    frozen dataclass took microseconds each)."""

    title: str | None  # e.g. "dim0=1/2 [16:32]"; None for a single grid
    cells: tuple[tuple[Tile | None, ...], ...]  # rows × cols (the first ones when truncated)
    row_weights: tuple[int, ...]  # extent of each row along its dims (for proportional sizes)
    col_weights: tuple[int, ...]
    #: rows and columns of the whole grid (more than `cells` holds when truncated)
    total_rows: int = 0
    total_cols: int = 0


class GridPlan(NamedTuple):
    row_dims: tuple[int, ...]  # tensor dims flattened (row-major) into the rows
    col_dims: tuple[int, ...]
    facet_dims: tuple[int, ...]
    facets: tuple[Facet, ...]
    projected: bool  # several dims flattened into rows

    @property
    def num_cells(self) -> int:
        """Cells of the whole grid, drawn or not."""
        return sum(f.total_rows * f.total_cols for f in self.facets)

    @property
    def truncated(self) -> bool:
        return any(
            len(f.cells) < f.total_rows or len(f.cells[0]) < f.total_cols for f in self.facets
        )


def choose_dims(
    shape: tuple[int, ...], tiles: tuple[int, ...], max_facets: int = MAX_FACETS
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], bool]:
    """(row dims, col dims, facet dims, projected) for a picture of the split dims."""
    rank = len(shape)
    if rank == 0:
        return (), (), (), False
    if rank == 1:
        return (), (0,), (), False
    if rank == 2:  # JAX's orientation even when a dim is not split
        return (0,), (1,), (), False
    split = tuple(d for d in range(rank) if tiles[d] > 1)
    if not split:
        return (), (), (), False
    if len(split) == 1:
        return (), split, (), False
    if len(split) == 2:
        return (split[0],), (split[1],), (), False
    lead = split[:-2]
    if math.prod(tiles[d] for d in lead) <= max_facets:
        return (split[-2],), (split[-1],), lead, False
    return split[:-1], (split[-1],), (), True


def grid_cells(lay: Layout, max_facets: int = MAX_FACETS) -> int:
    """Cells a full picture of the layout has (facets × rows × columns), without planning it
    (once per tiling: it depends on the rank and the tile counts alone)."""
    return tiles_cells(lay.tiles, lay.by_tiling("grid.cells"), max_facets)


def tiles_cells(tiles: tuple[int, ...], known: dict, max_facets: int = MAX_FACETS) -> int:
    """`grid_cells` of a layout of `tiles`, kept in `known` (its tiling's)."""
    n = known.get(max_facets)
    if n is None:
        rows_d, cols_d, facet_d, _ = choose_dims(tiles, tiles, max_facets)  # (a rank)
        n = known[max_facets] = math.prod(tiles[d] for d in facet_d + rows_d + cols_d)
    return n


def plan_grid(
    lay: Layout,
    *,
    max_facets: int = MAX_FACETS,
    max_rows: int | None = None,
    max_cols: int | None = None,
    index: TileIndex | None = None,
) -> GridPlan:
    """The picture's facets and cells. `max_rows`/`max_cols` keep the first rows/columns of
    each facet only (the totals stay in `Facet.total_rows/total_cols`), so a picture of a
    million tiles plans only what it draws. `index`: the layout's tiles, when the caller
    has them."""
    tiles = index if index is not None else TileIndex(lay)
    sk = _skeleton(lay, lambda: tiles, max_facets, max_rows, max_cols)
    row_weights, col_weights = sk.weights(lay)
    nth = tiles.nth
    facets = []
    for fidx, cells in sk.facets:
        grid = tuple([tuple([None if k is None else nth(k) for k in row]) for row in cells])
        facets.append(
            Facet(
                sk.title(lay, fidx),
                grid,
                row_weights,
                col_weights,
                sk.total_rows,
                sk.total_cols,
            )
        )
    return GridPlan(sk.row_dims, sk.col_dims, sk.facet_dims, tuple(facets), sk.projected)


def _weights(
    shape: tuple[int, ...],
    tiles: tuple[int, ...],
    dims: tuple[int, ...],
    idx: list[tuple[int, ...]],
) -> tuple[int, ...]:
    """Each row's (column's) extent along its `dims`: the product of its tiles' lengths, as
    `xla` splits them, for the tile coordinates `idx`."""
    if len(dims) == 1:  # (most grids: one dim each way)
        (d,) = dims
        return tuple(_extents(shape[d], tiles[d], [i for (i,) in idx]))
    return tuple(
        math.prod(_extents(shape[d], tiles[d], (i,))[0] for d, i in zip(dims, r, strict=True))
        for r in idx
    )


def _extents(n: int, k: int, idx: Iterable[int]) -> list[int]:
    """The lengths of tiles `idx` of a dim of `n` split into `k`, as `xla` splits it."""
    c = -(-n // k)
    return [max(0, min((i + 1) * c, n) - min(i * c, n)) for i in idx]


class _Skeleton(NamedTuple):
    """What a grid plan is whatever the tensor's dims, for one tiling: the dims on rows,
    columns and facets, the rows' and columns' tile coordinates, and per facet its
    coordinates and each cell's tile (its place in the tile order; None: no device)."""

    row_dims: tuple[int, ...]
    col_dims: tuple[int, ...]
    facet_dims: tuple[int, ...]
    projected: bool
    row_idx: list[tuple[int, ...]]
    col_idx: list[tuple[int, ...]]
    total_rows: int
    total_cols: int
    facets: list[tuple[tuple[int, ...], list[list[int | None]]]]

    def weights(self, lay: Layout) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The rows' and the columns' extents in `lay` (`_weights`)."""
        return (
            _weights(lay.shape, lay.tiles, self.row_dims, self.row_idx),
            _weights(lay.shape, lay.tiles, self.col_dims, self.col_idx),
        )

    def title(self, lay: Layout, fidx: tuple[int, ...]) -> str | None:
        """The title of the facet at `fidx` in `lay` (`dim0=1/2 [16:32]`), None without
        facets."""
        if not self.facet_dims:
            return None
        t, shape = lay.tiles, lay.shape
        return ", ".join(
            f"dim{d}={i}/{t[d]} [{min(i * -(-shape[d] // t[d]), shape[d])}:"
            f"{min((i + 1) * -(-shape[d] // t[d]), shape[d])}]"
            for d, i in zip(self.facet_dims, fidx, strict=True)
        )


def _skeleton(
    lay: Layout,
    index: Callable[[], TileIndex],
    max_facets: int,
    max_rows: int | None,
    max_cols: int | None,
) -> _Skeleton:
    """The layout's grid skeleton, worked out once per tiling (`Layout.by_tiling`: the dims
    a picture shows depend on the rank and the tile counts only, a cell's tile on the tile
    assignment; a big file draws a few shardings on shapes that never repeat). `index`
    gives the layout's tiles, asked for only when the skeleton is worked out."""
    known = lay.by_tiling("grid.skeletons")
    key = (max_facets, max_rows, max_cols)
    sk = known.get(key)
    if sk is not None:
        return sk
    rows_d, cols_d, facet_d, projected = choose_dims(lay.shape, lay.tiles, max_facets)
    t = lay.tiles

    def ranges(dims: tuple[int, ...], limit: int | None) -> list[tuple[int, ...]]:
        it = itertools.product(*(range(t[d]) for d in dims))
        return list(it if limit is None else itertools.islice(it, limit))

    stride = [math.prod(t[d + 1 :]) for d in range(lay.rank)]

    def number(dims: tuple[int, ...], idx: tuple[int, ...]) -> int:
        return sum(i * stride[d] for d, i in zip(dims, idx, strict=True))

    position = index().position
    row_idx = ranges(rows_d, max_rows)
    col_idx = ranges(cols_d, max_cols)
    row_lin = [number(rows_d, r) for r in row_idx]
    col_lin = [number(cols_d, c) for c in col_idx]
    facets = []
    for fidx in ranges(facet_d, None):
        # a cell's tile number (row-major): the facet's, its row's and its column's parts
        base = number(facet_d, fidx)
        facets.append((fidx, [[position(base + r + c) for c in col_lin] for r in row_lin]))
    sk = known[key] = _Skeleton(
        rows_d,
        cols_d,
        facet_d,
        projected,
        row_idx,
        col_idx,
        math.prod(t[d] for d in rows_d),
        math.prod(t[d] for d in cols_d),
        facets,
    )
    return sk


def slice_text(lay: Layout, tile: Tile, dims: tuple[int, ...] | None = None) -> str:
    """`[0:8, 0:16]` over `dims` (default all); from rank 3 on, whole dims print as `:`."""
    slices = tile.slices
    if slices is None:
        return "no chunk"
    rank = lay.rank
    if rank == 0:
        return "scalar"
    if dims:
        return "[" + ", ".join([f"{slices[d][0]}:{slices[d][1]}" for d in dims]) + "]"
    if rank == 2:  # (most pictures: one f-string, not a join)
        (a, b), (c, d) = slices
        return f"[{a}:{b}, {c}:{d}]"
    if rank == 1:
        ((a, b),) = slices
        return f"[{a}:{b}]"
    shape = lay.shape
    parts = [":" if a == 0 and b == shape[d] else f"{a}:{b}" for d, (a, b) in enumerate(slices)]
    return "[" + ", ".join(parts) + "]"


def mark_text(lay: Layout, tile: Tile) -> str | None:
    """The uneven marker: `∅ empty`, `∅ no chunk`, `5+pad 3`, `short 5<8`."""
    if tile.status == "absent":
        return "∅ no data"
    if tile.status == "ok":
        if lay.partial:
            return "partial sums"
        return None
    assert tile.slices is not None and tile.buffer is not None
    bits = []
    for d, ((a, b), buf) in enumerate(zip(tile.slices, tile.buffer, strict=True)):
        c = -(-lay.shape[d] // lay.tiles[d])
        if b - a >= c:
            continue
        label = f"d{d} " if sum(1 for k in lay.tiles if k > 1) > 1 else ""
        if buf > b - a:
            bits.append(f"{label}{b - a}+pad {buf - (b - a)}")
        else:
            bits.append(f"{label}short {b - a}<{c}")
    text = ", ".join(bits)
    return f"∅ empty {text}" if tile.status == "empty" else text


def cell_lines(
    lay: Layout,
    tile: Tile | None,
    width: int | None = None,
    dims: tuple[int, ...] | None = None,
    texts: dict | None = None,
) -> list[str]:
    """Text lines of one cell: devices, ranges (over `dims`), marker. `texts`: the device
    lists as text so far (`lay.by_tiling("grid.devices")`, when the caller has it)."""
    if tile is None:
        return ["—"]
    if texts is None:  # the same groups in every layout of a sharding
        texts = lay.by_tiling("grid.devices")
    lines = [_devices_text(texts, tile.devices, width)]
    if tile.status != "absent":
        lines.append(slice_text(lay, tile, dims))
    mark = mark_text(lay, tile)
    if mark:
        lines.append(mark)
    return lines


def _devices_text(known: dict, devices: tuple[int, ...], width: int | None) -> str:
    """A cell's device list as text (`compress_devices`), kept in `known` by devices and
    width (`Layout.by_tiling("grid.devices")`)."""
    key = (devices, width)
    text = known.get(key)
    if text is None:
        text = known[key] = compress_devices(devices, max_chars=width)
    return text


def dims_text(shape: tuple[int, ...]) -> str:
    """A shape as the pictures and reports print it: `4×8`, `()` for a scalar."""
    return "×".join(map(str, shape)) if shape else "()"


#: what the device labels of a picture mean
LEGEND = f"key: {NOTATION}; a+pad b = b padding; ∅ = no elements"


def header_lines(
    lay: Layout, sharding_text: str | None, plan: GridPlan | None, *, legend: bool = True
) -> list[str]:
    """The one-line header, the legend (unless a report prints it once for all its
    pictures), and notes (padding, empty devices, projection)."""
    lines = _head_lines(
        sharding_text or lay.kind, lay.shape, lay.split, lay.num_devices, lay.notes, legend
    )
    if not lay.whole_shards:  # some device padded, empty or without data
        notes = listed_notes(lay)
        lines += notes if notes is not None else array_notes(lay)
    _plan_notes(lay.tiles, plan, lines)
    return lines


def listed_notes(lay: Layout) -> list[str] | None:
    """`array_notes` of a tiled layout of a few devices, read from its tiles alone (the
    tiling's listed tile order and the dims' splits, `Layout.tile_part`): no per-device
    arrays, so no numpy (its import was 0.06 s of a run whose only uneven values were
    small). None for any other layout: past the devices a tile order lists
    (`LISTED_ORDER_DEVICES`), reading its tiles would need numpy too."""
    from meshdiag.layouts.engine import LISTED_ORDER_DEVICES

    t = lay.tiling
    n = lay.num_devices
    if t is None or not lay.rank or n > LISTED_ORDER_DEVICES:
        return None
    order = t.listed_order()
    if order is None:
        return None
    padded: list[tuple[int, tuple[int, ...]]] = []  # (device, its buffer)
    empty: list[int] = []
    chunk: list[int] = []  # named by the sharding, past the last chunk
    for k in range(len(order)):
        index, devices, _ = order.tile(k)
        part = lay.tile_part(index)
        if part is None:
            chunk.extend(devices)
            continue
        slices, buffer, _ = part
        if any(b > stop - start for (start, stop), b in zip(slices, buffer, strict=True)):
            padded.extend((d, buffer) for d in devices)
        if any(stop <= start for start, stop in slices):
            empty.extend(devices)
    outside: list[int] = []
    if order.count < n:  # devices the sharding does not name
        named = set(order.lists()[0])
        outside = [d for d in range(n) if d not in named]
    # (the lowest padded device's buffer, as `array_notes` names it)
    buf = min(padded)[1] if padded else ()
    return _note_lines(lay, [d for d, _ in padded], buf, empty, chunk, outside)


def array_notes(lay: Layout) -> list[str]:
    """A layout's notes from its per-device arrays: the padded buffers, the empty shards and
    the devices without data."""
    import numpy as np

    padded = np.nonzero(lay.padded)[0]
    buf = tuple(lay.buffers[padded[0]].tolist()) if len(padded) else ()
    empty = np.nonzero(lay.empty & lay.present)[0] if lay.rank else ()
    absent = ~lay.present
    outside = absent & (lay.tile_index[:, 0] < 0 if lay.rank else ~lay.present)
    chunk = np.nonzero(absent & ~outside)[0]
    return _note_lines(lay, padded, buf, empty, chunk, np.nonzero(outside)[0])


def _note_lines(
    lay: Layout,
    padded: Sequence[int],
    buffer: tuple[int, ...],
    empty: Sequence[int],
    chunk: Sequence[int],
    outside: Sequence[int],
) -> list[str]:
    """A header's notes on the devices padded (the first one's `buffer`), holding an empty
    shard, past the last chunk, and outside the sharding (or not its maximal device)."""
    lines = []
    if len(padded):
        lines.append(
            f"padded buffers ({dims_text(buffer)}, split {lay.split}): devices "
            f"{compress_devices(padded, max_chars=60)}"
        )
    if len(empty):
        lines.append("empty shards (no elements): devices " + compress_devices(empty, max_chars=60))
    if len(chunk):
        lines.append(
            "no data (past the last chunk): devices " + compress_devices(chunk, max_chars=60)
        )
    if len(outside):
        why = "not the maximal device" if lay.kind == "maximal" else "not in the sharding"
        lines.append(f"no data ({why}): devices " + compress_devices(outside, max_chars=60))
    return lines


def _head_lines(
    text: str, shape: tuple[int, ...], split: str, n: int, notes: tuple[str, ...], legend: bool
) -> list[str]:
    """A picture header's first lines: what is drawn, the legend (unless a report prints it
    once for all its pictures), the layout's notes."""
    head = f"{text}  shape {dims_text(shape)}  split {split}  {n} device{'s' if n != 1 else ''}"
    lines = [head, LEGEND] if legend else [head]
    lines.extend(notes)
    return lines


def _plan_notes(tiles: tuple[int, ...], plan: GridPlan | None, lines: list[str]) -> None:
    """The header's notes on the grid: a projection, the dims the cells show, the folded."""
    if plan is not None and plan.projected:
        rows = " × ".join(f"dim{d} ({tiles[d]} tiles)" for d in plan.row_dims)
        cols = " × ".join(f"dim{d} ({tiles[d]} tiles)" for d in plan.col_dims)
        lines.append(f"projection: rows = {rows}, row-major; columns = {cols}")
    if plan is not None and len(tiles) >= 3:
        shown = plan.row_dims + plan.col_dims
        if shown:
            lines.append("cell ranges: " + ", ".join(f"dim{d}" for d in shown))
        folded = [d for d in range(len(tiles)) if tiles[d] == 1]
        if folded:
            lines.append("folded (one tile, whole): " + ", ".join(f"dim{d}" for d in folded))


def distribute(weights: tuple[int, ...], minimum: list[int], total: int) -> list[int]:
    """Sizes proportional to `weights` summing to about `total`, never below `minimum`."""
    wsum = sum(weights) or len(weights)
    ws = weights if sum(weights) else (1,) * len(weights)
    return [max(m, int(total * w / wsum)) for w, m in zip(ws, minimum, strict=True)]


class TableRow(NamedTuple):
    """A tile's row of the compact table, as the cells' text (a named tuple: a table
    makes one per tile shown)."""

    tile: str
    devices: str
    slices: str
    shard: str
    buffer: str
    note: str


def table_rows(
    lay: Layout, max_rows: int, index: TileIndex | None = None
) -> tuple[list[TableRow | None], int]:
    """Rows of the compact table (None marks the elided middle) and the number elided
    (`index`: the layout's tiles, when the caller has them)."""
    if index is None:  # in row-major tile order: only the rows shown are built
        index = TileIndex(lay)
    n = len(index)
    elided = max(0, n - max_rows)
    if elided:
        head = max_rows - max_rows // 2
        shown: list[Tile | None] = [
            *(index.nth(k) for k in range(head)),
            None,
            *(index.nth(k) for k in range(n - max_rows // 2, n)),
        ]
    else:
        shown = list(index)
    rows: list[TableRow | None] = []
    texts = lay.by_tiling("grid.devices")  # the same groups in every layout of a sharding
    for t in shown:
        if t is None:
            rows.append(None)
            continue
        shard = dims_text(tuple(b - a for a, b in t.slices)) if t.slices else "—"
        key = (t.devices, 40)
        devices = texts.get(key)
        if devices is None:
            devices = texts[key] = compress_devices(t.devices, max_chars=40)
        rows.append(
            TableRow(
                "(" + ",".join(map(str, t.index)) + ")",
                devices,
                slice_text(lay, t),
                shard,
                dims_text(t.buffer) if t.buffer is not None else "—",
                mark_text(lay, t) or "",
            )
        )
    return rows, elided


class _DrawnFacet(NamedTuple):
    """One facet's grid as drawn: tiles by row, column widths, row heights, and each cell's
    lines centred in its column."""

    title: str | None
    tiles: list[list[Tile | None]]
    widths: list[int]
    heights: list[int]
    lines: list[list[list[str]]]


def _box_lines(f: _DrawnFacet) -> list[str]:
    """A drawn facet in rich's SQUARE box, a line between rows, each cell's lines in the
    middle of its row (rich's `Align(vertical="middle")`: the odd blank line below)."""

    bars = ["─" * w for w in f.widths]
    between = "├" + "┼".join(bars) + "┤"
    out = ["┌" + "┬".join(bars) + "┐"]
    for r, (cells, h) in enumerate(zip(f.lines, f.heights, strict=True)):
        if r:
            out.append(between)
        columns = []
        for lines, w in zip(cells, f.widths, strict=True):
            if len(lines) == h:  # (centred lines are `w` wide already, or wider)
                columns.append(lines)
                continue
            top = (h - len(lines)) // 2
            blank = " " * w
            columns.append([blank] * top + lines + [blank] * (h - top - len(lines)))
        out.extend(["│" + "│".join(parts) + "│" for parts in zip(*columns, strict=True)])
    out.append("└" + "┴".join(bars) + "┘")
    return out


# -- the rich renderable -------------------------------------------------------------------


#: a character other than printable ASCII, box drawing and the symbols pictures draw
#: (`×` of sizes, `…` of elisions, `∅` of empty tiles, `—` of no shard): all printable and
#: one column wide for rich (tests/test_render.py checks each)
_ONE_COLUMN = " -~\u2500-\u257f×…∅—"
_OTHER_CHARACTER = re.compile(f"[^{_ONE_COLUMN}]")
#: the same in lines joined by newlines
_OTHER_IN_LINES = re.compile(f"[^{_ONE_COLUMN}\n]")


def checked_text(out: list[str], lines: str = "") -> str | None:
    """A picture's `out` lines, then `lines` (more of them, joined by newlines), as text, or
    None when rich must draw it: characters not one column each, or not printable."""
    flat = "".join(out)
    # each distinct character one column (rich's `cell_len` of a whole picture went
    # character by character in Python: a third of drawing it); a picture of printable
    # ASCII and the symbols pictures draw needs no look-up (the set of its characters
    # alone took 8 us)
    if _OTHER_CHARACTER.search(flat) is not None or _OTHER_IN_LINES.search(lines):
        from rich.cells import get_character_cell_size

        flat += lines.replace("\n", "")
        if not flat.isprintable() or any(get_character_cell_size(c) != 1 for c in set(flat)):
            return None
    if lines:
        out = [*out, lines]
    return "\n".join(out) + "\n"


def table_title(tiles: tuple[int, ...], cells: list[tuple[str, ...]], too_many: bool) -> str:
    """The line over a picture's table of `tiles` (`cells`): why a table (`too_many` cells
    for a grid, or a grid too wide), and whether the buffer column was left out."""
    if too_many:
        why = "raise --max-cells for a grid"
    else:  # few enough cells, but their text is too wide for the console
        why = "a grid is wider than the console"
    same = "" if "buffer" in cells[0] else "; every tile's buffer is its shard"
    return (
        f"{math.prod(tiles)} tiles ({' × '.join(map(str, tiles)) or '1'}); "
        f"table instead of a grid ({why}){same}"
    )


def table_cells(
    rows: list[TableRow | None], direct: bool, elided: int, width: int
) -> list[tuple[str, ...]]:
    """The table's header and `rows` (None: the `elided` rows left out), as the cells'
    text, for a console `width` wide (`direct`: no cell holds a newline). A table wider
    than that leaves out the columns that say nothing (the buffer when it is the shard on
    every row, the note when no row has one), then wraps the devices, slices and notes over
    several lines of their cells (`_wrapped`). Squeezing a table in, rich narrowed its
    devices and tile columns first, to nothing when slices were long: an uneven 2-D layout
    on an 80-column console lost both."""
    out: list[tuple[str, ...]] = [TABLE_COLUMNS]
    for r in rows:
        if r is None:
            out.append(("…", f"… {elided} tiles omitted (--max-cells) …", "", "", "", ""))
        else:
            out.append(tuple(r))
    if _table_width(_column_widths(out, wrapped=not direct)) <= width:
        return out
    body = out[1:]
    shard, buffer, note = (TABLE_COLUMNS.index(c) for c in ("shard", "buffer", "note"))
    quiet = set()
    if all(row[buffer] == row[shard] for row in body):
        quiet.add(buffer)
    if not any(row[note] for row in body):
        quiet.add(note)
    out = [tuple(c for j, c in enumerate(row) if j not in quiet) for row in out]
    return _wrapped(out, width)


def table_lines(cells: list[tuple[str, ...]], width: int) -> list[str] | None:
    """The table's lines of `cells` as rich draws them on a colourless console `width`
    wide (its SIMPLE_HEAD box without edge padding: a blank line, the header, a rule, the
    rows, a blank line; columns as wide as their widest cell, three spaces apart, one space
    at either edge; a wrapped cell's lines top aligned); None when rich would draw it
    otherwise: wider than the console even wrapped (rich squeezes it), or a cell holding
    what rich reads as markup."""
    # (one search of all cells first: a match never spans the space between two)
    flat = " ".join([c for row in cells for c in row])
    if _MARKUP.search(flat) and any(
        _MARKUP.search(c) and not _as_is(c) for row in cells for c in row
    ):
        return None
    wrapped = "\n" in flat  # (some cell over several lines: each row looked at)
    widths = _column_widths(cells, wrapped)
    total = _table_width(widths)
    if total > width:
        return None
    blank = " " * total
    lines = [blank]
    one_line = " " + "   ".join(f"{{:<{w}}}" for w in widths) + " "  # a row of 1-line cells
    for k, row in enumerate(cells):
        if not wrapped or not any("\n" in c for c in row):
            lines.append(one_line.format(*row))
        else:
            _wrapped_row(row, widths, lines)
        if k == 0:
            lines.append(" " + "─" * (total - 2) + " ")
    lines.append(blank)
    return lines


def _wrapped_row(row: tuple[str, ...], widths: list[int], lines: list[str]) -> None:
    """The lines of a table row some of whose cells are wrapped over several lines (top
    aligned), appended to `lines`."""
    parts = [c.split("\n") for c in row]
    for i in range(max(map(len, parts))):
        lines.append(
            " "
            + "   ".join(
                (p[i] if i < len(p) else "").ljust(w) for p, w in zip(parts, widths, strict=True)
            )
            + " "
        )


def _column_widths(cells: list[tuple[str, ...]], wrapped: bool = True) -> list[int]:
    """Each column's width in a table of `cells`: its widest cell (line of a cell; with
    `wrapped` False the caller knows no cell holds a newline, and the cells are measured
    whole)."""
    if not wrapped:
        return [max(map(len, column)) for column in zip(*cells, strict=True)]
    return [max(map(len, "\n".join(column).split("\n"))) for column in zip(*cells, strict=True)]


#: the columns a table too wide for the console wraps (none narrower than its name)
WRAPPED = ("devices", "slices", "shard", "buffer", "note")


def _wrapped(cells: list[tuple[str, ...]], width: int) -> list[tuple[str, ...]]:
    """`cells` with the `WRAPPED` columns' text over several lines, so that the table is
    at most `width` wide (the tile column keeps its width). Each wrapped column gets its
    longest piece between breaks (`_BREAK`: a dim's range, a run of devices, a size) when
    the room allows, then as many as fit their whole text, the least short first, and the
    ones still wrapped share what is left; an elided rows' line goes to the widest. As
    they were when the wrapped columns cannot be as wide as their names (rich then
    squeezes them)."""
    head = cells[0]
    natural = _column_widths(cells)
    if _table_width(natural) <= width:  # it fits as it is
        return cells
    rows = [row for row in cells[1:] if row[0] != "…"] or cells[1:]
    wrap = [j for j, name in enumerate(head) if name in WRAPPED]
    whole = {j: max(len(head[j]), *(len(row[j]) for row in rows)) for j in wrap}
    room = width - _table_width(natural) + sum(natural[j] for j in wrap)
    widths = {j: len(head[j]) for j in wrap}
    if not wrap or room < sum(widths.values()):
        return cells
    extra = room - sum(widths.values())
    for j in wrap:  # in the table's order: devices, slices, sizes, note
        piece = max(len(p.rstrip()) for row in rows for p in _BREAK.findall(row[j]))
        give = min(max(0, min(piece, whole[j]) - widths[j]), extra)
        widths[j] += give
        extra -= give
    for j in sorted(wrap, key=lambda j: whole[j] - widths[j]):  # as many whole as fit
        if whole[j] - widths[j] <= extra:
            extra -= whole[j] - widths[j]
            widths[j] = whole[j]
    rest = [j for j in wrap if widths[j] < whole[j]]
    for k, j in enumerate(rest):  # what is left, shared evenly by the ones still wrapped
        widths[j] += extra // len(rest) + (1 if k < extra % len(rest) else 0)
    widest = max(wrap, key=lambda j: widths[j])
    out = [head]
    for row in cells[1:]:
        if row[0] == "…" and row[1]:  # the elided rows' line, in the widest wrapped column
            row = tuple("" if j == 1 else row[1] if j == widest else c for j, c in enumerate(row))
        out.append(tuple(_wrap_text(c, widths[j]) if j in widths else c for j, c in enumerate(row)))
    return out


#: where a cell's text may break: after a comma (and the space after it), a space or the
#: `×` of a size
_BREAK = re.compile(r"[^, ×]*(?:, |,| |×|$)")


def _wrap_text(text: str, width: int) -> str:
    """`text` over lines of at most `width` characters, broken after a comma, a space or a
    `×` where it can (device lists `0-3,8-11`, slices `[0:8, 8:16]`, sizes `8×16`, notes),
    a piece longer than a line cut where the line ends; the spaces at a break are
    dropped."""
    if len(text) <= width:
        return text
    lines: list[str] = []
    line = ""
    for piece in _BREAK.findall(text):
        if not piece:
            continue
        if len(line) + len(piece.rstrip()) > width and line:
            lines.append(line.rstrip())
            line = ""
        while len(piece.rstrip()) > width:  # longer than a line: cut
            lines.append(piece[:width])
            piece = piece[width:]
        line += piece
    if line.rstrip():
        lines.append(line.rstrip())
    return "\n".join(lines)


def _table_width(widths: list[int]) -> int:
    """How wide rich draws a table of columns `widths` wide (`table_lines`): three spaces
    between columns, one at either edge."""
    return sum(widths) + 3 * (len(widths) - 1) + 2


#: the columns of the table a layout is shown as when it does not fit a grid
TABLE_COLUMNS = ("tile", "devices", "slices", "shard", "buffer", "note")
#: what rich may read as console markup (`[bold]`, `[/]`, `[@click]`) or an emoji code
#: (`:smile:`, but not `:2,1-7:` of `0-6:2,1-7:2`) in a table cell's string
_MARKUP = re.compile(r"\[[a-z#/@]|:\S*?:")


def _as_is(cell: str) -> bool:
    """Whether rich prints the table cell `cell` as it is (markup and emoji codes read)."""
    from rich.markup import render

    return render(cell, emoji=True).plain == cell
