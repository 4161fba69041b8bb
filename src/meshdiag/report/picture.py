"""The rich half of the layout picture (`report.grid` is the pure half): `LayoutPicture`,
a renderable that draws a layout as a boxed grid of tiles like
`jax.debug.visualize_sharding` (rows the tiles of one tensor dim, columns those of another,
cell sizes following slice sizes when there is room, cells listing the devices holding the
tile and its ranges, colours following replica groups), or as a compact table; and
`render_text`, the picture as text. On a colourless console it draws without rich
(`plain`): pictures of whole tiles from their tiling alone (`report.whole`), others through
the planner."""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import chain
from typing import TYPE_CHECKING

from meshdiag.layouts.engine import TiledSpec
from meshdiag.report import whole as _whole
from meshdiag.report.grid import (
    EMPTY_FILL,
    MAX_FACETS,
    MIN_CELL_WIDTH,
    MIN_LABEL_WIDTH,
    GridPlan,
    TableRow,
    TileIndex,
    _box_lines,
    _DrawnFacet,
    cell_lines,
    checked_text,
    distribute,
    fill_color,
    grid_cells,
    header_lines,
    plan_grid,
    table_cells,
    table_lines,
    table_rows,
    table_title,
    text_color,
)

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

    from meshdiag.layouts.engine import Layout


