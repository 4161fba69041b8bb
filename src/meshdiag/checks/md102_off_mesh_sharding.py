"""MD102 off-mesh-sharding: a sharding no plain spec on the global mesh produces."""

from __future__ import annotations

from typing import TYPE_CHECKING

from meshdiag.checks.common import (
    declared_meshes,
    match_plain_spec,
    module_meshes,
    named_sharding,
    own_spec,
    pick_spec,
    plain_spec_hlo,
    pspec_text,
    refines_global,
    same_mesh,
    sdy_dims_text,
    value_hlo,
)
from meshdiag.checks.keys import Decides
from meshdiag.checks.rule import Rule
from meshdiag.checks.values import value_findings
from meshdiag.errors import MeshdiagError
from meshdiag.model.derive import hlo_to_named, meshes_fitting
from meshdiag.notation.gspmd import print_gspmd
from meshdiag.notation.shardy import print_sdy_dims

if TYPE_CHECKING:
    from meshdiag.checks.common import PlainSpec
    from meshdiag.checks.context import CheckContext
    from meshdiag.ir.model import ModuleReport, Value
    from meshdiag.memo import RunMemos
    from meshdiag.model.findings import Finding
    from meshdiag.model.mesh import Mesh
    from meshdiag.model.sharding import HloSharding

RULE = Rule(
    code="MD102",
    name="off-mesh-sharding",
    severity="error",
    summary="a sharding's device assignment is not what any plain spec on the global mesh gives",
    what="Evaluates each sharded value on the global mesh: its tile assignment (for Shardy "
    "values on another mesh, the GSPMD form they export to) is compared, device by device, "
    "with every plain PartitionSpec on the global mesh that has the same number of shards per "
    "dimension. It fires when none matches and the value is not on the global mesh: a "
    "Shardy value on another declared mesh, or a GSPMD value in a module whose mesh MD101 "
    "flags. On the global mesh (declared, or derived from correct shardings on it) sub-axis "
    'layouts the compiler produces itself (`[{"x","y":(1)2},{"y":(2)2}]` after a reshape, '
    "exported as `{devices=[4,2]<=[8]}`) are fine, and MD102 fires only on a device "
    "assignment no named sharding on the global mesh gives (e.g. another device order). The message says what the sharding is on the global "
    "mesh, which meshes it does fit, and which plain spec has the same tiling with another "
    "device order.",
    why="GSPMD device numbers are positions in the global mesh. A string built for another "
    "mesh puts the shards on other devices: `{devices=[1,4,2]<=[8] last_tile_dim_replicate}` "
    "puts tile j on devices {2j, 2j+1}, while `(None, 'model')` on batch=2,model=4 puts it on "
    "{j, j+4}. Data read back or resharded through the wrong string is silently permuted, and "
    "the mesh XLA's import derives from it is distorted (MD101).",
    fix="Emit the sharding the intended spec gives on the global mesh, e.g. "
    "`{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}` for `(None, 'model')` on "
    'batch=2,model=4, or in Shardy `[{}, {"model"}]` on the global `@mesh`.',
    example='mhlo.sharding = "{devices=[1,4,2]<=[8] last_tile_dim_replicate}"  with --mesh '
    "batch=2,model=4\n"
    '  → on the global mesh this is [{}, {"batch", "model":(1)2}]\n'
    "Use instead:\n"
    'mhlo.sharding = "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"',
)


def check(module: ModuleReport, ctx: CheckContext) -> list[Finding]:

    g = ctx.mesh
    if g is None or not g.axes:
        return []
    on_global = frozenset(d.name for d in declared_meshes(module) if same_mesh(d.mesh, g))  # type: ignore[arg-type]
    # GSPMD values live on the module's mesh: when that is the global mesh or one derived
    # from correct shardings on it (MD101 is silent), sub-axis layouts are the compiler's own
    gspmd_on_global = all(
        same_mesh(mm.mesh, g) or (mm.derived and refines_global(mm.mesh, g, ctx.memos))
        for mm in module_meshes(module, ctx.memos)
    )
    return value_findings(module, ctx, RULE, (g, on_global, gspmd_on_global), _judge, DECIDES)


