"""`meshdiag inspect PATH --html FILE`: a dump as one self-contained HTML page.

Built from the objects the other outputs are built from — the `DumpSummary` of the files and
the measured collectives of the same paths — and nothing else: a header (paths, files read
and skipped, modules, id space), the meshes as tables of device ids, the distinct layouts in
one table, each layout's picture (`export.to_svg`, bounded for huge meshes), the collectives
(largest per-device traffic first) and the findings grouped by code.

Inline CSS and SVG only: no scripts, no fetches; sections fold with `<details>`. Every
string from a dump is escaped (a dump is untrusted input).
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from typing import TYPE_CHECKING

from meshdiag.notation.byte_size import human_bytes
from meshdiag.pipeline.dump_summary import SPELLINGS_MAX
from meshdiag.report.comms_text import axes_text, groups_text
from meshdiag.report.dump_text import MAX_SPELLINGS, counts_text, path_shower, uncounted
from meshdiag.report.file_text import MAX_GRID

if TYPE_CHECKING:
    from meshdiag.comms.report import FileComms, Row
    from meshdiag.ir.model import MeshDecl
    from meshdiag.model.findings import Finding
    from meshdiag.pipeline.dump_summary import DumpSummary, Group

#: layouts drawn at most (the rest are listed in the table, not drawn)
MAX_PICTURES = 64
#: collectives listed at most (the largest; the rest are counted)
MAX_COLLECTIVES = 2000
#: the width of each picture, in CSS pixels
PICTURE_WIDTH = 760

_CSS = """
body { font-family: ui-sans-serif, system-ui, sans-serif; margin: 1.5em; color: #222;
       background: #fff; }
h1 { font-size: 1.3em; }
h2 { font-size: 1.1em; display: inline; }
h3 { font-size: 1em; margin: 1em 0 0.3em; }
code, td, th, .mono { font-family: ui-monospace, Menlo, Consolas, monospace; }
section { margin: 1.2em 0; }
summary { cursor: pointer; }
p.note { margin: 0.2em 0; font-size: 0.9em; color: #444; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 2px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; }
figure { margin: 1em 0; padding: 0.5em; border: 1px solid #ddd; }
figcaption { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 0.85em;
             margin-bottom: 0.4em; }
li.finding { margin: 0.3em 0; }
.error { color: #b00020; } .warning { color: #9a6700; } .info { color: #0550ae; }
"""


def _e(text: object) -> str:
    """Text from a dump, escaped for element content and attribute values."""
    return html.escape(str(text), quote=True)


def _n(k: int, what: str) -> str:
    return f"{k:,} {what}{'' if k == 1 else 's'}"


def page(
    s: DumpSummary,
    comms: list[FileComms],
    *,
    roots: list[str],
    split: str = "xla",
) -> str:
    """The whole page for the files `s` summarises and the collectives `comms` measured."""
    shown = path_shower(roots)
    body = "".join(
        [
            *_header(s, roots),
            *_meshes(s),
            *_layouts(s, shown),
            *_pictures(s, split),
            *_collectives(comms, shown),
            *_findings(s, shown),
        ]
    )
    title = "meshdiag inspect " + " ".join(roots)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
        f"{body}</body></html>\n"
    )


def _section(key: str, title: str, parts: list[str]) -> Iterator[str]:
    yield f'<section id="{key}"><details open><summary><h2>{_e(title)}</h2></summary>'
    yield from parts
    yield "</details></section>"


def _header(s: DumpSummary, roots: list[str]) -> Iterator[str]:
    yield '<header id="header"><h1>meshdiag inspect</h1>'
    yield "<p>" + "<br>".join(f"<code>{_e(r)}</code>" for r in roots) + "</p>"
    counts = ", ".join(
        [
            _n(s.files, "file") + " read",
            f"{s.skipped:,} skipped (binary, LLVM IR)",
            _n(s.modules, "module"),
            _n(s.values, "sharded value"),
            _n(s.num_findings, "finding"),
        ]
    )
    yield f'<p class="counts">{_e(counts)}</p>'
    for label, files in s.id_spaces.items():
        in_files = f" ({_n(files, 'file')})" if len(s.id_spaces) > 1 else ""
        yield f'<p class="note idspace">{_e(label + in_files)}</p>'
    yield "</header>"


def _meshes(s: DumpSummary) -> Iterator[str]:
    parts = []
    if not s.meshes:
        parts.append('<p class="note">no meshes declared</p>')
    for (_, text), seen in s.meshes.items():
        d = seen.decl
        parts.append(
            f'<h3 class="mesh">@{_e(d.name)} = <code>{_e(text)}</code> '
            f"<small>in {_e(_n(seen.files, 'file'))}</small></h3>"
        )
        parts.append(_mesh_table(d))
    yield from _section("meshes", f"Meshes ({len(s.meshes)})", parts)


def _mesh_table(d: MeshDecl) -> str:
    """The mesh's device ids: rows along its first axis, columns along the rest."""
    m = d.mesh
    if m is None:
        return '<p class="note">(the mesh text did not parse: see the findings)</p>'
    if len(m.axes) == 0:
        return '<p class="note">(no axes: a single device)</p>'
    if m.size > MAX_GRID:
        return f'<p class="note">{_e(_n(m.size, "device"))}: too many to tabulate</p>'
    ids = m.ids
    several = len(m.axes) > 1
    rows = m.shape[0] if several else 1
    cols = m.size // rows
    rest = ",".join(m.names[1:]) if several else m.names[0]
    head = "".join(f"<th>{_e(f'{rest}[{c}]')}</th>" for c in range(cols))
    out = ['<table class="mesh"><thead><tr><th></th>', head, "</tr></thead><tbody>"]
    for r in range(rows):
        label = f"{m.names[0]}={r}" if several else ""
        cells = "".join(f'<td class="num">{int(ids[r * cols + c])}</td>' for c in range(cols))
        out.append(f"<tr><th>{_e(label)}</th>{cells}</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _layouts(s: DumpSummary, shown) -> Iterator[str]:
    groups = list(s.groups.values())
    parts = [
        '<table class="layouts"><thead><tr><th>#</th><th>values</th><th>files</th>'
        "<th>layout</th><th>written as</th><th>shapes</th><th>first seen</th>"
        "</tr></thead><tbody>"
    ]
    for i, g in enumerate(groups, 1):
        ranked = sorted(g.spellings.items(), key=lambda kv: -kv[1])
        spell = "<br>".join(f"<code>{_e(t)}</code> ×{n:,}" for t, n in ranked[:MAX_SPELLINGS])
        if len(ranked) > MAX_SPELLINGS:
            more = len(ranked) - MAX_SPELLINGS
            spell += f"<br>(+{more} more{_e(uncounted(len(ranked), SPELLINGS_MAX))})"
        shapes = "<br>".join(
            f"{what} {_e(counts_text(d))}"
            for what, d in (("global", g.shapes), ("per device", g.local_shapes))
            if d
        )
        where = ""
        if g.where:
            p, name, line = g.where[0]
            where = f"{shown(p)}:{line} ({name})"
        parts.append(
            f'<tr class="layout"><td class="num"><a href="#layout-{i}">{i}</a></td>'
            f'<td class="num">{g.values:,}</td><td class="num">{g.files:,}</td>'
            f"<td><code>{_e(g.key)}</code></td><td>{spell}</td><td>{shapes}</td>"
            f"<td>{_e(where)}</td></tr>"
        )
    parts.append("</tbody></table>")
    if not groups:
        parts = ['<p class="note">no sharded values</p>']
    yield from _section("layouts", f"Distinct layouts ({len(groups)})", parts)


def _pictures(s: DumpSummary, split: str) -> Iterator[str]:
    parts = []
    drawn = 0
    for i, g in enumerate(s.groups.values(), 1):
        caption = (
            f"<figcaption>{i}. <code>{_e(g.key)}</code> — "
            f"{_e(_n(g.values, 'value'))} in {_e(_n(g.files, 'file'))}</figcaption>"
        )
        if drawn >= MAX_PICTURES:
            svg, why = None, f"not drawn: only the first {MAX_PICTURES} layouts are"
        else:
            svg, why = _picture(g, split, f"hatch-{i}")
        if svg is not None:
            drawn += 1
            parts.append(f'<figure class="layout" id="layout-{i}">{caption}{svg}</figure>')
        else:
            parts.append(
                f'<figure class="layout undrawn" id="layout-{i}">{caption}'
                f'<p class="note">{_e(why)}</p></figure>'
            )
    if not s.groups:
        parts.append('<p class="note">no sharded values</p>')
    yield from _section("pictures", f"Layout pictures ({drawn} drawn)", parts)


def _picture(g: Group, split: str, hatch: str) -> tuple[str | None, str]:
    """(the layout's SVG, or None and why it is not drawn)."""
    if g.draw is None:
        return None, "not drawn: no value with this layout has a global shape"
    from meshdiag.errors import MeshdiagError
    from meshdiag.report.svg import to_svg

    try:
        lay = g.layout(split)
    except MeshdiagError as e:
        return None, f"not drawn: {e}"
    return to_svg(lay, g.key, width=PICTURE_WIDTH, hatch_id=hatch), ""


def collective_rows(comms: list[FileComms]) -> list[tuple[str, str | None, Row]]:
    """(path, module name, row) of every collective, largest bytes per device first (in
    file order among equals)."""
    rows = [(f.path, mc.module.name, r) for f in comms for mc in f.modules for r in mc.rows]
    order = sorted(range(len(rows)), key=lambda k: (-rows[k][2].per_device, k))
    return [rows[k] for k in order]


def _collectives(comms: list[FileComms], shown) -> Iterator[str]:
    rows = collective_rows(comms)
    if not rows:
        yield from _section(
            "collectives", "Collectives (0)", ['<p class="note">no collectives</p>']
        )
        return
    total = sum(r.per_device for _, _, r in rows)
    parts = [
        f'<p class="note">{_e(_n(len(rows), "collective"))}, '
        f"{_e(human_bytes(total))} per device in all; largest first</p>",
        '<table class="collectives"><thead><tr><th>kind</th><th>name</th><th>where</th>'
        "<th>shape</th><th>groups</th><th>axes</th><th>bytes per device</th></tr></thead>"
        "<tbody>",
    ]
    for path, module, r in rows[:MAX_COLLECTIVES]:
        c = r.collective
        shape = ", ".join(
            f"{d}[{'?' if sh is None else ','.join(map(str, sh))}]" for sh, d in c.results
        )
        nbytes = "?" if r.traffic is None else f"{r.per_device:,}"
        if r.traffic is not None and not r.exact:
            nbytes = "≤ " + nbytes
        where = f"{shown(path)}:{c.line}" + (f" ({module})" if module else "")
        parts.append(
            f'<tr class="collective" data-line="{c.line}" data-bytes="{r.per_device}">'
            f"<td>{_e(c.kind)}</td><td><code>{_e(c.name)}</code></td><td>{_e(where)}</td>"
            f"<td>{_e(shape or '-')}</td><td>{_e(groups_text(r, '×'))}</td>"
            f'<td>{_e(axes_text(r))}</td><td class="num">{_e(nbytes)}</td></tr>'
        )
    parts.append("</tbody></table>")
    if len(rows) > MAX_COLLECTIVES:
        more = len(rows) - MAX_COLLECTIVES
        parts.append(f'<p class="note">(+{more:,} smaller collectives not listed)</p>')
    yield from _section("collectives", f"Collectives ({len(rows):,})", parts)


def _findings(s: DumpSummary, shown) -> Iterator[str]:
    if not s.findings:
        yield from _section("findings", "Findings (0)", ['<p class="note">no findings</p>'])
        return
    by_code: dict[str, list] = {}
    for seen in s.findings.values():
        by_code.setdefault(seen.first.code, []).append(seen)
    parts = []
    for code in sorted(by_code):
        seen_list = by_code[code]
        first: Finding = seen_list[0].first
        parts.append(
            f'<h3 class="code" id="code-{_e(code)}">{_e(code)} {_e(first.name)} '
            f'<span class="{_e(first.severity)}">({_e(first.severity)})</span> '
            f"×{s.by_code[code]:,}</h3><ul>"
        )
        for seen in seen_list:
            f = seen.first
            where = shown(f.path or "") + (f":{f.line}" if f.line else "")
            if f.line and f.column:
                where += f":{f.column}"
            times = f" (×{seen.count:,} in {_n(seen.files, 'file')}; the first shown)"
            parts.append(
                f'<li class="finding" data-code="{_e(f.code)}" data-count="{seen.count}">'
                f'<span class="where mono">{_e(where)}</span> '
                f'<span class="message">{_e(f.message)}</span>'
                + (f'<br><span class="fix">fix: {_e(f.fix)}</span>' if f.fix else "")
                + (f'<br><span class="note">{_e(times)}</span>' if seen.count > 1 else "")
                + "</li>"
            )
        parts.append("</ul>")
    if s.unlisted:
        parts.append(f'<p class="note">(+{s.unlisted:,} findings with other texts)</p>')
    yield from _section("findings", f"Findings ({s.num_findings:,})", parts)
