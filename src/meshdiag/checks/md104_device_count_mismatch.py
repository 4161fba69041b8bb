"""MD104 device-count-mismatch: the device counts a module states disagree."""

from __future__ import annotations

from typing import TYPE_CHECKING

from meshdiag.checks.common import (
    declared_meshes,
    gspmd_tiled_values,
    module_label,
    module_meshes,
    where,
)
from meshdiag.checks.keys import Decides
from meshdiag.checks.rule import Rule
from meshdiag.checks.values import value_findings
from meshdiag.model.sharding import HloSharding
from meshdiag.model.targets import get_target, shape_text

if TYPE_CHECKING:
    from meshdiag.checks.context import CheckContext
    from meshdiag.ir.model import ModuleReport, Value
    from meshdiag.memo import RunMemos
    from meshdiag.model.findings import Finding

RULE = Rule(
    code="MD104",
    name="device-count-mismatch",
    severity="error",
    summary="mesh size, num_partitions, tile-assignment device counts, other meshes or the "
    "target's chip count disagree",
    what="Compares every device count a module states: the size of each declared mesh "
    "(maximal meshes excepted), `num_partitions` (HLO module config / "
    "`mhlo.num_partitions`), the number of devices in each GSPMD tile assignment, and, for a "
    "system target (n300, t3k, galaxy, ...), the machine's chip count against the module's "
    "mesh (declared or derived). After SPMD partitioning, shardings over one device group (a "
    "divisor of num_partitions, left by grouped partitioning on e.g. `collective-permute`) "
    "are not a mismatch.",
    why="Shardy documents that all meshes of a module have the same number of devices but "
    "does not enforce it; XLA's SPMD partitioner rejects a tile assignment whose device count "
    "is not num_partitions; a mesh bigger than the machine cannot be opened, and a smaller one "
    "leaves chips idle or makes tt-xla re-open the device mesh with another shape.",
    fix="Make every count equal to the global mesh's device count: declare one mesh with the "
    "machine's chip count, compile with num_partitions equal to it, and build every sharding "
    "on that mesh.",
    example="HloModule m, num_partitions=8 ... sharding={devices=[2,2]<=[4]}\n"
    "  → MD104: the tile assignment holds 4 devices but num_partitions is 8\n"
    "Use instead:\n"
    "sharding={devices=[2,4]<=[8]}  (a tiling over all 8 devices)",
)


def check(module: ModuleReport, ctx: CheckContext) -> list[Finding]:

    out: list[Finding] = []
    label = module_label(module)
    decls = declared_meshes(module)
    first = decls[0] if decls else None
    for d in decls[1:]:
        assert d.mesh is not None and first is not None and first.mesh is not None
        if d.mesh.size != first.mesh.size:
            out.append(
                RULE.finding(
                    f"{label} declares mesh @{d.name} with {d.mesh.size} devices but mesh "
                    f"@{first.name} (line {first.line}) has {first.mesh.size}; all meshes of a "
                    "module must have the same number of devices.",
                    f"give @{d.name} {first.mesh.size} devices, e.g. reuse @{first.name} = "
                    f"<{first.mesh.short()}>",
                    **where(ctx, module, d.line, d.column),
                )
            )
    n_part = module.num_partitions
    if first is not None and first.mesh is not None and n_part and first.mesh.size != n_part:
        out.append(
            RULE.finding(
                f"{label} has num_partitions={n_part} but its mesh @{first.name} "
                f"<{first.mesh.short()}> has {first.mesh.size} devices.",
                f"compile with num_partitions={first.mesh.size}, or declare a mesh with "
                f"{n_part} devices",
                **where(ctx, module, first.line, first.column),
            )
        )
    # the count every GSPMD tile assignment must have
    if first is not None and first.mesh is not None:
        ref, ref_what = first.mesh.size, f"mesh @{first.name} has"
    elif n_part:
        ref, ref_what = n_part, "num_partitions is"
    else:
        ref, ref_what = None, ""
    if ref is None:  # the first tiled GSPMD sharding sets it
        first_tiled = next(iter(gspmd_tiled_values(module)), None)
        if first_tiled is not None:
            v0, s0 = first_tiled
            ref, ref_what = s0.tile.num_devices, f"{v0.name}'s sharding (line {v0.line}) has"  # type: ignore[union-attr]
    if ref is not None:
        facts = (ref, ref_what, module.partitioned)
        out.extend(value_findings(module, ctx, RULE, facts, _judge, DECIDES))
    if ctx.target:
        target = ctx.memos.table("targets", 64).call(get_target, ctx.target)
        if target.kind == "system":
            for mm in module_meshes(module, ctx.memos):
                if mm.mesh.size != target.chips:
                    canon = shape_text(target.canonical_shape or ())
                    out.append(
                        RULE.finding(
                            f"{label} runs on mesh {mm.describe()} with {mm.mesh.size} devices "
                            f"but the target {target.name} has {target.chips} chips.",
                            f"use {target.name}'s {canon} mesh ({target.chips} devices)",
                            **where(ctx, module, mm.line, mm.column),
                        )
                    )
    return out


#: what decides whether a value has a finding (`checks.keys`): a GSPMD sharding's leaves
#: (the sharding, by identity)
DECIDES = Decides("notation", "#sharding")


def _judge(v: Value, facts: tuple[int, str, bool], memos: RunMemos) -> list[tuple[str, str | None]]:
    """GSPMD tiled shardings over another device count than the module's.

    After SPMD partitioning (`partitioned`), the shardings left on instructions are
    leftovers the partitioner no longer reads, and the ones it built for grouped
    partitioning (a dot or reshard done within each group of devices, e.g. `dynamic-slice`
    and `collective-permute` in `*.spmd-cleanup.*` files) are group-local: over a group's
    device count, a divisor of num_partitions. Only counts that no device group has (not a
    divisor) are reported there.
    """

    s = v.sharding
    if v.notation != "gspmd" or not isinstance(s, HloSharding):
        return []
    ref, ref_what, partitioned = facts
    return [
        (
            f"{v.name}'s sharding {v.text} tiles over {n} devices but {ref_what} {ref}.",
            f"build the sharding over all {ref} devices (on the module's mesh)",
        )
        for leaf in s.leaves()
        if leaf.is_tiled
        and (n := leaf.tile.num_devices) != ref  # type: ignore[union-attr]
        and not (partitioned and n < ref and ref % n == 0)
    ]
