"""Text output of `meshdiag inspect`: per file and module a short summary — meshes as device
grids, the distinct shardings with counts, where they first appear and a small layout picture,
then the findings."""

from __future__ import annotations

from collections.abc import Iterator
from operator import itemgetter
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from meshdiag.pipeline.contentmemo import MAX_ENTRIES, ContentMemo
from meshdiag.pipeline.inspect import gspmd_text, num_devices, own_text, value_layout
from meshdiag.report.grid import LEGEND, LayoutPicture

if TYPE_CHECKING:
    from meshdiag.ir.model import MeshDecl, ModuleReport
    from meshdiag.model.findings import Finding
    from meshdiag.model.mesh import Mesh
    from meshdiag.pipeline.inspect import Inspected

#: locations listed per distinct sharding; pictures drawn per module
FIRST_LOCATIONS = 3
MAX_PICTURES = 8
MAX_GRID = 64  # mesh grids larger than this are summarised in one line

_first = itemgetter(0)


def mesh_grid(d: MeshDecl):
    """A mesh as a small table of device ids (rows: first axis; columns: the rest)."""
    m = d.mesh
    title = f"@{d.name} = {m.short() if m else d.text}"
    if m is None or m.size > MAX_GRID or len(m.axes) == 0:
        return Text(title)
    ids = m.ids
    rows = m.shape[0] if len(m.shape) > 1 else 1
    cols = m.size // rows
    t = Table(title=title, title_justify="left", show_header=len(m.axes) > 1, box=None)
    t.add_column(m.names[0] if len(m.axes) > 1 else "", style="bold")
    rest = ",".join(m.names[1:]) if len(m.axes) > 1 else m.names[0]
    for c in range(cols):
        t.add_column(f"{rest}[{c}]" if cols <= 8 else str(c), justify="right")
    for r in range(rows):
        label = f"{m.names[0]}={r}" if len(m.axes) > 1 else ""
        t.add_row(label, *(str(ids[r * cols + c]) for c in range(cols)))
    return t


def module_summary(m: ModuleReport, *, mesh: Mesh | None, split: str) -> Iterator:
    head = m.name or "(anonymous module)"
    extra = [m.dialect]
    if m.partitioned:
        extra.append("partitioned: per-device shapes")
    if m.num_partitions:
        extra.append(f"num_partitions={m.num_partitions}")
    yield Line(("module ", "dim"), (head, "bold"), f"  line {m.line}  ({', '.join(extra)})")
    if m.section:
        yield Line(f"  section: {m.section}", style="cyan")
    for d in m.meshes:
        yield Cached(("mesh", d.name, d.text), mesh_grid, d)
    for dg in m.diagnostics:
        yield Line(f"  line {dg.line}: {dg.severity}: {dg.message}", style="red")
    by_text = _by_text(m)
    yield Line(f"  {sum(e[0] for e in by_text.values())} sharded values")
    pictures = 0
    for text, (count, firsts, distinct) in by_text.items():
        where = ", ".join(f"{name}@{ln}:{col}" for name, ln, col in firsts)
        more = f" (+{count - FIRST_LOCATIONS} more)" if count > FIRST_LOCATIONS else ""
        vals = list(distinct.values())
        first = vals[0]
        g = gspmd_text(first)
        if g and g != text:
            yield Line(
                (f"  ×{count} ", "bold"),
                (text, "green"),
                f"  {where}{more}",
                (f"\n      = {g}", "dim"),
            )
        else:
            yield Line((f"  ×{count} ", "bold"), (text, "green"), f"  {where}{more}")
        if pictures < MAX_PICTURES:
            found = next(
                (
                    found
                    for v in vals
                    if v.shape is not None  # no picture without a global shape
                    and v.hlo is not None
                    and (found := _layout(v, m, mesh, split))[2] is not None
                ),
                None,
            )
            if found is not None:
                v, n, lay = found
                pictures += 1
                # the picture is a function of what the layout was computed from
                key = ("picture", v.hlo, v.shape, n, split, g or text)
                yield Cached(
                    key, LayoutPicture, lay, g or text, max_cells=32, compact=True, legend=False
                )


#: layouts by (sharding identity, shape, device count, split): (sharding, layout or None)
_LAYOUTS: dict[tuple, tuple[object, object]] = {}
#: devices the layouts in _LAYOUTS hold
_LAYOUT_DEVICES = [0]


def _layout(v, m: ModuleReport, mesh: Mesh | None, split: str) -> tuple:
    """(v, its device count, its layout or None), memoised: every module of a pass dump asks
    for the same few."""
    n = num_devices(v, m, mesh)
    key = (id(v.hlo), v.shape, n, split)
    hit = _LAYOUTS.get(key)
    if hit is None or hit[0] is not v.hlo:
        lay = value_layout(v, m, mesh, split)
        devices = lay.num_devices if lay is not None else 1
        # bounded by entries and by devices: million-device layouts are ~70 MB each
        if len(_LAYOUTS) >= 8192 or _LAYOUT_DEVICES[0] + devices > 1 << 20:
            _LAYOUTS.clear()
            _LAYOUT_DEVICES[0] = 0
        hit = _LAYOUTS[key] = (v.hlo, lay)
        _LAYOUT_DEVICES[0] += devices
    return v, n, hit[1]


