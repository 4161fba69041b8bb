"""`meshdiag comms` as text: per module a table of its collectives (largest per-device
traffic first), its totals per op_name, then the findings. Plain aligned columns; nothing
is computed here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from meshdiag.comms.axes import refs_text
from meshdiag.notation.byte_size import human_bytes
from meshdiag.report.finding_text import located

if TYPE_CHECKING:
    from collections.abc import Callable

    from meshdiag.comms.report import FileComms, ModuleComms, Row
    from meshdiag.model.findings import Finding


def groups_text(r: Row, times: str = "x") -> str:
    """How a collective's devices are grouped: `4x2 mesh` (4 groups of 2, the form its
    replica_groups were written in), `8 pairs, 6 moving`, `-`."""
    c = r.collective
    if c.pairs is not None:
        moving = sum(1 for s, t in c.pairs if s != t)
        return f"{len(c.pairs)} pairs, {moving} moving"
    if r.groups is None:
        return "-"
    form = c.groups.form if c.groups is not None else ("axes" if c.dialect == "sdy" else "all")
    return f"{len(r.groups)}{times}{r.group_size} {form}"


def axes_text(r: Row) -> str:
    """The mesh (sub-)axes a collective's groups run over, `NONE of the mesh`, or `-`."""
    if r.off_mesh:
        return "NONE of the mesh"
    if r.axes is None:
        return "-"
    text = refs_text(r.axes)
    return text if r.mesh_source != "collective" else f"{text} (own mesh)"


def _shape(r: Row) -> str:
    c = r.collective
    if not c.results:
        return "-"
    s, d = c.results[0]
    dims = "?" if s is None else ",".join(map(str, s))
    more = f" +{len(c.results) - 1}" if len(c.results) > 1 else ""
    return f"{d}[{dims}]{more}"


def _count(n: int) -> str:
    return f"{n} collective" + ("" if n == 1 else "s")


def _cut(s: str, width: int) -> str:
    return s if len(s) <= width else s[: width - 1] + "…"


def _table(rows: list[tuple[str, ...]], right: set[int]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [
            cell.rjust(w) if i in right else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        out.append("  " + "  ".join(cells).rstrip())
    return out


def module_lines(mc: ModuleComms) -> list[str]:
    m = mc.module
    where = f"{m.dialect}" + (f", {m.num_partitions} partitions" if m.num_partitions else "")
    head = f"module {m.name or '(unnamed)'}  line {m.line}  ({where})"
    lines = [head]
    if m.section:
        lines.append(f"  section: {m.section}")
    if mc.mesh_note:
        lines.append(f"  note: {mc.mesh_note}")
    rows = [("PER DEVICE", "KIND", "OP", "SHAPE", "GROUPS", "AXES", "OP_NAME", "LINE")]
    for r in mc.rows:
        c = r.collective
        per = human_bytes(r.traffic.per_device if r.traffic else None)
        if not r.exact:
            per = "≤" + per
        rows.append(
            (
                per,
                c.kind,
                c.op.removeprefix("sdy.") if c.dialect == "sdy" else c.op,
                _cut(_shape(r), 22),
                groups_text(r),
                _cut(axes_text(r), 24),
                _cut(c.op_name or "-", 36),
                str(c.line),
            )
        )
    lines += _table(rows, {0, 7})
    lines.append(
        f"  {_count(len(mc.rows))}: {human_bytes(mc.per_device)} per device, "
        f"{human_bytes(mc.total)} over all devices"
    )
    ops = mc.by_op_name()
    if len(ops) > 1 or (ops and ops[0][0] != "(no op_name)"):
        lines.append("  by op_name:")
        lines += _table(
            [("PER DEVICE", "COUNT", "OP_NAME")] + [(human_bytes(b), str(n), k) for k, n, b in ops],
            {0, 1},
        )
    return lines


class TextWriter:
    """The text report written a file at a time (`file`: its modules' tables, then `end`:
    the totals and the findings): a run keeps no file's collectives once written."""

    def __init__(self, write: Callable[[str], object]) -> None:
        self.write = write
        self.modules = self.count = self.per_device = 0

    def file(self, f: FileComms) -> None:
        if not f.modules:
            return
        out = [f.path]
        for mc in f.modules:
            out += module_lines(mc)
            self.modules += 1
            self.count += len(mc.rows)
            self.per_device += mc.per_device
        out.append("")
        self.write("\n".join(out) + "\n")

    def end(self, findings: list[Finding]) -> None:
        if not self.count:
            out = ["no collectives found"]
        else:
            per = human_bytes(self.per_device)
            out = [f"{_count(self.count)} in {self.modules} module(s): {per} per device"]
        out.extend(located(fd).plain for fd in findings)
        self.write("\n".join(out) + "\n")