class LayoutPicture:
    """`console.print(LayoutPicture(layout, sharding_text))` draws the layout."""

    def __init__(
        self,
        lay: Layout | Callable[[], Layout],
        sharding_text: str | None = None,
        *,
        max_cells: int = 64,
        use_color: bool = True,
        max_facets: int = MAX_FACETS,
        compact: bool = False,
        legend: bool = True,
        whole: TiledSpec | None = None,
    ):
        """`lay`: the layout, or what makes it when first asked (`whole`, the tiled layout
        it makes, named by its tiling and shape: `plain` draws it from those alone where
        its tiles are all whole, and the layout is made only for any other picture)."""
        if callable(lay):
            self._layout, self._make = None, lay
        else:
            self._layout, self._make = lay, None
            if whole is None and lay.tiling is not None:
                whole = TiledSpec(lay.tiling, lay.shape, lay.split)
        self.whole = whole
        self.sharding_text = sharding_text
        self.max_cells = max(1, max_cells)
        self.use_color = use_color
        self.max_facets = max_facets
        #: cells as tall as their labels (summaries); otherwise heights follow the slice sizes
        self.compact = compact
        self.legend = legend  # False: the caller prints `LEGEND` once for many pictures
        self._index: TileIndex | None = None

    @property
    def layout(self) -> Layout:
        if self._layout is None:
            assert self._make is not None
            self._layout, self._make = self._make(), None
        return self._layout

    def _tiles(self) -> TileIndex:
        """The layout's tiles, indexed once for the grid and the table: a grid wider than
        the console falls back to the table (most pictures of a big file's wide tensors
        on an 80-column console), and indexing them again was a sixth of drawing it."""
        if self._index is None:
            self._index = TileIndex(self.layout)
        return self._index

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.text import Text

        lay = self.layout
        grids = plan = None
        if grid_cells(lay, self.max_facets) <= self.max_cells:  # else a table: plan nothing
            plan = plan_grid(lay, max_facets=self.max_facets, index=self._tiles())
            drawn = self._drawn(plan, options.max_width)
            grids = None if drawn is None else self._grids(drawn)
        head = header_lines(lay, self.sharding_text, plan if grids else None, legend=self.legend)
        for k, line in enumerate(head):
            yield Text(line, style="bold" if k == 0 else "dim" if k == 1 and self.legend else "")
        if grids is None:
            yield from self._table(options.max_width)
            return
        for title, table in grids:
            if title:
                yield Text(title, style="bold")
            yield table

    # grids ------------------------------------------------------------------------------
    def _drawn(self, plan: GridPlan, width: int) -> list[_DrawnFacet] | None:
        """Each facet's cells as drawn at console `width`: column widths, row heights and
        each cell's centred lines; None when the cells do not fit the width."""
        lay = self.layout
        dims = (plan.row_dims + plan.col_dims) if lay.rank >= 3 else None
        out = []
        known = lay.by_tiling("grid.devices")
        for facet in plan.facets:
            ncols = len(facet.cells[0])
            texts = [
                [cell_lines(lay, t, dims=dims, texts=known) for t in row] for row in facet.cells
            ]
            natural = [
                max(MIN_LABEL_WIDTH - 2, *map(len, chain.from_iterable(column))) + 2
                for column in zip(*texts, strict=True)
            ]
            room = width - (ncols + 1)  # borders
            if sum(natural) > room:
                # try eliding long device lists before giving up on the grid (only they
                # change: no use when the other lines do not fit a narrow cell)
                natural = [MIN_CELL_WIDTH + 6] * ncols
                if sum(natural) > room or any(
                    len(s) + 2 > natural[0] for row in texts for c in row for s in c[1:]
                ):
                    return None
                texts = [
                    [cell_lines(lay, t, width=natural[0] - 2, dims=dims, texts=known) for t in row]
                    for row in facet.cells
                ]
                if any(len(c[0]) + 2 > natural[0] for row in texts for c in row):
                    return None
            target = min(room, max(sum(natural), 60))
            widths = distribute(facet.col_weights, natural, target)
            if sum(widths) > room:
                widths = natural
            nlines = max(map(len, chain.from_iterable(texts)))
            height_total = min(max(8, nlines * len(facet.cells)), 12 * len(facet.cells))
            if lay.rank <= 1 or self.compact:
                heights = [nlines] * len(facet.cells)
            else:
                heights = distribute(facet.row_weights, [nlines] * len(facet.cells), height_total)
            lines = [
                [[x.center(w) for x in c] for c, w in zip(row, widths, strict=True)]
                for row in texts
            ]
            out.append(_DrawnFacet(facet.title, facet.cells, widths, heights, lines))
        return out

    def _grids(self, drawn: list[_DrawnFacet]):
        """One rich Table per drawn facet (with the tiles' colours)."""
        from rich import box
        from rich.align import Align
        from rich.style import Style
        from rich.table import Table
        from rich.text import Text

        out = []
        for f in drawn:
            table = Table(
                show_header=False, show_lines=True, box=box.SQUARE, padding=0, pad_edge=False
            )
            for w in f.widths:
                table.add_column(width=w, no_wrap=True)
            for row, lines_row, h in zip(f.tiles, f.lines, f.heights, strict=True):
                cells = []
                for t, lines in zip(row, lines_row, strict=True):
                    style = Style()
                    if self.use_color and t is not None:
                        fill = EMPTY_FILL if t.status in ("empty", "absent") else fill_color(t.fill)
                        style = Style(bgcolor=fill, color=text_color(fill))
                    text = Text("\n".join(lines), no_wrap=True)
                    cells.append(Align(text, "left", vertical="middle", height=h, style=style))
                table.add_row(*cells)
            out.append((f.title, table))
        return out

    def plain(self, width: int) -> str | None:
        """What a colourless console `width` columns wide prints for the picture, drawn
        without rich (a big file's hundreds of distinct pictures made rich's table layout a
        third of its run, and its tables of tiles that do not fit a grid 2.7 ms each);
        None where only rich draws it: a table wider than the console (rich wraps it), a
        cell rich would read as markup, text whose characters are not one column each or
        not printable."""
        if self.whole is not None:
            got = _whole.whole_text(
                self.whole,
                self.sharding_text,
                width,
                max_cells=self.max_cells,
                max_facets=self.max_facets,
                compact=self.compact,
                legend=self.legend,
            )
            if got is not _whole.NOT_WHOLE:
                return got  # type: ignore[return-value]
        lay = self.layout
        ranges = _whole._whole_tiles(lay)
        if ranges is not None:  # (an untiled matrix, a tiling too big to list its order)

            def head(plan: GridPlan | None) -> list[str]:
                return header_lines(lay, self.sharding_text, plan, legend=self.legend)

            got = _whole.whole_picture(
                lay.tiles,
                lay.shape,
                ranges,
                lay.by_tiling,
                lay.tile_order,
                head,
                width,
                max_cells=self.max_cells,
                max_facets=self.max_facets,
                compact=self.compact,
            )
            if got is not _whole.NOT_WHOLE:
                return got  # type: ignore[return-value]
        plan = None
        drawn: list[_DrawnFacet] | None = None
        if grid_cells(lay, self.max_facets) <= self.max_cells:  # else a table: plan nothing
            plan = plan_grid(lay, max_facets=self.max_facets, index=self._tiles())
            drawn = self._drawn(plan, width)
        if drawn is None:
            out = header_lines(lay, self.sharding_text, None, legend=self.legend)
            cells = self._table_cells(width)
            out.append(self._table_title(cells))
            table = table_lines(cells, width)
            if table is None:
                return None
            out.extend(table)
        else:
            out = header_lines(lay, self.sharding_text, plan, legend=self.legend)
            for f in drawn:
                if f.title:
                    out.append(f.title)
                out.extend(_box_lines(f))
        return checked_text(out)

    def _whole_grid(self) -> _whole._WholeGrid | None:
        """`whole.whole_grid` of the layout, when its tiles are all whole (`_whole_tiles`)."""
        lay = self.layout
        ranges = _whole._whole_tiles(lay)
        if ranges is None:
            return None
        return _whole.whole_grid(
            lay.tiles, ranges, lay.by_tiling, lay.tile_order, self.max_facets, self.max_cells
        )

    def _direct_grids(self, width: int) -> _whole._Direct | object | None:
        """`whole.direct_grids` of a compact picture whose tiles are all whole (`_whole_grid`);
        None for any other."""
        whole = self._whole_grid() if self.compact else None
        return None if whole is None else _whole.direct_grids(whole, width)

    def _direct_rows(self) -> list[TableRow | None] | None:
        """`whole.whole_rows` of the layout, when its tiles are all whole (`_whole_tiles`) and
        the table shows them all; None for any other."""
        lay = self.layout
        tiles = lay.tiles
        ranges = _whole._whole_tiles(lay) if math.prod(tiles) <= self.max_cells else None
        if ranges is None:
            return None
        return _whole.whole_rows(tiles, lay.shape, ranges, self._table_tiles())

    def _table_tiles(self) -> list[tuple[str, str, tuple[int, ...]]]:
        """`whole.table_tiles` of the layout's tiling (of the layout alone without one)."""
        lay = self.layout
        known, texts = lay.by_tiling("grid.table_tiles"), lay.by_tiling("grid.devices")
        return _whole.table_tiles(lay.tiles, known, texts, lay.tile_order)

    # table fallback ---------------------------------------------------------------------
    def _table(self, width: int):
        from rich import box
        from rich.table import Table
        from rich.text import Text

        cells = self._table_cells(width)
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
        for name in cells[0]:
            table.add_column(name, no_wrap=name != "devices")
        for row in cells[1:]:
            table.add_row(*row)
        yield Text(self._table_title(cells), style="italic")
        yield table

    def _table_title(self, cells: list[tuple[str, ...]]) -> str:
        lay = self.layout
        return table_title(lay.tiles, cells, grid_cells(lay, self.max_facets) > self.max_cells)

    def _table_cells(self, width: int) -> list[tuple[str, ...]]:
        """`table_cells` of the layout's tiles (`_direct_rows` when they are all whole)."""
        rows = self._direct_rows()
        if rows is not None:
            return table_cells(rows, True, 0, width)
        rows, elided = table_rows(self.layout, self.max_cells, self._tiles())
        return table_cells(rows, False, elided, width)


def render_text(
    lay: Layout,
    sharding_text: str | None = None,
    *,
    width: int = 100,
    max_cells: int = 64,
    color: bool = False,
) -> str:
    """The picture as plain text (or ANSI when `color`), for tests and captures."""
    import io

    from rich.console import Console

    buf = io.StringIO()
    console = Console(
        file=buf,
        width=width,
        color_system="truecolor" if color else None,
        force_terminal=color,
        legacy_windows=False,
    )
    console.print(LayoutPicture(lay, sharding_text, max_cells=max_cells, use_color=color))
    return buf.getvalue()
