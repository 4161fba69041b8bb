"""The layout picture as a drawing: SVG (rectangles proportional to slice sizes) and a
self-contained HTML page (the SVG plus the tile table).

Uses the same plan as the terminal grid (`grid.plan_grid`): one `<rect class="tile">` per
tile (at most MAX_DRAWN_ROWS × MAX_DRAWN_COLS per facet: larger grids draw their first rows and
columns and say how many tiles were not drawn), facets stacked vertically, fills per replica group, empty/absent tiles hatched,
padded tiles outlined with a dashed line. Every tile rect carries a `<title>` tooltip with
its devices, ranges and buffer, so even cells too small for a label stay readable.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from meshdiag.notation.devicelist import NOTATION, compress_devices
from meshdiag.report.grid import (
    EMPTY_FILL,
    MAX_FACETS,
    GridPlan,
    TileIndex,
    fill_color,
    header_lines,
    plan_grid,
    slice_text,
    table_rows,
    text_color,
)

if TYPE_CHECKING:
    from meshdiag.layouts.engine import Layout

_FONT = "font-family:ui-monospace,Menlo,Consolas,monospace"
_CHAR_W = 0.62  # em width of a monospace glyph, for deciding whether a label fits
#: rows and columns of tiles drawn per facet; the rest is counted, not drawn
MAX_DRAWN_ROWS = 64
MAX_DRAWN_COLS = 64


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def _fmt(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def to_svg(
    lay: Layout,
    sharding_text: str | None = None,
    *,
    width: int = 800,
    grid_height: int | None = None,
    font_size: int = 12,
    max_facets: int = MAX_FACETS,
    hatch_id: str = "hatch",
) -> str:
    """An SVG document drawing the tiles of the layout (the first MAX_DRAWN_ROWS ×
    MAX_DRAWN_COLS of each facet). `hatch_id` names its hatch pattern: one page holding
    several drawings gives each its own id."""
    plan = _drawn_plan(lay, max_facets)
    dims = (plan.row_dims + plan.col_dims) if lay.rank >= 3 else None
    head = _head(lay, sharding_text, plan)
    pad = 10
    line_h = font_size + 4
    inner_w = width - 2 * pad
    first = plan.facets[0]
    nrows, ncols = len(first.cells), len(first.cells[0])
    if grid_height is None:  # keep the tensor's aspect ratio for two grid dims, within bounds
        rw, cw = sum(first.row_weights) or nrows, sum(first.col_weights) or ncols
        aspect = rw / cw if plan.row_dims and plan.col_dims else 0.15 if not plan.row_dims else 1
        grid_height = int(min(max(inner_w * aspect, 60 * nrows if nrows < 10 else 300), 2000))
        grid_height = max(grid_height, min(nrows, 400) * 3, 40)

    parts: list[str] = []
    y = pad
    for k, line in enumerate(head):
        weight = ' font-weight="bold"' if k == 0 else ""
        y += line_h
        parts.append(f'<text x="{pad}" y="{y}" font-size="{font_size}"{weight}>{_esc(line)}</text>')
    y += pad // 2
    for facet in plan.facets:
        if facet.title:
            y += line_h
            parts.append(
                f'<text x="{pad}" y="{y}" font-size="{font_size}" font-weight="bold">'
                f"{_esc(facet.title)}</text>"
            )
            y += 4
        parts.append(
            _facet_svg(lay, facet, dims, pad, y, inner_w, grid_height, font_size, hatch_id)
        )
        y += grid_height + pad
        more = _more_text(facet)
        if more:
            y += line_h
            parts.append(
                f'<text class="more" x="{pad}" y="{y}" font-size="{font_size}" '
                f'font-style="italic">{_esc(more)}</text>'
            )
            y += pad // 2
    total_h = y + pad
    defs = (
        "<defs>"
        f'<pattern id="{hatch_id}" patternUnits="userSpaceOnUse" width="8" height="8" '
        'patternTransform="rotate(45)">'
        f'<rect width="8" height="8" fill="{EMPTY_FILL}"/>'
        '<line x1="0" y1="0" x2="0" y2="8" stroke="#999999" stroke-width="3"/>'
        "</pattern></defs>"
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total_h}" '
        f'viewBox="0 0 {width} {total_h}" style="{_FONT}">'
        f"<title>{_esc(head[0])}</title>{defs}"
        f'<rect class="background" x="0" y="0" width="{width}" height="{total_h}" fill="#ffffff"/>'
        + "".join(parts)
        + "</svg>\n"
    )


def _drawn_plan(lay: Layout, max_facets: int) -> GridPlan:
    return plan_grid(lay, max_facets=max_facets, max_rows=MAX_DRAWN_ROWS, max_cols=MAX_DRAWN_COLS)


def _head(lay: Layout, sharding_text: str | None, plan: GridPlan) -> list[str]:
    """The grid's header lines, plus what was left undrawn when the grid is truncated."""
    head = header_lines(lay, sharding_text, plan)
    if plan.truncated:
        f = plan.facets[0]
        drawn = sum(len(x.cells) * len(x.cells[0]) for x in plan.facets)
        head.append(
            f"drawn: the first {len(f.cells)} of {f.total_rows} rows and {len(f.cells[0])} of "
            f"{f.total_cols} columns{' of each facet' if len(plan.facets) > 1 else ''}; "
            f"… {plan.num_cells - drawn} more tiles not drawn"
        )
    return head


def _more_text(facet) -> str | None:
    rows = facet.total_rows - len(facet.cells)
    cols = facet.total_cols - len(facet.cells[0])
    bits = [f"{n} more {what}" for n, what in ((rows, "rows"), (cols, "columns")) if n > 0]
    return "… " + ", ".join(bits) + " not drawn" if bits else None


