"""MD101 mesh-mismatch: a module's mesh is not the global mesh."""

from __future__ import annotations

from typing import TYPE_CHECKING

from meshdiag.checks.common import (
    corrected_sharding,
    module_label,
    module_meshes,
    refines_global,
    same_mesh,
    sdy_mesh_text,
    where,
)
from meshdiag.checks.rule import Rule

if TYPE_CHECKING:
    from meshdiag.checks.context import CheckContext
    from meshdiag.ir.model import ModuleReport
    from meshdiag.model.findings import Finding

RULE = Rule(
    code="MD101",
    name="mesh-mismatch",
    severity="error",
    summary="a module's mesh (declared, or derived from its GSPMD shardings) is not the "
    "global mesh",
    what="Compares the mesh each module runs on with the global mesh (--mesh or the config). "
    "The module's mesh is its `sdy.mesh` / `xla.sdy.meshes` declaration or, when it only has "
    "GSPMD `mhlo.sharding` strings, the mesh XLA's StableHLO→Shardy import derives from them "
    "(axes `_axis_0`, `_axis_1`, ...). Meshes equal up to size-1 axes are equal, axis names do "
    "not matter, and a derived mesh whose every axis is a global axis, a sub-axis of one, or "
    "whole global axes merged is compatible, decided from the devices (iota canonicalisation "
    "prints `('batch','model')` as `<=[8]`; a reshape the compiler gave sub-axes, "
    '`[{"x","y":(1)2},{"y":(2)2}]` on x=2,y=4, derives 2x2x2). A different shape, an axis '
    "that joins a whole axis with part of another (4x2 on 2x4), another device order or "
    "device count is a mismatch.",
    why="A module that derives its mesh from its own shardings sees only those shardings. "
    "torch_xla's ReplicateShardedData computation has one parameter, so its mesh is whatever "
    "that one sharding factorises into: `{devices=[1,4,2]<=[8] last_tile_dim_replicate}` "
    "imports as `_axis_0=4, _axis_1=2`, not the global `batch=2 x model=4`. tt-mlir then "
    "rejects the 4x2 mesh ('Mesh is not valid'), and tt-xla would close and re-open the "
    "device mesh with the wrong shape. Data placed for one mesh and read through another "
    "lands on the wrong devices.",
    fix='Declare the global mesh in the module (`sdy.mesh @mesh = <["batch"=2, '
    '"model"=4]>`) and express every sharding on it. For a GSPMD-only module, emit the '
    "sharding the global mesh gives (`(None, 'model')` on batch=2,model=4 is "
    "`{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}`), so the import derives a mesh "
    "compatible with the global one.",
    example='sdy.mesh @mesh = <["_axis_0"=4, "_axis_1"=2]>   with --mesh batch=2,model=4\n'
    "  → MD101: module @ReplicateShardedData.6's mesh 4x2 is not the global mesh 2x4\n"
    "Use instead:\n"
    'sdy.mesh @mesh = <["batch"=2, "model"=4]>\n'
    '%arg0: tensor<32x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>}',
)


def check(module: ModuleReport, ctx: CheckContext) -> list[Finding]:
    g = ctx.mesh
    if g is None or not g.axes:
        return []
    out: list[Finding] = []
    for mm in module_meshes(module, ctx.memos):
        m = mm.mesh
        if same_mesh(m, g) or (mm.derived and refines_global(m, g, ctx.memos)):
            continue
        message = (
            f"{module_label(module)} runs on mesh {mm.describe()}, shape {m.shape_text()}, "
            f"but the global mesh is <{g.short()}>, shape {g.shape_text()}: "
            f"{_difference(m, g, mm.derived)}."
        )
        if ctx.ids_note:
            message += f" ({ctx.ids_note}.)"
        name = mm.decl.name if mm.decl else "mesh"
        fixes = [sdy_mesh_text(g, name)]
        if mm.derived:
            users = list(mm.sources)
        else:
            users = [g.value for g in module.value_groups() if g.value.mesh_name in (name, None)]
        for v in users:
            fixed = corrected_sharding(v, g, ctx.memos)
            if fixed and len(fixes) < 4:
                fixes.append(fixed)
        if mm.derived and len(fixes) == 1:
            fixes.append("express the shardings on the global mesh (no plain spec matches)")
        fix = "declare " + fixes[0] + (" and use " + "; ".join(fixes[1:]) if fixes[1:] else "")
        out.append(RULE.finding(message, fix, **where(ctx, module, mm.line, mm.column)))
    return out


def _difference(m, g, derived: bool) -> str:
    a, b = m.without_size1_axes(), g.without_size1_axes()
    if a.size != b.size:
        return f"it has {a.size} devices, the global mesh {b.size}"
    if sorted(a.shape) == sorted(b.shape) and a.shape != b.shape:
        return f"its axes are permuted ({a.shape_text()} vs {b.shape_text()})"
    if a.shape == b.shape:
        return "the device order differs"
    what = (
        "its axes are not global axes, sub-axes of one, or whole global axes merged"
        if derived
        else "the shapes differ"
    )
    return f"{what} ({a.shape_text()} vs {b.shape_text()})"
