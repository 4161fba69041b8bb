"""MD203 off-mesh-replica-groups: a collective's device groups are no axes of the global mesh."""

from __future__ import annotations

from typing import TYPE_CHECKING

from meshdiag.checks.common import module_label, where
from meshdiag.checks.rule import Rule
from meshdiag.comms.axes import refs_text
from meshdiag.comms.groups import mesh_groups
from meshdiag.model.sharding import AxisRef

if TYPE_CHECKING:
    from meshdiag.checks.context import CheckContext
    from meshdiag.comms.report import ModuleComms, Row
    from meshdiag.model.findings import Finding
    from meshdiag.model.mesh import Mesh

RULE = Rule(
    code="MD203",
    name="off-mesh-replica-groups",
    severity="error",
    summary="a collective's replica groups are not the groups of any (sub-)axes of the global mesh",
    what="Decodes each collective's `replica_groups` (explicit `{{0,1},{2,3}}`, iota "
    "`[2,4]<=[4,2]T(1,0)` or mesh form `mesh['x'=2,'y'=4] {'y'}`) and compares the groups, "
    "as sets of devices, with the groups every set of axes and sub-axes of the global mesh "
    "(`--mesh`) gives: devices that differ only in their coordinates along those axes. It "
    "fires when none matches. Needs a global mesh with the module's device count.",
    why="On a mesh, every collective a sharded program needs runs along mesh axes. Groups that "
    "no axis gives mean the program was partitioned for another mesh or device order than the "
    "one it will run on (as in a distorted mesh), or that hand-written groups mix devices "
    "across axes: the collective then talks to devices that hold unrelated shards, or to "
    "far-away chips on a torus or ring.",
    fix="Partition the program on the global mesh, or pick groups along its axes; the finding "
    "lists the axes of the same group size and their groups.",
    example="--mesh batch=2,model=4; all-reduce replica_groups={{0,3},{1,2},{4,7},{5,6}}\n"
    "  → MD203: no axes of <batch=2,model=4> give these groups\n"
    "Use instead:\n"
    "replica_groups={{0,4},{1,5},{2,6},{3,7}}  (batch), or {{0,2},{1,3},{4,6},{5,7}} "
    "(model:(2)2)",
)


def judges(ctx: CheckContext) -> bool:
    """Which collectives `check` reads under these settings (see `checks.registry`): every
    one when there is a global mesh (only it makes a row's `mesh_source` "global"), else
    none."""
    return ctx.mesh is not None


def check(mc: ModuleComms, ctx: CheckContext) -> list[Finding]:
    out = []
    for r in mc.rows:
        if not r.off_mesh or r.mesh_source != "global" or r.mesh is None:
            continue
        c = r.collective
        shown = _groups_text(r.groups or ())
        out.append(
            RULE.finding(
                f"{c.name} in {module_label(mc.module)} ({c.kind}) runs in the groups {shown}, "
                f"which no axes of the global mesh <{r.mesh.short()}> give.",
                _fix(r, r.mesh),
                **where(ctx, mc.module, c.line, c.column),  # type: ignore[arg-type]
            )
        )
    return out


def _groups_text(groups, limit: int = 4) -> str:
    shown = ",".join("{" + ",".join(map(str, g)) + "}" for g in groups[:limit])
    return shown + (",..." if len(groups) > limit else "")


def _fix(r: Row, mesh: Mesh) -> str:
    """The single axes and sub-axes with groups of the same size, with their groups."""

    n = r.group_size or 0
    options = []
    for name, size in mesh.axes:
        for pre in range(1, size + 1):
            if n > 1 and size % (pre * n) == 0:
                ref = AxisRef(name) if (pre, n) == (1, size) else AxisRef(name, pre, n)
                rows = mesh_groups(mesh, (ref,))
                options.append(f"{refs_text((ref,))} gives {_groups_text(rows, 2)}")
    if not options:
        return "partition the program on the global mesh, or use groups along its axes"
    return f"use groups along the global mesh's axes; of {n} devices: " + "; ".join(options[:4])
