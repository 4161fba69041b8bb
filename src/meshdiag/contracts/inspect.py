"""`meshdiag inspect PATH... --format json [--layouts]`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from meshdiag.contracts._base import DeviceAssignment, DeviceSlices, Doc, Finding, IdSpace, Version


class MeshDecl(Doc):
    """A mesh a module declares."""

    name: str = Field(description="its symbol, without '@'")
    axes: list[tuple[str, int]] | None = Field(
        description="[name, size] per axis; null when the text did not parse (see text)"
    )
    device_ids: list[int] | None = Field(description="device at each mesh position")
    line: int = Field(ge=1)
    column: int = Field(ge=1)
    source: Literal["sdy.mesh", "xla.sdy.meshes", "inline"] = Field(
        description="an sdy.mesh op, the xla.sdy.meshes module attribute, or inline in a sharding"
    )
    text: str | None = Field(description="the mesh as written, when it did not parse")


class Diagnostic(Doc):
    """A compiler diagnostic printed in the dump."""

    severity: Literal["error", "warning", "note", "remark"]
    message: str
    line: int = Field(ge=1)
    location: str | None = Field(description="the file:line:col the diagnostic names")


class Value(Doc):
    """One sharded value."""

    name: str = Field(description="%argN, %0, %0#1, result#k, or an HLO instruction name")
    line: int = Field(ge=1)
    column: int = Field(ge=1, description="of the sharding annotation")
    kind: str = Field(
        description="its role: arg, result, op, constraint, reshard, custom_call, "
        "manual_in, manual_out, named_in, named_out"
    )
    op: str | None = Field(description="the op that carries it, when there is one")
    shape: list[int] | None = Field(description="the global shape (null when partitioned)")
    local_shape: list[int] | None = Field(description="the per-device shape, when known")
    dtype: str | None
    notation: Literal["sdy", "gspmd"]
    sharding: str = Field(description="the sharding as written")
    mesh: str | None = Field(description="the Shardy mesh symbol it refers to")
    gspmd: str | None = Field(description="its device assignment in GSPMD text (V2)")
    devices: list[DeviceSlices] | None = Field(
        None, description="with --layouts only: every device's slices (null without a shape)"
    )


class Module(Doc):
    """One module, or one pass-dump section."""

    name: str | None
    line: int = Field(ge=1)
    section: str | None = Field(description="the pass-dump section title")
    dialect: Literal["mlir", "hlo"]
    partitioned: bool
    num_partitions: int | None
    meshes: list[MeshDecl]
    diagnostics: list[Diagnostic]
    values: list[Value]


class File(Doc):
    path: str
    device_ids: IdSpace = Field(description="device numbers in this file are logical partition ids")
    device_assignment: DeviceAssignment | None = Field(
        description="the dump directory's logical -> physical device map "
        "(compile_options.textproto), when it has one"
    )
    modules: list[Module]


class InspectDocument(Doc):
    """Every module, mesh and sharded value of the dumps read, and the findings."""

    version: Version
    files: list[File]
    findings: list[Finding]


DOCUMENTS = {"inspect": InspectDocument}
