"""Text output of `meshdiag inspect FILE`: per file a header, each module's summary (what
`pipeline/module_summary.py` computed: meshes as device grids, the distinct shardings with
counts, where they first appear and a small layout picture), then the findings.

Every part is a `Line` or a drawing with a plain form (`MeshGrid.plain`,
`LayoutPicture.plain`): to a colourless console (`report.plain_console`) their text is made
here and rich is not imported unless a part needs it (a line that is not printable, a
picture only rich lays out)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from meshdiag.memo import RunMemos
from meshdiag.pipeline.module_summary import FIRST_LOCATIONS
from meshdiag.report.finding_text import located_parts
from meshdiag.report.grid import LEGEND
from meshdiag.report.picture import LayoutPicture
from meshdiag.report.plain_console import printable_lines
from meshdiag.report.whole import NOT_WHOLE, whole_text

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

    from meshdiag.ir.model import MeshDecl
    from meshdiag.pipeline.inspect import Inspected
    from meshdiag.pipeline.module_summary import ModuleSummary, Picture

MAX_GRID = 64  # mesh grids larger than this are summarised in one line
#: said of a mesh whose device ids do not fit the console's width
TOO_WIDE = "(device grid wider than the console)"


def mesh_grid(d: MeshDecl):
    """A mesh as a small table of device ids (rows: first axis; columns: the rest), or its
    title alone for a mesh of more than MAX_GRID devices."""
    m = d.mesh
    title = f"@{d.name} = {m.short() if m else d.text}"
    if m is None or m.size > MAX_GRID or len(m.axes) == 0:
        return Line(title, check=True)
    return MeshGrid(title, m)


class MeshGrid:
    """A mesh's device ids as a table: rich's, or the same text drawn without rich
    (`plain`: a rich table took 2.6 ms to lay out, and a file of many meshes, or a run
    whose kept renderings turn over, draws them again and again)."""

    def __init__(self, title: str, m) -> None:
        self.title = title
        ids = m.ids
        rows = m.shape[0] if len(m.shape) > 1 else 1
        cols = m.size // rows
        named = len(m.axes) > 1
        rest = ",".join(m.names[1:]) if named else m.names[0]
        #: the header (shown when the mesh has two or more axes) and the rows, as text
        self.header = (m.names[0] if named else "",) + tuple(
            f"{rest}[{c}]" if cols <= 8 else str(c) for c in range(cols)
        )
        self.named = named
        self.rows = [
            (f"{m.names[0]}={r}" if named else "",)
            + tuple(str(ids[r * cols + c]) for c in range(cols))
            for r in range(rows)
        ]

    def __rich_console__(self, console, options):
        from rich.text import Text

        if self.cells_width() > options.max_width:  # (rich squeezed them to an empty line)
            yield Text(f"{self.title}  {TOO_WIDE}")
            return
        yield self._table()

    def cells_width(self) -> int:
        """How wide the device ids are drawn (rich narrows the header to fit, not them)."""
        return sum(max(map(len, column)) + 2 for column in zip(*self.rows, strict=True))

    def _table(self) -> Table:
        from rich.table import Table

        t = Table(title=self.title, title_justify="left", show_header=self.named, box=None)
        t.add_column(self.header[0], style="bold")
        for name in self.header[1:]:
            t.add_column(name, justify="right")
        for row in self.rows:
            t.add_row(*row)
        return t

    def plain(self, width: int) -> str | None:
        """What a colourless console `width` columns wide prints for the table (its title,
        then each row: cells as wide as their column's widest, the first left-justified,
        the others right, a space either side); a header wider than the console is
        narrowed as rich narrows it (`narrowed_widths`: a cell longer than its column is
        cut to its start and `…`). None where only rich draws it: a title wider than the
        console, a column narrowed to nothing, a cell rich would wrap or that is not
        ASCII."""
        shown = [self.header, *self.rows] if self.named else self.rows
        widths = [max(map(len, column)) for column in zip(*shown, strict=True)]
        if len(self.title) > width:
            return None
        if self.cells_width() > width:
            return f"{self.title}  {TOO_WIDE}\n"
        if sum(widths) + 2 * len(widths) > width:  # rich narrows the columns
            widths = [w - 2 for w in narrowed_widths([min(w + 2, width) for w in widths], width)]
            if min(widths) < 1 or not all(_narrowable(c) for row in shown for c in row):
                return None
            shown = [tuple(_cut(c, w) for c, w in zip(row, widths, strict=True)) for row in shown]
        lines = [self.title]
        for row in shown:
            cells = zip(row[1:], widths[1:], strict=True)
            lines.append(
                f" {row[0].ljust(widths[0])} " + "".join(f" {c.rjust(w)} " for c, w in cells)
            )
        return "\n".join(lines) + "\n"


def narrowed_widths(widths: list[int], max_width: int) -> list[int]:
    """The widths rich's `Table` draws columns of natural widths `widths` (padding
    included, every column free to shrink) at in `max_width`: the widest narrowed first,
    down to the next widest, until they fit (`Table._collapse_widths`; its last resort,
    narrowing every column evenly, is never reached when all of them may shrink)."""
    total = sum(widths)
    excess = total - max_width
    while total and excess > 0:
        widest = max(widths)
        step = widest - max([w for w in widths if w != widest], default=0)
        ratios = [1 if w == widest else 0 for w in widths]
        widths = _ratio_reduce(excess, ratios, [min(excess, step)] * len(widths), widths)
        total = sum(widths)
        excess = total - max_width
    return widths


def _ratio_reduce(
    total: int, ratios: list[int], maximums: list[int], values: list[int]
) -> list[int]:
    """`total` taken from `values` by `ratios`, at most `maximums` from each (rich's
    `ratio_reduce`, its rounding too)."""
    ratios = [r if m else 0 for r, m in zip(ratios, maximums, strict=True)]
    left, share = total, sum(ratios)
    if not share:
        return values[:]
    out = []
    for r, m, v in zip(ratios, maximums, values, strict=True):
        if r and share > 0:
            taken = min(m, round(r * left / share))
            out.append(v - taken)
            left -= taken
            share -= r
        else:
            out.append(v)
    return out


def _narrowable(cell: str) -> bool:
    """A cell rich cuts rather than wraps, one column a character."""
    return cell.isascii() and cell.isprintable() and " " not in cell


def _cut(cell: str, width: int) -> str:
    """A cell as rich draws it in a column `width` wide: cut to its start and `…` when
    longer."""
    return cell if len(cell) <= width else cell[: width - 1] + "…"


def module_lines(s: ModuleSummary) -> Iterator:
    """A module's summary as renderables: header, meshes, diagnostics, each distinct
    sharding with where it first appears and its picture."""
    extra = [s.dialect]
    if s.partitioned:
        extra.append("partitioned: per-device shapes")
    if s.num_partitions:
        extra.append(f"num_partitions={s.num_partitions}")
    head = s.name or "(anonymous module)"
    yield Line(("module ", "dim"), (head, "bold"), f"  line {s.line}  ({', '.join(extra)})")
    if s.section:
        yield Line(f"  section: {s.section}", style="cyan")
    for d in s.meshes:
        yield Cached(("mesh", d.name, d.text), mesh_grid, d)
    for dg in s.diagnostics:
        yield Line(f"  line {dg.line}: {dg.severity}: {dg.message}", style="red")
    yield Line(f"  {s.values} sharded values")
    for row in s.shardings:
        where = ", ".join([f"{name}@{ln}:{col}" for name, ln, col in row.firsts])
        more = f" (+{row.count - FIRST_LOCATIONS} more)" if row.count > FIRST_LOCATIONS else ""
        if row.gspmd is not None:
            yield Line(
                (f"  ×{row.count} ", "bold"),
                (row.text, "green"),
                f"  {where}{more}",
                (f"\n      = {row.gspmd}", "dim"),
            )
        else:
            yield Line((f"  ×{row.count} ", "bold"), (row.text, "green"), f"  {where}{more}")
        pic = row.picture
        if pic is not None:
            # the layout is asked for only when the picture was not drawn before
            yield Cached(("picture", *pic.key), _summary_picture, pic, plain=_summary_plain)


#: a summary's picture is a grid of at most this many cells (compact, no legend), else a
#: table
SUMMARY_CELLS = 32


def _summary_picture(pic: Picture) -> LayoutPicture:
    # (a picture with a `whole` is drawn from it: its layout is made only if need be)
    lay = (lambda: pic.layout) if pic.whole is not None else pic.layout
    return LayoutPicture(
        lay, pic.title, max_cells=SUMMARY_CELLS, compact=True, legend=False, whole=pic.whole
    )


def _summary_plain(pic: Picture, width: int) -> str | None:
    """`_summary_picture(pic).plain(width)`, drawn from the picture's tiling without a
    `LayoutPicture` where it can be (a big file's summaries draw ten thousand)."""
    if pic.whole is not None:
        got = whole_text(
            pic.whole, pic.title, width, max_cells=SUMMARY_CELLS, compact=True, legend=False
        )
        if got is not NOT_WHOLE:
            return got  # type: ignore[return-value]
    return _summary_picture(pic).plain(width)


class Line:
    """Text with styled parts, built cheaply: a colourless console gets its plain text
    without rich (a big dump has a header and sharding lines in every module), others the
    rich Text (`text()`). `check`: the text may hold what rich does not print as it is
    (a path, a message from the file): the plain text is used only when every line of it
    is printable, else rich draws it."""

    __slots__ = ("parts", "style", "check")

    def __init__(self, *parts: str | tuple[str, str], style: str = "", check: bool = False) -> None:
        self.parts = parts
        self.style = style
        self.check = check

    @property
    def plain(self) -> str:
        return "".join([p if p.__class__ is str else p[0] for p in self.parts])  # type: ignore[index]

    def text(self) -> Text:
        from rich.text import Text

        if len(self.parts) == 1 and self.parts[0].__class__ is str:
            return Text(self.parts[0], style=self.style)  # type: ignore[arg-type]
        return Text.assemble(*self.parts, style=self.style)

    def __rich__(self) -> Text:
        return self.text()


class Cached:
    """A renderable made by `make(*args, **kw)`, with a key: equal keys render to equal
    text, so `render_file` makes and renders it once per console and memos (pass dumps
    repeat the same meshes and layouts in every file)."""

    def __init__(self, key: tuple, make, *args, plain=None, **kw) -> None:
        self.key = key
        self._make = (make, args, kw)
        #: `plain(*args, width)`: what `plain_text` draws, without making the renderable
        self._plain = plain

    @property
    def renderable(self):
        make, args, kw = self._make
        return make(*args, **kw)

    def plain_text(self, width: int) -> str | None:
        """What a colourless console `width` wide prints for the renderable, drawn without
        rich where it can be (`plain`, or the renderable's own `plain`); None where only
        rich draws it."""
        if self._plain is not None:
            return self._plain(*self._make[1], width)
        return _plain_drawing(self.renderable, width)

    def __rich_console__(self, console, options):
        yield self.renderable


def _file_head(
    item: Inspected,
    count: int | None = None,
    values: bool | None = None,
    memos: RunMemos | None = None,
) -> Line:
    """The file's header line; `count` is its number of modules and `values` whether any
    holds a sharded value, when the report does not hold them (a file scanned module by
    module)."""
    r = item.report
    from meshdiag.ir.devices import ids_label_for

    n = len(r.modules) if count is None else count
    # (the whole line in bold underline, the id space and the key dim as well)
    parts: list[str | tuple[str, str]] = [f"{r.path}: {n} module(s)"]
    if n:  # the id space every mesh and layout below is shown in
        parts.append((f"\n{ids_label_for(r.path, memos)}", "dim"))
    if values is None:
        values = any(m.values for m in r.modules)
    if values:  # the pictures' key, once for the file
        parts.append((f"\n{LEGEND}", "dim"))
    return Line(*parts, style="bold underline", check=True)


def _file_tail(item: Inspected) -> list:
    if not item.findings:
        return []
    return [
        Line(f"{len(item.findings)} finding(s):", style="bold"),
        *(Line(*located_parts(f), check=True) for f in item.findings),
    ]


def render_file(
    item: Inspected, shown: list[ModuleSummary], console, memos: RunMemos | None = None
) -> str:
    """What printing the file's header, its modules' summaries (`shown`, in order) and its
    findings, then a blank line, writes to `console`; repeated parts (meshes, pictures, one-line
    texts) are rendered once per `memos` and reused. `console` must write to a buffer of
    its own."""
    memos = memos if memos is not None else RunMemos()
    out = [render_head(item, console, memos=memos)]
    out.extend(render_module(s, console, memos) for s in shown)
    out.append(render_tail(item, console, memos))
    return "".join(out)


def render_head(
    item: Inspected,
    console,
    count: int | None = None,
    values: bool | None = None,
    memos: RunMemos | None = None,
) -> str:
    """`render_file`'s first part: the header (`count` modules and whether any has sharded
    `values`, when the report does not hold them). `render_file` is this, `render_module`
    of each module, `render_tail`."""
    return render_part(_file_head(item, count, values, memos), console, memos)


def render_module(s: ModuleSummary, console, memos: RunMemos | None = None) -> str:
    """One module's summary as `render_file` prints it."""
    if _plain(console):
        # its lines as `render_part` gives them, without its calls for each (a big file's
        # summaries have tens of thousands): plain lines' text, drawings kept by key
        table = _rendered(memos) if memos is not None else None
        out = []
        for p in module_lines(s):
            if p.__class__ is Line and not p.check:
                out.append(p.plain + "\n")
            elif p.__class__ is Cached and table is not None:
                out.append(_kept(table, console, p.key, _plain_drawn, p, console))
            else:
                out.append(render_part(p, console, memos))
        return "".join(out)
    return "".join(render_part(p, console, memos) for p in module_lines(s))


def render_tail(item: Inspected, console, memos: RunMemos | None = None) -> str:
    """`render_file`'s last part: the findings and the empty line."""
    return "".join(render_part(p, console, memos) for p in _file_tail(item)) + "\n"


def render_part(part, console, memos: RunMemos | None) -> str:
    """One renderable as `console` prints it: a piped colourless console's lines are their
    plain text (rich's soft wrap keeps them whole), others are rich's rendering (kept in
    `memos` by key for repeated parts: the console is part of the key)."""
    plain = _plain(console)
    if plain:
        # piped: lines stay whole (rich's soft wrap), so plain text is the line itself
        if part.__class__ is Line:
            text = _plain_line(part)  # type: ignore[arg-type]
            if text is not None:
                return text
        elif part.__class__ is Cached:
            return _plain_cached(part, console, memos)  # type: ignore[arg-type]
        elif _is_text(part) and part.end == "\n":
            text = part.plain
            if printable_lines(text):
                return text + "\n"
    if part.__class__ is Line:
        part = part.text()
    if isinstance(part, Cached):
        key = part.key
    elif _is_text(part) and part.end == "\n":
        key = ("text", part.plain, str(part.style), tuple(part.spans), part.justify)
    else:
        key = None

    def draw() -> str:
        # (a `Cached` part's renderable made only now: it was not rendered before)
        drawn = part.renderable if isinstance(part, Cached) else part
        text = _plain_drawing(drawn, console.width) if plain else None
        return _captured(drawn, console) if text is None else text

    return _remembered(key, draw, console, memos)


def _remembered(key, draw: Callable[[], str], console, memos: RunMemos | None) -> str:
    """`draw()`, kept in `memos` by console and `key` (repeated parts are drawn once per
    console; a `key` of None is not kept)."""
    if memos is None or key is None:
        return draw()
    return _kept(_rendered(memos), console, key, draw)


def _kept(table, console, key, draw: Callable[..., str], *args) -> str:
    """`draw(*args)`, kept in the run's renderings `table` (`_rendered`) by console and
    `key`."""
    key = (console, key)
    hit = table.get(key)
    return table.put(key, draw(*args)) if hit is None else hit


def _captured(renderable, console) -> str:
    """What rich prints of `renderable` on `console`."""
    with console.capture() as cap:
        console.print(renderable)
    return cap.get()


def _plain_drawing(part, width: int) -> str | None:
    """The plain text of a drawing with one (`LayoutPicture.plain`, `MeshGrid.plain`), or
    of a line (a mesh too big for a grid: its title); None for anything else."""
    if part.__class__ in (LayoutPicture, MeshGrid):
        return part.plain(width)  # the same text, drawn without rich's tables
    if part.__class__ is Line:
        return _plain_line(part)
    return None


def _rendered(memos: RunMemos):
    """The run's renderings kept by console and key (`_remembered`)."""
    return memos.table("file_text.rendered", 4096)


def _plain_cached(part: Cached, console, memos: RunMemos | None) -> str:
    """`render_part` of a `Cached` part to a colourless pipe: its plain text
    (`Cached.plain_text`), kept in `memos` by console and key as rich's would be; rich's
    where there is none."""
    if memos is None:
        return _plain_drawn(part, console)
    return _kept(_rendered(memos), console, part.key, _plain_drawn, part, console)


def _plain_drawn(part: Cached, console) -> str:
    text = part.plain_text(console.width)
    return _captured(part.renderable, console) if text is None else text


def _plain(console) -> bool:
    """Whether `console` is a colourless pipe: its lines are their plain text (rich's soft
    wrap keeps them whole)."""
    return console.color_system is None and console.soft_wrap


def _plain_line(line: Line) -> str | None:
    """What a colourless console with soft wrap prints for `line`: its text, unless it is
    checked and some line of it is not printable (None: rich draws it)."""
    text = line.plain
    if line.check and not printable_lines(text):
        return None
    return text + "\n"


def _is_text(part) -> bool:
    """Whether `part` is a rich `Text` (never, while rich is not loaded)."""
    text = sys.modules.get("rich.text")
    return text is not None and isinstance(part, text.Text)
