"""MD108 invalid-sharding: what Shardy's or XLA's verifier would reject."""

from __future__ import annotations

from typing import TYPE_CHECKING

from meshdiag.checks.common import declared_meshes, sdy_mesh_text, where
from meshdiag.checks.keys import Decides
from meshdiag.checks.rule import Rule
from meshdiag.checks.values import value_findings
from meshdiag.model.sharding import HloSharding, NamedSharding
from meshdiag.model.verify import verify_named
from meshdiag.notation.gspmd import validate_hlo
from meshdiag.notation.shardy import verify_mesh

if TYPE_CHECKING:
    from meshdiag.checks.context import CheckContext
    from meshdiag.ir.model import ModuleReport, Value
    from meshdiag.memo import RunMemos
    from meshdiag.model.findings import Finding

RULE = Rule(
    code="MD108",
    name="invalid-sharding",
    severity="error",
    summary="a mesh or sharding the Shardy or XLA verifier rejects (unknown or duplicate axis, "
    "bad sub-axis, bad device ids)",
    what="Runs the verifier rules of Shardy (`MeshAttr::verify`, `verifyTensorShardingAttr`) "
    "and XLA (`HloSharding::ValidateNonTuple`) over every declared mesh and sharded value: "
    "unknown mesh or axis, an axis used twice (or both sharded and replicated), sub-axes that "
    "do not divide their axis, overlap or could be merged, a full axis mixed with its "
    "sub-axes, mesh device_ids that are not a permutation of 0..N-1, and tile assignments "
    "with device ids out of range or repeated, or over a single device. Messages carry the "
    "same facts as the verifiers' own.",
    why="The compiler stops at the first of these with a message that often lacks the "
    "sharding text (torch-xla modules print `loc(unknown)`); meshdiag reports them all, with "
    "the line and column of the annotation. Lossy frontends (tt-mlir's convert-xla-sdy-to-sdy "
    "drops sub-axes) can also turn a valid sharding into one of these.",
    fix="Correct the axis names, sub-axes or device ids the message names: use axes the mesh "
    'declares, each once; sub-axes `"x":(m)k` with m*k dividing the size of x; device ids '
    "0..N-1 each exactly once.",
    example='sdy.mesh @mesh = <["a"=2, "b"=4]>\n'
    '#sdy.sharding<@mesh, [{"a"}, {"a"}]>\n'
    '  → MD108: duplicate axis ref: "a"\n'
    "Use instead:\n"
    '#sdy.sharding<@mesh, [{"a"}, {"b"}]>',
)


def check(module: ModuleReport, ctx: CheckContext) -> list[Finding]:

    out: list[Finding] = []
    mesh_msgs: dict[str, list[str]] = {}
    for d in module.meshes:
        if d.mesh is None:
            continue  # did not parse: MD001
        # the same meshes in every module
        msgs = ctx.memos.table("md108.meshes", 8192).call(verify_mesh, d.mesh)
        mesh_msgs[d.name] = msgs
        for m in msgs:
            out.append(
                RULE.finding(
                    f"mesh @{d.name} {d.text}: {m}.",
                    _mesh_fix(d.mesh),
                    **where(ctx, module, d.line, d.column),
                )
            )
    facts = (
        frozenset(d.name for d in module.meshes),
        tuple((name, tuple(msgs)) for name, msgs in mesh_msgs.items()),
        _device_count(module, ctx),
    )
    out.extend(value_findings(module, ctx, RULE, facts, _judge, DECIDES))
    return out


#: what decides whether a value has a finding (`checks.keys`): the sharding (by identity),
#: and the mesh named when it did not resolve
DECIDES = Decides("#sharding", "mesh_name")


def _judge(v: Value, facts: tuple, memos: RunMemos) -> list[tuple[str, str | None]]:
    declared, mesh_msgs, count = facts
    msgs = _value_problems(v, declared, dict(mesh_msgs), count, memos)
    return [(f"{v.name}'s sharding {v.text}: {m}.", _value_fix(m)) for m in msgs]


def _device_count(module: ModuleReport, ctx: CheckContext) -> int | None:
    """Devices the module's GSPMD device ids index: num_partitions, else its mesh, else the
    global mesh."""

    if module.num_partitions:
        return module.num_partitions
    decls = declared_meshes(module)
    if decls and decls[0].mesh is not None:
        return decls[0].mesh.size
    if ctx.mesh is not None and ctx.mesh.axes:
        return ctx.mesh.size
    return None


def _value_problems(
    v: Value,
    declared: frozenset[str],
    mesh_msgs: dict[str, tuple[str, ...]],
    count: int | None,
    memos: RunMemos,
) -> list[str]:

    s = v.sharding
    if isinstance(s, NamedSharding):
        if s.mesh is None:
            ref = s.mesh_ref or v.mesh_name
            if ref is not None and ref not in declared:
                return [f"unknown mesh: @{ref}"]
            return []
        known = set(mesh_msgs.get(s.mesh_ref or "", []))
        found = memos.table("md108.named", 8192).call(_verify_named, s)
        return [m for m in found if m not in known and "tensor rank" not in m]
    if isinstance(s, HloSharding):
        return list(memos.table("md108.hlo", 8192).call(_hlo_problems, s, count))
    return []


def _verify_named(s: NamedSharding) -> list[str]:

    return verify_named(s, s.mesh)


def _hlo_problems(s: HloSharding, count: int | None) -> list[str]:

    msgs = list(validate_hlo(s))
    if count is not None:
        msgs += _out_of_range(s, count)
    return msgs


def _out_of_range(s: HloSharding, count: int) -> list[str]:
    """Device ids ≥ the module's device count (validate_hlo checks the rest)."""
    msgs = []
    for i, leaf in enumerate(s.leaves()):
        where = f"tuple element {i}: " if s.is_tuple else ""
        if leaf.kind == "maximal" and leaf.device is not None and leaf.device >= count:
            msgs.append(
                f"{where}device {leaf.device} is out of range: the module has {count} devices"
            )
        elif leaf.is_tiled and leaf.tile is not None and not leaf.tile.is_iota:
            bad = sorted({d for d in leaf.tile.devices() if d >= count})
            if bad:
                shown = ", ".join(map(str, bad[:8])) + (" ..." if len(bad) > 8 else "")
                msgs.append(f"{where}device {shown} out of range [0, {count}) in tile assignment")
    return msgs


def _mesh_fix(mesh) -> str:

    ids = mesh.device_ids
    if ids is not None and sorted(ids) != list(range(mesh.size)):
        return f"list each of the device ids 0..{mesh.size - 1} once, or drop device_ids"
    return f"declare it as {sdy_mesh_text(mesh)}"


def _value_fix(message: str) -> str:
    if message.startswith("unknown mesh"):
        return "declare the mesh with an sdy.mesh op (or refer to a declared one)"
    if "axis name" in message:
        return "use an axis the mesh declares"
    if "duplicate axis ref" in message or "both sub-axis and full-axis" in message:
        return "use each mesh axis (or each part of it) at most once across dims, replicated= and unreduced="
    if "sub-axis" in message or "sub-axes" in message:
        return 'use sub-axes "x":(m)k with m*k dividing the size of x, non-overlapping, merged when adjacent'
    if "not ordered" in message:
        return "list the axes in mesh order"
    if "priority" in message:
        return "drop the priority or make it non-negative"
    if "out of range" in message or "repeated" in message:
        return "use each device id 0..N-1 exactly once"
    if "single device" in message:
        return "use {replicated} or {maximal device=N}"
    if "maximal" in message:
        return "a sharding on a maximal mesh must be <@mesh, []>"
    return "correct the sharding as the message says"
