"""The checks that apply to a mesh on its own (MD103 unsupported-mesh, MD104
device-count-mismatch): for `--mesh` with `--target` in `layout` and `simulate-copy`, and for
mesh config files in `lint`. The mesh is presented to the module checks as a one-mesh module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from meshdiag.checks.context import CheckContext
from meshdiag.checks.registry import module_checks, run_check
from meshdiag.ir.model import MeshDecl, ModuleReport
from meshdiag.model.targets import get_target

if TYPE_CHECKING:
    from meshdiag.ir.model import ModuleReport
    from meshdiag.model.findings import Finding
    from meshdiag.model.mesh import Mesh

#: the rules that judge a mesh without any module or value around it
MESH_ONLY_CODES = ("MD103", "MD104")


def mesh_as_module(mesh: Mesh | None, line: int = 1, column: int = 1) -> ModuleReport:

    decl = MeshDecl("mesh", mesh, line, column, text=str(mesh), source="inline")
    return ModuleReport(name=None, line=line, meshes=[decl])


def mesh_target_findings(mesh: Mesh, target: str | None, *, path: str = "--mesh") -> list[Finding]:
    """MD103/MD104 for `mesh` on `target` (none without a target)."""
    if not target:
        return []

    get_target(target)  # an unknown target is a usage error, before any check runs
    checks = module_checks()
    module = mesh_as_module(mesh)
    ctx = CheckContext(path, mesh=None, target=target)
    return [
        f
        for code in MESH_ONLY_CODES
        for f in run_check(code, checks[code], module, ctx, line=None, module=None)
    ]
