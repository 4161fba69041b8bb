"""What the collective scan finds: modules and the collectives in them.

Plain data: `comms/scan.py` fills it, `cost.py`/`axes.py` read it, the report and the checks
use both. Lines and columns are 1-based and point into the original file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from meshdiag.comms.groups import Groups, ReplicaGroups
    from meshdiag.model.mesh import Mesh
    from meshdiag.model.sharding import AxisRef, NamedSharding

#: the kinds, named as HLO names them; Shardy's ops map onto them (`sdy.all_gather` is an
#: all-gather), plus the two Shardy ops that move no data by themselves
Kind = Literal[
    "all-gather",
    "all-reduce",
    "reduce-scatter",
    "all-to-all",
    "ragged-all-to-all",
    "collective-permute",
    "all-slice",
    "reshard",
]

#: one array: (per-device shape, dtype); shape None when dynamic
Array = tuple["tuple[int, ...] | None", str]


@dataclass(frozen=True)
class Collective:
    kind: Kind
    op: str  # as written: all-gather, all-gather-start, sdy.all_gather, ...
    name: str  # the result's name: %all-gather.2, %4
    line: int
    column: int  # of the op name
    dialect: Literal["hlo", "sdy"]
    #: arrays the collective produces on each device (HLO: the result's leaves, for async
    #: starts the result part of the tuple; Shardy: the local shape out_sharding gives)
    results: tuple[Array, ...] = ()
    groups: ReplicaGroups | None = None  # HLO replica_groups
    pairs: Groups | None = None  # HLO source_target_pairs (rows of two: source, target)
    dimensions: tuple[int, ...] = ()  # HLO dimensions={..} (gather / scatter dims)
    channel_id: int | None = None
    computation: str | None = None  # HLO computation it sits in
    is_async: bool = False  # a -start op, or inside an async computation
    op_name: str | None = None  # metadata op_name
    source: str | None = None  # metadata source_file:source_line
    #: Shardy: the axes the op runs over, its out_sharding, the mesh it names, the global
    #: (unsharded) result shape
    sdy_axes: tuple[AxisRef, ...] = ()
    out_sharding: NamedSharding | None = None
    #: Shardy: the operand's sharding when the dump gives it (a collective_permute's start)
    in_sharding: NamedSharding | None = None
    global_shape: tuple[int, ...] | None = None
    #: Shardy all_to_all: one entry per `{axes}: src->dst` parameter
    sdy_a2a: tuple[tuple[tuple[AxisRef, ...], int, int], ...] = ()
    #: all-gathers: over how many devices the result is gathered, counting the all-gathers
    #: that fed it through single-operand instructions (HLO) or from its out_sharding
    #: (Shardy): the module's device count means the tensor is now whole on every device
    gathered: int | None = None

    @property
    def dtype(self) -> str | None:
        return self.results[0][1] if self.results else None


@dataclass
class CollectiveModule:
    """One module (or pass-dump section) of a dump and its collectives, in file order."""

    name: str | None
    line: int
    dialect: Literal["hlo", "mlir"]
    section: str | None = None  # pass-dump header (`IR Dump After ...`)
    num_partitions: int | None = None
    meshes: dict[str, Mesh] = field(default_factory=dict)  # Shardy mesh symbols
    collectives: list[Collective] = field(default_factory=list)


@dataclass(frozen=True)
class Problem:
    """Text the scan could not read (an MD001 finding, or a one-line error in `comms`)."""

    message: str
    line: int
    column: int = 1
    #: the sharding scan (`ir.scan`) reports the same text too (a mesh declaration, a line
    #: too long to read, a read error): `lint`, which runs both scans, shows it once
    in_sharding_scan: bool = False


@dataclass
class CollectiveFile:
    path: str
    modules: list[CollectiveModule] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