#: what decides whether a value has a finding (`checks.keys`): the notation, the mesh it
#: names and its shardings, by identity (`own_spec` and `value_hlo` read nothing else)
DECIDES = Decides("notation", "mesh_name", "#sharding", "#hlo")


def _judge(
    v: Value, facts: tuple[Mesh, frozenset[str], bool], memos: RunMemos
) -> list[tuple[str, str | None]]:

    g, on_global, gspmd_on_global = facts
    if v.notation == "sdy":
        sub_axes_ok = v.mesh_name in on_global
        if sub_axes_ok and not _has_sub_axes(v):
            return []  # whole axes of the global mesh: a plain spec by construction
    else:
        sub_axes_ok = gspmd_on_global
    s = value_hlo(v)
    if s is None:
        return []
    out = []
    verdicts = memos.table("md102.verdicts", 8192)
    for leaf in s.leaves():
        # each distinct sharding judged once
        args = (leaf, g, sub_axes_ok, own_spec(v))
        verdict = verdicts.get(args, _UNJUDGED)
        if verdict is _UNJUDGED:
            verdict = verdicts.put(args, _verdict(*args, memos))
        if verdict is not None:
            message, fix = verdict
            out.append((f"{_name(v)} {message}", fix))
    return out


def _verdict(
    leaf: HloSharding, g: Mesh, sub_axes_ok: bool, own: PlainSpec | None, memos: RunMemos
) -> tuple[str, str] | None:
    """(message, fix) when `leaf` is not a plain spec on `g` (with `sub_axes_ok`: when no
    named sharding on `g`, sub-axes allowed, gives its devices), else None."""

    m = match_plain_spec(leaf, g, memos)
    if m is None or m.exact is not None:
        return None
    if sub_axes_ok and _on_global(leaf, g) is not None:
        return None
    return _explain(leaf, g, m, own)


def _has_sub_axes(v: Value) -> bool:

    n = named_sharding(v)
    if n is None:
        return True
    axes = [a for d in n.dims for a in d.axes] + list(n.replicated) + list(n.unreduced)
    return any(a.is_sub for a in axes)


def _name(v: Value) -> str:
    return f"{v.name}'s sharding {v.text}"


def _explain(s: HloSharding, g: Mesh, m, own: PlainSpec | None) -> tuple[str, str]:

    parts = [f"is not any plain spec on the global mesh <{g.short()}>"]
    on_global = _on_global(s, g)
    parts.append(
        f"on it, it is {on_global}" if on_global else "no named sharding on it expresses it"
    )
    fits = _fits(s)
    if fits:
        parts.append(f"it fits the mesh{'es' if len(fits) > 1 else ''} {', '.join(fits)}")
    spec = pick_spec(m, own)
    if spec is not None:
        right = print_gspmd(plain_spec_hlo(spec, g))
        parts.append(f"{pspec_text(spec)} has the same tiling but another device order")
        fix = (
            f"use {pspec_text(spec)} on the global mesh: {right} "
            f"(Shardy <@mesh, {sdy_dims_text(spec)}>)"
        )
    elif on_global:
        fix = f"shard it as {on_global} on the global mesh, or reshape the data for a plain spec"
    else:
        fix = "replace it by a sharding on the global mesh (no plain spec has its tiling)"
    return "; ".join(parts) + ".", fix


def _on_global(s: HloSharding, g: Mesh) -> str | None:
    """The sharding as Shardy dims (with sub-axes) on the global mesh, when it has one."""

    try:
        named = hlo_to_named(s, g)
    except MeshdiagError:
        return None
    return print_sdy_dims(named) if named is not None and named.whole is None else None


def _fits(s: HloSharding, limit: int = 4) -> list[str]:

    try:
        meshes = list(meshes_fitting(s))
    except MeshdiagError:
        return []
    out = []
    for mesh in meshes[:limit]:
        shape = getattr(mesh, "shape", mesh)
        out.append("x".join(map(str, shape)))
    if len(meshes) > limit:
        out.append(f"... ({len(meshes) - limit} more)")
    return out


_UNJUDGED = object()
