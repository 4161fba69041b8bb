"""The sharding model: XLA's tiled form and Shardy's named form.

`HloSharding` is the device-array view every notation reduces to (what XLA's HloSharding
holds): a tile assignment whose first `data_rank` dims tile the tensor and whose trailing dims
are subgroups (replicated / manual / unreduced), or one of the special kinds.

`NamedSharding` is the mesh-axis view (Shardy `#sdy.sharding`, XLA V3, PartitionSpec):
per tensor dim a list of mesh axes, major to minor, with sub-axes, open dims and priorities.
Conversions between the two are in `convert.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from meshdiag.errors import MeshdiagError
from meshdiag.model.mesh import Mesh, cached_hash, state_without_hash
from meshdiag.model.tiles import TileAssignment

Kind = Literal["replicated", "maximal", "manual", "unknown", "unreduced", "tiled", "tuple"]

#: XLA's print order of subgroup types (`kOrderedTypes`): manual < unreduced < replicated
SUBGROUP_ORDER = ("maximal", "manual", "unreduced", "replicated")


@dataclass(frozen=True)
class HloSharding:
    kind: Kind
    tile: TileAssignment | None = None
    #: the last tile dim is a replication group (`last_tile_dim_replicate`)
    replicate_on_last: bool = False
    #: types of the trailing subgroup dims (`last_tile_dims={manual, replicated}`)
    subgroup_types: tuple[str, ...] = ()
    #: device of a `maximal` sharding
    device: int | None = None
    #: elements of a tuple sharding
    elements: tuple[HloSharding, ...] = ()
    #: `shard_as N` / `shard_like N`
    shard_group: tuple[Literal["shard_as", "shard_like"], int] | None = None
    #: metadata entries as printed (`op_name="a" source_line=3`), ignored by equality
    metadata: tuple[str, ...] = field(default=(), compare=False)
    #: the named (V3) form this was read from, if any; ignored by equality
    named: NamedSharding | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        """The structural facts every sharding keeps, checked when it is built (parsers
        normalise to XLA's canonical form on top: `normalize.normal_form`)."""
        if (self.kind == "tiled") != (self.tile is not None):
            raise MeshdiagError(
                f"a {self.kind} sharding {'needs' if self.kind == 'tiled' else 'has no'} tile assignment"
            )
        if self.replicate_on_last and self.subgroup_types:
            raise MeshdiagError("last_tile_dim_replicate and last_tile_dims are exclusive")
        if self.tile is not None and self.num_subgroup_dims > self.tile.rank:
            raise MeshdiagError(
                f"{self.num_subgroup_dims} subgroup dims but the tile assignment has rank "
                f"{self.tile.rank}"
            )
        bad = [t for t in self.subgroup_types if t not in SUBGROUP_ORDER]
        if bad:
            raise MeshdiagError(f"unknown subgroup type {bad[0]!r}")
        if self.kind == "maximal" and (self.device is None or self.device < 0):
            raise MeshdiagError(f"a maximal sharding needs a device id >= 0, got {self.device}")
        if self.elements and self.kind != "tuple":
            raise MeshdiagError(f"a {self.kind} sharding has no elements")

    __hash__ = cached_hash
    __getstate__ = state_without_hash

    # -- constructors --------------------------------------------------------------------
    @classmethod
    def replicated(cls) -> HloSharding:
        return cls("replicated")

    @classmethod
    def maximal(cls, device: int) -> HloSharding:
        return cls("maximal", device=device)

    @classmethod
    def tiled(
        cls,
        tile: TileAssignment,
        *,
        replicate_on_last: bool = False,
        subgroup_types: tuple[str, ...] = (),
    ) -> HloSharding:
        return cls(
            "tiled", tile=tile, replicate_on_last=replicate_on_last, subgroup_types=subgroup_types
        )

    @classmethod
    def tuple_of(cls, elements: list[HloSharding] | tuple[HloSharding, ...]) -> HloSharding:
        return cls("tuple", elements=tuple(elements))

    # -- queries -------------------------------------------------------------------------
    @property
    def is_tiled(self) -> bool:
        return self.kind == "tiled"

    @property
    def is_tuple(self) -> bool:
        return self.kind == "tuple"

    @property
    def num_subgroup_dims(self) -> int:
        return (1 if self.replicate_on_last else 0) + len(self.subgroup_types)

    @property
    def data_rank(self) -> int | None:
        """Rank of the tensor this tiles (`TiledDataRank`); None when not tiled."""
        if self.tile is None:
            return None
        return self.tile.rank - self.num_subgroup_dims

    @property
    def data_dims(self) -> tuple[int, ...]:
        """Number of tiles along each tensor dimension."""
        assert self.tile is not None
        return self.tile.dims[: self.data_rank]

    @property
    def split_data_dims(self) -> tuple[int, tuple[tuple[int, int], ...]] | None:
        """(data rank, (dim, tiles) of each data dim cut in more than one tile) of a tiled
        sharding, None for other kinds: what decides whether a shape divides evenly, asked
        for every value by the checks, so worked out once per object."""
        got = self.__dict__.get("_split", False)
        if got is False:
            got = None
            if self.kind == "tiled" and self.tile is not None:
                dims = self.data_dims
                got = (len(dims), tuple((d, k) for d, k in enumerate(dims) if k > 1))
            object.__setattr__(self, "_split", got)
        return got

    @property
    def subgroup_dims(self) -> tuple[int, ...]:
        assert self.tile is not None
        return self.tile.dims[self.data_rank :]

    def subgroup_kinds(self) -> tuple[str, ...]:
        """Type of each trailing dim, `last_tile_dim_replicate` spelled as `replicated`."""
        return ("replicated",) if self.replicate_on_last else self.subgroup_types

    @cached_property
    def num_devices(self) -> int | None:
        """Devices named by the sharding itself (None when it names none); kept (a big
        file's summaries ask it twice for every picture)."""
        if self.tile is not None:
            return self.tile.num_devices
        return None

    def leaves(self) -> tuple[HloSharding, ...]:
        if self.kind == "tuple":
            return tuple(leaf for e in self.elements for leaf in e.leaves())
        return (self,)


# -- named (mesh-axis) shardings ---------------------------------------------------------


@dataclass(frozen=True)
class AxisRef:
    """A mesh axis, or the sub-axis `name:(pre)size` (middle factor of [pre, size, rest])."""

    name: str
    pre: int | None = None
    size: int | None = None

    @property
    def is_sub(self) -> bool:
        return self.pre is not None


@dataclass(frozen=True)
class DimSharding:
    axes: tuple[AxisRef, ...] = ()
    is_open: bool = False
    priority: int | None = None


@dataclass(frozen=True)
class NamedSharding:
    """Shardy's `TensorShardingAttr` / XLA's V3 NamedSharding.

    `mesh` is the resolved mesh when known (inline or looked up); `mesh_ref` the symbol name
    (`mesh` for `@mesh`) when the text referred to one.
    """

    mesh: Mesh | None
    dims: tuple[DimSharding, ...]
    mesh_ref: str | None = None
    replicated: tuple[AxisRef, ...] = ()
    unreduced: tuple[AxisRef, ...] = ()
    #: reduction of unreduced axes when not sum (`max`/`min`)
    unreduced_op: str | None = None
    #: V3 `manual={...}` axes (Shardy expresses manual axes on the enclosing op instead)
    manual: tuple[AxisRef, ...] = ()
    #: V3 whole-tensor forms `{mesh, replicated}` / `{mesh, manual}` / `{mesh, unreduced}`
    whole: Literal["replicated", "manual", "unreduced"] | None = None

    __hash__ = cached_hash
    __getstate__ = state_without_hash

    @property
    def rank(self) -> int:
        return len(self.dims)

    def with_mesh(self, mesh: Mesh) -> NamedSharding:
        from dataclasses import replace

        return replace(self, mesh=mesh)
