"""MD201 collective-over-budget: one collective moves more bytes per device than allowed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from meshdiag.checks.common import module_label, where
from meshdiag.checks.rule import Rule
from meshdiag.comms.axes import refs_text
from meshdiag.notation.byte_size import human_bytes

if TYPE_CHECKING:
    from meshdiag.checks.context import CheckContext
    from meshdiag.comms.report import ModuleComms
    from meshdiag.model.findings import Finding

RULE = Rule(
    code="MD201",
    name="collective-over-budget",
    severity="warning",
    summary="a collective sends or receives more bytes per device than the configured budget",
    what="Measures every collective in a partitioned dump (HLO all-gather, all-reduce, "
    "reduce-scatter, all-to-all, collective-permute and their async forms; Shardy's "
    "sdy.all_gather, sdy.all_reduce, ...) with the ring formulas of `meshdiag comms`: "
    "(n-1)/n of the gathered result for an all-gather, (n-1)/n of the operand for a "
    "reduce-scatter or all-to-all, 2(n-1)/n for an all-reduce, the operand for each device a "
    "permute moves. It reports each one whose bytes per device exceed the budget "
    "(`--collective-budget`, or `collective-budget` in the config: 65536, '64MiB', '1GB'). "
    "Without a budget the check is silent.",
    why="A sharding change can turn a cheap reshard into one that moves a whole weight matrix "
    "between devices on every step; nothing fails, the step just gets slower. A budget in CI "
    "catches the collective when the change lands, with the op and source line that made it.",
    fix="Keep the operands sharded the way the consumer wants them (a sharding constraint on "
    "the producer, or the PartitionSpec of the parameter), so the partitioner does not need "
    "the collective; or raise the budget when the traffic is intended.",
    example="meshdiag lint dump/ --collective-budget 32KiB\n"
    "  → MD201: %all-gather.2 (all-gather over batch, f32[256,128]) moves 64.0 KiB per "
    "device, over the 32.0 KiB budget",
)


def judges(ctx: CheckContext) -> bool:
    """Which collectives `check` reads under these settings (see `checks.registry`): every
    one when there is a budget, else none."""
    return ctx.collective_budget is not None


def check(mc: ModuleComms, ctx: CheckContext) -> list[Finding]:

    budget = ctx.collective_budget
    if budget is None:
        return []
    out = []
    for r in mc.rows:
        if r.traffic is None or r.per_device <= budget:
            continue
        c = r.collective
        over = f"over {refs_text(r.axes)}" if r.axes else f"in groups of {r.group_size or '?'}"
        if c.kind == "collective-permute":
            over = "between device pairs"
        shape = ", ".join(f"{d}[{','.join(map(str, s or ()))}]" for s, d in c.results[:2])
        origin = f" ({c.op_name})" if c.op_name else ""
        src = f" from {c.source}" if c.source else ""
        out.append(
            RULE.finding(
                f"{c.name} in {module_label(mc.module)} ({c.kind} {over}, {shape}){origin} "
                f"moves {human_bytes(r.per_device)} per device{src}, over the "
                f"{human_bytes(budget)} budget.",
                "keep the operand sharded the way its consumer reads it (a sharding "
                "constraint on the producer) so the collective is not needed, or raise "
                "collective-budget if this traffic is intended",
                **where(ctx, mc.module, c.line, c.column),  # type: ignore[arg-type]
            )
        )
    return out