def _by_text(m: ModuleReport) -> dict[str, tuple[int, list, dict]]:
    """Per distinct sharding text, in order of first use: how many values have it, the first
    FIRST_LOCATIONS as (name, line, column), and its distinct values (as the module holds
    them) by identity."""
    lines = m.lines
    return {
        text: (count, [(name, lines[i], col) for name, i, col in firsts], distinct)
        for text, (count, firsts, distinct) in _text_groups(m).items()
    }


def _text_groups(m: ModuleReport) -> dict[str, list]:
    """`_by_text` with row positions instead of line numbers, memoised by the module's
    column entries: a real pass dump repeats most modules' annotated lines exactly (in one
    every-pass XLA dump of a sharded MLP, 27 of 36 modules)."""
    items, ids = m.entries()
    key = (ids, m.partitioned)
    hit = _GROUPS.get(key)
    if hit is not None:
        return hit[1]
    part = m.partitioned
    by_text: dict[str, list] = {}
    get = by_text.get
    rows_get = _ROWS.get
    for i, item in enumerate(items):
        hit = rows_get(id(item))
        if hit is None or hit[0] is not item or hit[1] is not part:
            hit = _rows(item, part)
        for text, name, col, v in hit[2]:
            e = get(text)
            if e is None:
                by_text[text] = [1, [(name, i, col)], {id(v): v}]
            else:
                e[0] += 1
                if e[0] <= FIRST_LOCATIONS:
                    e[1].append((name, i, col))
                e[2][id(v)] = v
    _GROUPS.put(key, len(items), (items, by_text))  # holds the items: ids stay theirs
    return by_text


_GROUPS = ContentMemo()


#: a column entry's values as (text, name, column, value as the module holds it), by the
#: entry's identity: (entry, partitioned, rows); entries hold their item, so ids stay unique
_ROWS: dict[int, tuple[object, bool, tuple]] = {}


def _rows(item, part: bool) -> tuple[object, bool, tuple]:
    from meshdiag.ir.model import Value, per_device

    if item.__class__ is Value:  # a one-off value: not kept
        return (item, part, ((own_text(item), item.name, item.column, item),))
    # each value under its own sharding: a tuple element's, not the whole tuple's
    rows = tuple(
        (own_text(p), p.name, p.column, per_device(p) if part else p)
        for p in item.protos  # type: ignore[attr-defined]
    )
    if len(_ROWS) >= MAX_ENTRIES:
        _ROWS.clear()
    hit = _ROWS[id(item)] = (item, part, rows)
    return hit


class Line:
    """Text with styled parts, built cheaply: a colourless console gets its plain text
    without rich (a big dump has a header and sharding lines in every module), others the
    rich Text (`text()`)."""

    __slots__ = ("parts", "style")

    def __init__(self, *parts: str | tuple[str, str], style: str = "") -> None:
        self.parts = parts
        self.style = style

    @property
    def plain(self) -> str:
        return "".join(p if p.__class__ is str else p[0] for p in self.parts)  # type: ignore[index]

    def text(self) -> Text:
        if len(self.parts) == 1 and self.parts[0].__class__ is str:
            return Text(self.parts[0], style=self.style)  # type: ignore[arg-type]
        return Text.assemble(*self.parts, style=self.style)

    def __rich__(self) -> Text:
        return self.text()


class Cached:
    """A renderable made by `make(*args, **kw)`, with a key: equal keys render to equal
    text, so `render_file` makes and renders it once per console (pass dumps repeat the same
    meshes and layouts in every file)."""

    def __init__(self, key: tuple, make, *args, **kw) -> None:
        self.key = key
        self._make = (make, args, kw)

    @property
    def renderable(self):
        make, args, kw = self._make
        return make(*args, **kw)

    def __rich_console__(self, console, options):
        yield self.renderable


def finding_lines(findings: list[Finding]) -> Iterator:
    style = {"error": "bold red", "warning": "yellow", "info": "blue"}
    for f in findings:
        loc = f"{f.path}:{f.line or 0}:{f.column or 0}"
        t = Text.assemble(
            (loc, "bold"), " ", (f.code, style.get(f.severity, "")), f" [{f.severity}] {f.message}"
        )
        if f.fix:
            t.append(f"\n    fix: {f.fix}", style="green")
        yield t


