"""MD202 full-rematerialization: a large tensor is gathered whole onto every device."""

from __future__ import annotations

from typing import TYPE_CHECKING

from meshdiag.checks.common import module_label, where
from meshdiag.checks.rule import Rule
from meshdiag.model.collective_bytes import array_bytes
from meshdiag.notation.byte_size import human_bytes

if TYPE_CHECKING:
    from collections.abc import Callable

    from meshdiag.checks.context import CheckContext
    from meshdiag.comms.model import Collective
    from meshdiag.comms.report import ModuleComms
    from meshdiag.model.findings import Finding

RULE = Rule(
    code="MD202",
    name="full-rematerialization",
    severity="warning",
    summary="an all-gather makes a large tensor whole (replicated) on every device",
    what="Finds all-gathers after which a tensor is replicated on every device of the module: "
    "in HLO, an all-gather whose groups, together with the all-gathers that fed it through "
    "single-operand instructions (converts, copies, fusions), span all `num_partitions` "
    "devices; in Shardy, an `sdy.all_gather` whose `out_sharding` shards no dimension. It "
    "reports those whose gathered result is at least `remat-min-bytes` (default 1 MiB; "
    "`--remat-min-bytes`), at the collective's line, naming the op_name and the source line "
    "(metadata `source_file`/`source_line`, or the `stack_frame_id` tables JAX writes) that "
    "caused it.",
    why="XLA's SPMD partitioner falls back to replicating a tensor when it cannot go from one "
    "sharding to another ('Involuntary full rematerialization'): every device then holds and "
    "receives the whole tensor, which costs memory and bandwidth proportional to its full size "
    "and often means the shardings of producer and consumer disagree.",
    fix="Give the consumer the producer's sharding, or constrain the value to a sharding both "
    "sides support, so the partitioner can reshard with an all-to-all or a partial gather; "
    "if replication is intended, suppress the finding on that line.",
    example="x: P('batch', 'model') → with_sharding_constraint(x, P(None, None))\n"
    "  → MD202: %all-gather.2 gathers f32[256,128] (128.0 KiB) onto all 8 devices\n"
    "Use instead:\n"
    "with_sharding_constraint(x, P('batch', None))  (gather one axis only)",
)


def judges(ctx: CheckContext) -> Callable[[Collective], bool]:
    """Which collectives `check` reads (see `checks.registry`): the all-gathers that
    gather over more than one device a result of at least `remat_min_bytes`."""
    least = ctx.remat_min_bytes
    return lambda c: _gathers(c) and _result_bytes(c) >= least


def may_judge(ctx: CheckContext) -> Callable[[Collective], bool]:
    """Which collectives `check` may read, told from a collective's own line (before the
    scan works out over how many devices it gathers): the all-gathers of a result of at
    least `remat_min_bytes`. A dump whose all-gathers are all smaller has nothing for it."""
    least = ctx.remat_min_bytes
    return lambda c: c.kind == "all-gather" and _result_bytes(c) >= least


def _gathers(c: Collective) -> bool:
    return c.kind == "all-gather" and c.gathered is not None and c.gathered >= 2


def _result_bytes(c: Collective) -> int:
    return sum(_bytes(s, d) for s, d in c.results)


def check(mc: ModuleComms, ctx: CheckContext) -> list[Finding]:

    m = mc.module
    devices = m.num_partitions
    out = []
    for r in mc.rows:
        c = r.collective
        if not _gathers(c):
            continue
        if c.dialect == "sdy":
            mesh = c.out_sharding.mesh if c.out_sharding is not None else None
            whole = mesh is not None and c.gathered == mesh.size
            devices = mesh.size if mesh is not None else devices
        else:
            whole = devices is not None and c.gathered == devices
        nbytes = _result_bytes(c)
        if not whole or nbytes < ctx.remat_min_bytes:
            continue
        shape = ", ".join(f"{d}[{','.join(map(str, s or ()))}]" for s, d in c.results)
        steps = (
            f" (the last of several all-gathers: {c.gathered} devices in all)"
            if r.group_size is not None and r.group_size < c.gathered
            else ""
        )
        cause = ""
        if c.op_name or c.source:
            cause = " It comes from " + " at ".join(x for x in (c.op_name, c.source) if x) + "."
        out.append(
            RULE.finding(
                f"{c.name} in {module_label(m)} gathers {shape} ({human_bytes(nbytes)}) whole "
                f"onto all {devices} devices{steps}: a full rematerialization.{cause}",
                "keep the tensor sharded: give its consumer the producer's sharding, or "
                "constrain it to a sharding both support (gather one axis, not all)",
                **where(ctx, m, c.line, c.column),  # type: ignore[arg-type]
            )
        )
    return out


def _bytes(shape, dtype) -> int:

    return array_bytes(shape, dtype) or 0
