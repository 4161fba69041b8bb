"""MD103 unsupported-mesh: the target does not accept the module's mesh shape."""

from __future__ import annotations

from typing import TYPE_CHECKING

from meshdiag.checks.common import module_label, module_meshes, sdy_mesh_text, where
from meshdiag.checks.rule import Rule
from meshdiag.model.targets import get_target, shape_text

if TYPE_CHECKING:
    from meshdiag.checks.context import CheckContext
    from meshdiag.ir.model import ModuleReport
    from meshdiag.model.findings import Finding

RULE = Rule(
    code="MD103",
    name="unsupported-mesh",
    severity="error",
    summary="the target (--target) does not accept the module's mesh shape",
    what="Looks the shape of each module's mesh (declared, or derived from its GSPMD "
    "shardings) up in the target's table, after the target's own normalisation. For tt-mlir "
    'that is AnalyzeMeshPass: a 0-D mesh becomes 1x1, a 1-D mesh ["x"=N] becomes 1xN, more '
    "than two axes are rejected, and the [dim0, dim1] pair must be in the ordered "
    "SupportedMeshes list of that tt-mlir version (exact match: 2x4 is supported, 4x2 is "
    "not). The finding suggests the supported transpose first, then reshapes with the same "
    "device count. (A system target such as t3k only fixes the device count; MD104 checks "
    "that.)",
    why="tt-mlir stops with 'error: Mesh is not valid' on the module (usually printed without "
    "a location, since torch-xla modules carry loc(unknown)), and nothing in the error names "
    "the shape or the accepted ones. A mesh with more devices than the machine has chips "
    "cannot be opened at all.",
    fix="Use the suggested supported shape, normally the global mesh (a 4x2 mesh derived by "
    "the import from a mis-ordered sharding is 2x4 once the sharding is fixed, see MD101/"
    "MD102), or pin --target to the tt-mlir version you run (tt-mlir@2025-07).",
    example='sdy.mesh @mesh = <["_axis_0"=4, "_axis_1"=2]>   with --target tt-mlir\n'
    "  → MD103: mesh 4x2 is not in tt-mlir's supported meshes; use 2x4\n"
    "Use instead:\n"
    'sdy.mesh @mesh = <["batch"=2, "model"=4]>',
)


def check(module: ModuleReport, ctx: CheckContext) -> list[Finding]:

    if not ctx.target:
        return []
    target = ctx.memos.table("targets", 64).call(get_target, ctx.target)
    if target.kind != "compiler":
        return []  # a system target only limits the device count: MD104 reports that
    diag = next((d for d in module.diagnostics if "Mesh is not valid" in d.message), None)
    out: list[Finding] = []
    for mm in module_meshes(module, ctx.memos):
        reason = target.rejection(mm.mesh.shape)
        if reason is None:
            continue
        message = f"{module_label(module)} runs on mesh {mm.describe()}: {reason}"
        if diag is not None:
            message += f" (the dump's 'error: {diag.message}' at line {diag.line})"
        message += "."
        suggestions = target.suggest(mm.mesh.shape)
        g = ctx.mesh
        if g is not None and g.axes and target.accepts(g.shape):
            # the global mesh, when the target takes it, is the answer
            fix = f"use the global mesh {g.shape_text()}: {sdy_mesh_text(g)}"
            others = [s for s in suggestions if s != g.shape]
        elif suggestions:
            fix = f"use {shape_text(suggestions[0])}" + (
                " (the transpose)" if sorted(suggestions[0]) == sorted(mm.mesh.shape) else ""
            )
            others = suggestions[1:]
        else:
            fix = f"no mesh with {mm.mesh.size} devices is accepted by {target.label}"
            others = []
        if others:
            fix += f"; also accepted: {', '.join(shape_text(s) for s in others)}"
        out.append(RULE.finding(message, fix, **where(ctx, module, mm.line, mm.column)))
    return out
