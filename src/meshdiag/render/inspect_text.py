"""Text output of `meshdiag inspect`: per file and module a short summary — meshes as device
grids, the distinct shardings with counts, where they first appear and a small layout picture,
then the findings."""

from __future__ import annotations

from collections.abc import Iterator
from heapq import merge
from itertools import islice, repeat
from operator import itemgetter
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from ..findings import Finding
    from ..inspect import Inspected
    from ..ir.model import MeshDecl, ModuleReport, ValueGroup
    from ..mesh import Mesh

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
        t.add_column(f"{rest}[{c}]" if cols <= 16 else str(c), justify="right")
    for r in range(rows):
        label = f"{m.names[0]}={r}" if len(m.axes) > 1 else ""
        t.add_row(label, *(str(ids[r * cols + c]) for c in range(cols)))
    return t


def module_summary(m: ModuleReport, *, mesh: Mesh | None, split: str) -> Iterator:
    from ..inspect import gspmd_text, value_layout

    head = m.name or "(anonymous module)"
    extra = [m.dialect]
    if m.partitioned:
        extra.append("partitioned: per-device shapes")
    if m.num_partitions:
        extra.append(f"num_partitions={m.num_partitions}")
    yield Text.assemble(
        ("module ", "dim"), (head, "bold"), f"  line {m.line}  ({', '.join(extra)})"
    )
    if m.section:
        yield Text(f"  section: {m.section}", style="cyan")
    for d in m.meshes:
        yield Cached(("mesh", d.name, d.text), mesh_grid(d))
    for dg in m.diagnostics:
        yield Text(f"  line {dg.line}: {dg.severity}: {dg.message}", style="red")
    yield Text(f"  {m.value_count} sharded values")
    by_text: dict[str, list[ValueGroup]] = {}
    for vg in m.value_groups():
        by_text.setdefault(vg.value.text, []).append(vg)
    pictures = 0
    for text, vgs in by_text.items():
        count = sum(vg.count for vg in vgs)
        # the first occurrences in file order, across the values with this text
        firsts = islice(
            merge(*(zip(vg.lines, repeat(vg.value)) for vg in vgs), key=_first), FIRST_LOCATIONS
        )
        where = ", ".join(f"{v.name}@{ln}:{v.column}" for ln, v in firsts)
        more = f" (+{count - FIRST_LOCATIONS} more)" if count > FIRST_LOCATIONS else ""
        vals = [vg.value for vg in vgs]
        first = vals[0]
        g = gspmd_text(first)
        line = Text.assemble((f"  ×{count} ", "bold"), (text, "green"), f"  {where}{more}")
        if g and g != text:
            line.append(f"\n      = {g}", style="dim")
        yield line
        if pictures < MAX_PICTURES:
            found = next(
                ((v, lay) for v in vals if (lay := value_layout(v, m, mesh, split)) is not None),
                None,
            )
            if found is not None:
                from ..inspect import num_devices
                from .grid import LayoutPicture

                v, lay = found
                pictures += 1
                # the picture is a function of what the layout was computed from
                key = ("picture", v.hlo, v.shape, num_devices(v, m, mesh), split, g or text)
                yield Cached(key, LayoutPicture(lay, g or text, max_cells=32, compact=True))


class Cached:
    """A renderable with a key: equal keys render to equal text, so `render_file` renders
    it once per console (pass dumps repeat the same meshes and layouts in every file)."""

    def __init__(self, key: tuple, renderable) -> None:
        self.key = key
        self.renderable = renderable

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


def file_parts(item: Inspected, *, mesh: Mesh | None, split: str) -> list:
    r = item.report
    parts: list = [Text(f"{r.path}: {len(r.modules)} module(s)", style="bold underline")]
    for m in r.modules:
        parts.extend(module_summary(m, mesh=mesh, split=split))
    if item.findings:
        parts.append(Text(f"{len(item.findings)} finding(s):", style="bold"))
        parts.extend(finding_lines(item.findings))
    return parts


#: rendered text by key, for one console (`render_file`)
_RENDERED: dict = {}
_RENDERED_FOR: list = [None]


def render_file(item: Inspected, console, *, mesh: Mesh | None, split: str) -> str:
    """What printing `file_parts(...)` one after the other, then a blank line, writes to
    `console`; repeated parts (meshes, pictures, one-line texts) are rendered once and
    reused. `console` must write to a buffer of its own."""
    if _RENDERED_FOR[0] is not console:
        _RENDERED.clear()
        _RENDERED_FOR[0] = console
    cache = _RENDERED
    out = []
    for part in file_parts(item, mesh=mesh, split=split):
        if isinstance(part, Cached):
            key = part.key
            part = part.renderable
        elif isinstance(part, Text) and part.end == "\n":
            key = ("text", part.plain, str(part.style), tuple(part.spans), part.justify)
        else:
            key = None
        hit = cache.get(key) if key is not None else None
        if hit is None:
            with console.capture() as cap:
                console.print(part)
            hit = cap.get()
            if key is not None:
                if len(cache) >= 4096:
                    cache.clear()
                cache[key] = hit
        out.append(hit)
    with console.capture() as cap:
        console.print()
    out.append(cap.get())
    return "".join(out)
