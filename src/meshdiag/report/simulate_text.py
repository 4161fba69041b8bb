"""The simulate-copy picture: the mesh as a grid of device cells, the read-back, the findings.

Pure half: `cell_lines`, `readback_lines`, `grid_rows` turn a finished `CopySimulation` into
text (tested without a console). Rich half: `SimulationPicture` only draws them.
Meshes of rank > 2 flatten their leading axes into rows; meshes above `MAX_CELLS` devices are
drawn as a list of the first devices plus a count (`--format json` has every device).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from meshdiag.simulate.regions import region_text

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

    from meshdiag.model.copy import DeviceCopy
    from meshdiag.simulate.result import CopySimulation

MAX_CELLS = 64


def _shape(s) -> str:
    return "(" + ",".join(map(str, s)) + ")"


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    if x != x:
        return "NaN"
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:.6g}"


def cell_status(d: DeviceCopy) -> str:
    """`STALE`, `empty`, `mismatch` or `ok`."""
    if d.stale:
        return "STALE"
    if d.mismatched:
        return "mismatch"
    if d.written is None:
        return "empty"
    return "ok"


def cell_lines(d: DeviceCopy, shape: tuple[int, ...]) -> list[str]:
    coord = ",".join(map(str, d.coord))
    lines = [f"({coord}) dev {d.device}"]
    spec = "none" if d.dest_shape is None else _shape(d.dest_shape)
    if d.allocated != d.dest_shape:
        alloc = "none" if d.allocated is None else _shape(d.allocated)
        spec += f" (alloc {alloc})"
    lines.append(f"spec {spec}")
    status = cell_status(d)
    if d.written is not None:
        lines.append(f"wrote {region_text(d.written, shape)}")
        if d.first is not None:
            lines.append(f"{_num(d.first)}..{_num(d.last)} sum {_num(d.checksum)}")
        if status == "mismatch":
            lines.append("MISMATCH: spec ≠ shard")
    elif status == "STALE":
        lines.append("STALE: never written, read back")
    else:
        lines.append("empty")
    return lines


def grid_rows(sim: CopySimulation) -> tuple[list[str], list[list[DeviceCopy]]]:
    """Row labels and device cells, row-major over the mesh (leading axes flattened)."""
    shape = sim.mesh.shape or (1,)
    cols = shape[-1]
    by_pos = sorted(sim.devices, key=lambda d: d.position)
    rows = [by_pos[i : i + cols] for i in range(0, len(by_pos), cols)]
    labels = [",".join(map(str, r[0].coord[:-1])) or "0" for r in rows]
    return labels, rows


def readback_lines(sim: CopySimulation, limit: int = 12) -> list[str]:
    """Read-back shape against the source, and which pieces differ and where they came from."""
    rb = sim.readback
    out = [
        f"read-back ({rb.composer}): {_shape(rb.shape)}   source: {_shape(sim.shape)}   "
        + ("MATCHES the source" if rb.matches_source else "DIFFERS from the source")
    ]
    diff = rb.differing
    for p in diff[:limit]:
        where = region_text(p.region, rb.shape)
        if p.kind == "stale":
            why = f"came from device {p.device}'s stale buffer (never written)"
        elif p.kind == "reinterpreted":
            why = (
                f"came from device {p.device}'s buffer reinterpreted: it holds source "
                f"{region_text(p.source, sim.shape)} then stale memory"
                if p.source is not None
                else f"came from device {p.device}'s buffer"
            )
        else:
            src = region_text(p.source, sim.shape) if p.source is not None else "?"
            why = f"came from device {p.device}, which holds source {src} (misplaced)"
        out.append(f"  {where} {why}")
    if len(diff) > limit:
        out.append(f"  … {len(diff) - limit} more differing pieces")
    if rb.stale_devices:
        from meshdiag.notation.devicelist import compress_devices

        out.append(f"stale devices: {compress_devices(rb.stale_devices, max_chars=80)}")
    return out


def header_line(sim: CopySimulation) -> str:
    mode = "symbolic (ranges only)" if sim.symbolic else "data"
    return (
        f"simulate-copy on mesh {sim.mesh.shape_text()}: source {_shape(sim.shape)} float32 "
        f"arange | mapper {sim.mapper} | split {sim.split} | dest {sim.dest} | write {sim.write}"
        f" | ttnn era {sim.era} | stale fill {sim.stale_fill} | mode {mode}"
    )


_STYLE = {
    "STALE": "bold white on red",
    "mismatch": "bold black on yellow",
    "empty": "dim",
    "ok": "",
}


#: columns a grid cell needs to show its lines uncut
CELL_WIDTH = 17


class SimulationPicture:
    def __init__(self, sim: CopySimulation):
        self.sim = sim

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.table import Table
        from rich.text import Text

        from meshdiag.report.finding_text import brief

        sim = self.sim
        yield Text(header_line(sim), style="bold")
        labels, rows = grid_rows(sim) if len(sim.devices) <= MAX_CELLS else ([], [])
        # a grid cell needs about CELL_WIDTH columns to show its lines without cutting them
        if rows and len(rows[0]) * CELL_WIDTH + 8 <= options.max_width:
            table = Table(show_header=True, show_lines=True, title="devices (mesh coordinate, id)")
            table.add_column("row", style="dim")
            for j in range(len(rows[0])):
                table.add_column(str(j))
            for label, row in zip(labels, rows, strict=True):
                cells = [
                    Text("\n".join(cell_lines(d, sim.shape)), style=_STYLE[cell_status(d)])
                    for d in row
                ]
                table.add_row(label, *cells)
            yield table
        else:  # too many devices, or a grid wider than the terminal: one device per row
            shown = sim.devices if rows else sim.devices[:32]
            title = (
                "devices, one per row (the mesh grid is wider than the terminal)"
                if rows
                else f"first 32 of {len(sim.devices)} devices (--format json for all)"
            )
            table = Table(title=title)
            for col in ("device", "coord", "spec", "written"):
                table.add_column(col)
            for d in shown:
                lines = cell_lines(d, sim.shape)
                table.add_row(
                    str(d.device),
                    ",".join(map(str, d.coord)),
                    lines[1].removeprefix("spec "),
                    Text(" ".join(lines[2:]), style=_STYLE[cell_status(d)]),
                )
            yield table
        for i, line in enumerate(readback_lines(sim)):
            style = "" if i else ("bold green" if sim.readback.matches_source else "bold red")
            yield Text(line, style=style)
        if not sim.findings:
            yield Text("no findings", style="green")
        yield from map(brief, sim.findings)


def render_text(sim: CopySimulation, console: Console | None = None) -> None:
    from rich.console import Console

    (console or Console()).print(SimulationPicture(sim))