def _positions(weights: tuple[int, ...], total: float) -> list[tuple[float, float]]:
    """(offset, size) per weight, proportional; all-zero weights split evenly."""
    ws = weights if sum(weights) else (1,) * len(weights)
    # give zero-length slices a sliver so empty tiles stay visible
    floor = sum(ws) * 0.04
    adj = [max(w, floor) for w in ws]
    s = sum(adj)
    out, pos = [], 0.0
    for w in adj:
        size = total * w / s
        out.append((pos, size))
        pos += size
    return out


def _facet_svg(lay, facet, dims, x0, y0, w, h, font_size, hatch_id) -> str:
    cols = _positions(facet.col_weights, w)
    rows = _positions(facet.row_weights, h)
    out = [f'<g class="facet" transform="translate({x0},{y0})">']
    for (ry, rh), row in zip(rows, facet.cells, strict=True):
        for (cx, cw), tile in zip(cols, row, strict=True):
            if tile is None:
                continue
            devices = compress_devices(tile.devices)
            ranges = slice_text(lay, tile)
            hollow = tile.status in ("empty", "absent")
            fill = f"url(#{hatch_id})" if hollow else fill_color(tile.fill)
            padded = (
                tile.buffer is not None
                and tile.slices is not None
                and any(buf > b - a for (a, b), buf in zip(tile.slices, tile.buffer, strict=True))
            )
            stroke = ' stroke-dasharray="4 2"' if padded else ""
            tip = f"devices {devices}\n{ranges}"
            if tile.buffer is not None:
                tip += "\nbuffer " + "×".join(map(str, tile.buffer))
            tip += f"\n{tile.status}"
            out.append(
                f'<rect class="tile {tile.status}" x="{_fmt(cx)}" y="{_fmt(ry)}" '
                f'width="{_fmt(cw)}" height="{_fmt(rh)}" fill="{fill}" stroke="#222222" '
                f'stroke-width="1"{stroke} data-devices="{_esc(devices)}">'
                f"<title>{_esc(tip)}</title></rect>"
            )
            color = "#000000" if hollow else text_color(fill_color(tile.fill))
            lines = [
                compress_devices(tile.devices, max_chars=max(4, int(cw / (font_size * _CHAR_W))))
            ]
            if tile.slices is not None:
                lines.append(slice_text(lay, tile, dims))
            if tile.status == "empty":
                lines.append("∅ empty")
            elif tile.status == "absent":
                lines.append("∅ no data")
            elif padded:
                lines.append("padded")
            fits = [s for s in lines if len(s) * font_size * _CHAR_W <= cw - 4]
            n_fit = len(fits) if fits and len(fits) * (font_size + 2) <= rh - 2 else 0
            shown = [s for s in lines if s in fits][:n_fit]
            top = ry + rh / 2 - (len(shown) - 1) * (font_size + 2) / 2 + font_size / 3
            for i, s in enumerate(shown):
                out.append(
                    f'<text x="{_fmt(cx + cw / 2)}" y="{_fmt(top + i * (font_size + 2))}" '
                    f'font-size="{font_size}" text-anchor="middle" fill="{color}">'
                    f"{_esc(s)}</text>"
                )
    out.append("</g>")
    return "".join(out)


_CSS = """
body { font-family: ui-sans-serif, system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.1em; font-family: ui-monospace, Menlo, Consolas, monospace; }
p.note { margin: 0.2em 0; font-size: 0.9em; color: #444; }
table { border-collapse: collapse; margin-top: 1em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 2px 8px; text-align: left;
         font-family: ui-monospace, Menlo, Consolas, monospace; }
th { background: #f3f3f3; }
td.swatch { width: 1.2em; }
tr.elided td { text-align: center; font-style: italic; color: #666; }
"""


def to_html(
    lay: Layout,
    sharding_text: str | None = None,
    *,
    max_rows: int = 2048,
    width: int = 800,
) -> str:
    """A self-contained HTML page: header, the SVG drawing, and the tile table."""
    head = _head(lay, sharding_text, _drawn_plan(lay, MAX_FACETS))
    svg = to_svg(lay, sharding_text, width=width)
    rows, elided = table_rows(lay, max_rows)
    tiles = TileIndex(lay)
    body = []
    for r in rows:
        if r is None:
            body.append(f'<tr class="elided"><td colspan="7">… {elided} tiles omitted …</td></tr>')
            continue
        index = tuple(int(x) for x in r.tile.strip("()").split(",") if x)
        t = tiles.get(index)
        swatch = EMPTY_FILL if t is None or t.status in ("empty", "absent") else fill_color(t.fill)
        cells = (r.tile, r.devices, r.slices, r.shard, r.buffer, r.note)
        body.append(
            f'<tr><td class="swatch" style="background:{swatch}"></td>'
            + "".join(f"<td>{_esc(c)}</td>" for c in cells)
            + "</tr>"
        )
    notes = "".join(f'<p class="note">{_esc(line)}</p>' for line in head[1:])
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>meshdiag layout: {_esc(head[0])}</title><style>{_CSS}</style></head><body>"
        f"<h1>{_esc(head[0])}</h1>{notes}"
        f'<div class="picture">{svg}</div>'
        "<table><thead><tr><th></th><th>tile</th><th>devices</th><th>slices</th>"
        "<th>shard</th><th>buffer</th><th>note</th></tr></thead><tbody>"
        + "".join(body)
        + f'</tbody></table><p class="note">devices: {_esc(NOTATION)}</p></body></html>\n'
    )
