"""MD107 rank-mismatch: the sharding's rank is not the tensor's rank."""

from __future__ import annotations

from typing import TYPE_CHECKING

from meshdiag.checks.keys import Decides
from meshdiag.checks.rule import Rule
from meshdiag.checks.values import value_findings
from meshdiag.model.sharding import DimSharding, HloSharding, NamedSharding
from meshdiag.model.tiles import TileAssignment
from meshdiag.notation.gspmd import print_gspmd
from meshdiag.notation.shardy import print_sdy_dims

if TYPE_CHECKING:
    from meshdiag.checks.context import CheckContext
    from meshdiag.ir.model import ModuleReport, Value
    from meshdiag.memo import RunMemos
    from meshdiag.model.findings import Finding

RULE = Rule(
    code="MD107",
    name="rank-mismatch",
    severity="error",
    summary="a sharding's rank differs from its tensor's rank",
    what="Compares the number of dimensions a sharding describes with the rank of the value "
    "it annotates: the tiled data rank of a GSPMD sharding (tile dims minus the "
    "`last_tile_dim_replicate` / `last_tile_dims` subgroup dims) or the number of dimension "
    "shardings of a Shardy / V3 sharding. Replicated, maximal, manual and unknown shardings "
    "have no rank.",
    why="Shardy's verifier rejects the module (`sharding doesn't match tensor rank: 2 != 1`) "
    "and XLA's HloSharding::Validate fails the compile; a sharding copied from another value "
    "(a reshape's operand, a transposed weight) is the usual cause, and hand-built GSPMD "
    "strings easily miss or add the replication dim.",
    fix="Give the sharding one entry per tensor dimension: add unsharded dims (`{}` in Shardy, "
    "a tile dim of 1 in GSPMD) or drop extra unsharded ones; when the extra dim is sharded, "
    "the sharding was built for another tensor.",
    example='%arg0: tensor<8x16xf32> {mhlo.sharding = "{devices=[2,2,2]<=[8]}"}\n'
    "  → MD107: the sharding tiles 3 dims but the tensor has rank 2\n"
    "Use instead:\n"
    "{devices=[2,2,2]<=[8] last_tile_dim_replicate}",
)


def check(module: ModuleReport, ctx: CheckContext) -> list[Finding]:

    return value_findings(module, ctx, RULE, None, _judge, DECIDES)


#: what decides whether a value has a finding (`checks.keys`): the sharding (by identity:
#: the rank it describes) and the rank of the shape `_judge` reads (the shape itself only
#: goes into a finding's message: keyed by the shape, a file whose shapes never repeat had
#: every value judged)
DECIDES = Decides("#sharding", "rank")


def _judge(v: Value, facts: None, memos: RunMemos) -> list[tuple[str, str | None]]:
    shape = v.shape if v.shape is not None else v.local_shape
    s = v.sharding
    if shape is None or s is None:
        return []
    ranks = memos.table("md107.ranks", 8192)  # the rank each sharding describes
    got = ranks.get(s, _UNKNOWN)
    if got is _UNKNOWN:
        got = ranks.put(s, _rank(v))
    rank = len(shape)
    if got is None or got == rank:
        return []
    shape_txt = "x".join(map(str, shape)) or "scalar"
    return [
        (
            f"{v.name}'s sharding {v.text} describes {got} dims but its tensor "
            f"({shape_txt}) has rank {rank}.",
            _fix(v, rank),
        )
    ]


def _rank(v: Value) -> int | None:
    s = v.sharding
    if isinstance(s, NamedSharding):
        if s.whole is not None or (s.mesh is not None and s.mesh.is_maximal):
            return None
        return s.rank
    if isinstance(s, HloSharding) and s.is_tiled:
        return s.data_rank
    return None


def _fix(v: Value, rank: int) -> str:
    s = v.sharding
    if isinstance(s, NamedSharding):
        return _fix_named(s, rank)
    assert isinstance(s, HloSharding) and s.tile is not None
    return _fix_tiled(s, rank)


def _fix_named(s: NamedSharding, rank: int) -> str:
    from dataclasses import replace

    dims = list(s.dims)
    if len(dims) < rank:
        dims += [DimSharding()] * (rank - len(dims))
    else:
        extra = dims[rank:]
        if any(d.axes for d in extra):
            return (
                f"the sharding was built for a rank-{len(dims)} tensor (a dim past {rank - 1} is "
                "sharded); reshard the value on its own dims"
            )
        dims = dims[:rank]
    return f"use {print_sdy_dims(replace(s, dims=tuple(dims)))}"


def _fix_tiled(s: HloSharding, rank: int) -> str:

    data = list(s.data_dims)
    if len(data) < rank:
        data += [1] * (rank - len(data))
    elif any(d != 1 for d in data[rank:]):
        total = 1
        for d in data[rank:]:
            total *= d
        if total and not s.num_subgroup_dims:
            # the extra dims are most likely a replication group written without its keyword
            fixed = HloSharding.tiled(_reshaped(s, data[:rank] + [total]), replicate_on_last=True)
            return f"use {print_gspmd(fixed)} (the trailing tile dims as the replication group)"
        return (
            f"the sharding was built for a rank-{len(data)} tensor (a tile dim past {rank - 1} "
            "is not 1); reshard the value on its own dims"
        )
    else:
        data = data[:rank]
    new = HloSharding.tiled(
        _reshaped(s, data + list(s.subgroup_dims)),
        replicate_on_last=s.replicate_on_last,
        subgroup_types=s.subgroup_types,
    )
    return f"use {print_gspmd(new)}"


def _reshaped(s: HloSharding, dims: list[int]) -> TileAssignment:
    t = s.tile
    assert t is not None
    if t.is_iota:
        return TileAssignment.iota(dims, t.reshape, t.perm)
    return TileAssignment.from_devices(dims, t.devices())


_UNKNOWN = object()