def _file_head(item: Inspected, count: int | None = None, values: bool | None = None) -> Text:
    """The file's header line; `count` is its number of modules and `values` whether any
    holds a sharded value, when the report does not hold them (a file scanned module by
    module)."""
    r = item.report
    from meshdiag.ir.devices import assignment_for, ids_label

    n = len(r.modules) if count is None else count
    head = Text(f"{r.path}: {n} module(s)", style="bold underline")
    if n:  # the id space every mesh and layout below is shown in
        head.append(f"\n{ids_label(assignment_for(r.path))}", style="dim")
    if values is None:
        values = any(m.values for m in r.modules)
    if values:  # the pictures' key, once for the file
        head.append(f"\n{LEGEND}", style="dim")
    return head


def _file_tail(item: Inspected) -> list:
    if not item.findings:
        return []
    return [Text(f"{len(item.findings)} finding(s):", style="bold"), *finding_lines(item.findings)]


#: rendered text by key, for one console (`render_file`)
_RENDERED: dict = {}
_RENDERED_FOR: list = [None]


def render_file(item: Inspected, console, *, mesh: Mesh | None, split: str) -> str:
    """What printing the file's header, its modules' summaries and its findings, then a
    blank line, writes to `console`; repeated parts (meshes, pictures, one-line texts) are rendered once and
    reused, and so are whole module summaries seen before (the same annotated lines at the
    same places: pass dumps print a module again and again). `console` must write to a
    buffer of its own."""
    out = [render_head(item, console)]
    out.extend(render_module(m, console, mesh=mesh, split=split) for m in item.report.modules)
    out.append(render_tail(item, console))
    return "".join(out)


def render_head(
    item: Inspected, console, count: int | None = None, values: bool | None = None
) -> str:
    """`render_file`'s first part: the header (`count` modules and whether any has sharded
    `values`, when the report does not hold them). `render_file` is this, `render_module`
    of each module, `render_tail`."""
    _use(console)
    return _render(_file_head(item, count, values), console)


def render_module(m: ModuleReport, console, *, mesh: Mesh | None, split: str) -> str:
    """One module's summary as `render_file` prints it."""
    _use(console)
    groups, key = _summary_key(m, mesh, split)
    hit = _MODULES.get(key)
    if hit is None or hit[0] is not groups:
        text = "".join(_render(p, console) for p in module_summary(m, mesh=mesh, split=split))
        # holds the groups (and so every value of the module): their id stays theirs
        rows = len(m.items) + len(key[1]) + len(text) // 64
        hit = _MODULES.put(key, rows, (groups, text))
    return hit[1]


def render_tail(item: Inspected, console) -> str:
    """`render_file`'s last part: the findings and the empty line."""
    _use(console)
    return "".join(_render(p, console) for p in _file_tail(item)) + "\n"


def _use(console) -> None:
    """The memos below hold what one console rendered: start over for another."""
    if _RENDERED_FOR[0] is not console:
        _RENDERED.clear()
        _MODULES.clear()
        _RENDERED_FOR[0] = console


#: rendered module summaries by `_summary_key`: (the module's text groups, the text)
_MODULES = ContentMemo()


def _summary_key(m: ModuleReport, mesh: Mesh | None, split: str) -> tuple[dict, tuple]:
    """(the module's text groups, a key of everything its summary shows): the groups (by
    identity: modules with the same annotated lines share them) and the lines they point
    at, its header, meshes, diagnostics."""
    groups = _text_groups(m)
    lines = m.lines
    where = tuple(lines[i] for e in groups.values() for _, i, _ in e[1])
    return groups, (
        id(groups),
        where,
        m.name,
        m.line,
        m.section,
        m.dialect,
        m.partitioned,
        m.num_partitions,
        tuple((d.name, d.text) for d in m.meshes),
        tuple((d.line, d.severity, d.message) for d in m.diagnostics),
        mesh,
        split,
    )


def _render(part, console) -> str:
    """One renderable as `console` prints it: a piped colourless console's lines are their
    plain text (rich's soft wrap keeps them whole), others are rich's rendering (cached by
    key for repeated parts)."""
    plain_ok = console.color_system is None
    if plain_ok and console.soft_wrap and part.__class__ in (Line, Text):
        # piped: lines stay whole (rich's soft wrap), so plain text is the line itself
        plain = part.plain  # type: ignore[union-attr]
        if part.__class__ is Line or (
            part.end == "\n"  # type: ignore[union-attr]
            and all(ln.isprintable() for ln in plain.split("\n"))
        ):
            return plain + "\n"
    if part.__class__ is Line:
        part = part.text()
    if isinstance(part, Cached):
        key = part.key
    elif isinstance(part, Text) and part.end == "\n":
        key = ("text", part.plain, str(part.style), tuple(part.spans), part.justify)
    else:
        key = None
    hit = _RENDERED.get(key) if key is not None else None
    if hit is None:
        if isinstance(part, Cached):  # made only now: it was not rendered before
            part = part.renderable
        with console.capture() as cap:
            console.print(part)
        hit = cap.get()
        if key is not None:
            if len(_RENDERED) >= 4096:
                _RENDERED.clear()
            _RENDERED[key] = hit
    return hit
