"""`meshdiag comms PATH... --format json`: every collective, the mesh axes it runs over and
the bytes it moves."""

from __future__ import annotations

from pydantic import Field

from meshdiag.comms.groups import Form
from meshdiag.comms.model import Kind
from meshdiag.comms.report import MeshSource
from meshdiag.contracts._base import Doc, Finding, Version


class Collective(Doc):
    kind: Kind
    op: str = Field(description="the op as written: all-gather-start, sdy.all_gather, ...")
    name: str = Field(description="its result's name")
    line: int = Field(ge=1)
    column: int = Field(ge=1)
    computation: str | None = Field(description="the HLO computation it sits in")
    async_: bool = Field(alias="async", description="a -start op or inside an async wrapper")
    shapes: list[str] = Field(description="the per-device results, e.g. f32[16,8]")
    dtype: str | None
    replica_groups: str | None = Field(description="replica_groups as written")
    replica_groups_form: Form | None
    groups: list[list[int]] | None = Field(description="device ids per group, when known")
    group_size: int | None
    source_target_pairs: list[tuple[int, int]] | None
    dimensions: list[int] = Field(description="HLO dimensions= (gather / scatter dims)")
    axes: list[str] | None = Field(description="mesh (sub-)axes the groups run over; null: none")
    axes_mesh: MeshSource | None = Field(description="which mesh `axes` names")
    off_mesh: bool = Field(description="no axis of the mesh gives these groups (MD203)")
    bytes_sent: int | None = Field(description="per device; null when unknown")
    bytes_received: int | None
    bytes_per_device: int | None
    bytes_total: int | None = Field(description="over all devices")
    exact: bool = Field(description="false: an upper bound")
    gathered_over: int | None = Field(description="all-gathers: devices the result gathers")
    op_name: str | None = Field(description="metadata op_name")
    source: str | None = Field(description="metadata source_file:source_line")


class Totals(Doc):
    collectives: int = Field(ge=0)
    bytes_per_device: int = Field(ge=0)
    bytes_total: int = Field(ge=0)


class ByOpName(Doc):
    op_name: str | None
    collectives: int = Field(ge=0)
    bytes_per_device: int = Field(ge=0)


class Module(Doc):
    name: str | None
    line: int = Field(ge=1)
    dialect: str
    section: str | None
    num_partitions: int | None
    mesh_note: str | None = Field(description="why the global mesh was not used")
    collectives: list[Collective] = Field(description="largest bytes per device first")
    totals: Totals
    by_op_name: list[ByOpName]


class File(Doc):
    path: str
    modules: list[Module]


class MeshAxes(Doc):
    axes: list[tuple[str, int]]


class RunTotals(Totals):
    modules: int = Field(ge=0)


class CommsDocument(Doc):
    """Every collective of the dumps read: groups, mesh axes, bytes per device, totals."""

    version: Version
    mesh: MeshAxes | None = Field(description="the global mesh (--mesh / config)")
    files: list[File]
    totals: RunTotals
    findings: list[Finding]


DOCUMENTS = {"comms": CommsDocument}
