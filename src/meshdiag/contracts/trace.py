"""`meshdiag trace PATH --value NAME --format json`: one value followed through a pass
sequence."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from meshdiag.contracts._base import Doc, Range, Version


class Identity(Doc):
    """What the value was followed by (from the stage it was first found in)."""

    arg: int | None = Field(ge=0, description="the entry function's argument index")
    result: int | None = Field(ge=0, description="the entry function's result index")
    loc: str | None = Field(description="its loc(...) name or HLO op_name metadata")
    name: str | None = Field(description="its name where it was found (%arg0, %tanh.1)")


class TraceStage(Doc):
    index: int = Field(ge=0, description="the stage's position in pass order")
    stage: str = Field(description="the pass, Shardy/tt-xla stage or dump section")
    path: str = Field(description="the file the stage was read from")
    status: Literal["sharded", "unsharded", "lost"] = Field(
        description="found with a sharding; found without one; or lost track (none or "
        "several values fit)"
    )
    matched_by: str = Field(description="how it was matched, or why not")
    name: str | None = Field(description="the value's name in this stage")
    line: int | None = Field(ge=1, description="the line of its annotation")
    written: list[str] = Field(description="its annotations, as written")
    gspmd: str | None = Field(description="the canonical device layout, in GSPMD text")
    mesh: str | None = Field(description="the Shardy mesh it names, when it names one")
    shape: list[int] | None = Field(description="the global shape its layout is of")
    local_shape: list[int] | None = Field(
        description="the per-device shape the stage writes (after SPMD partitioning)"
    )
    partitioned: bool = Field(description="the stage's shapes are per device")
    change: Literal["first", "same", "changed", "unknown"] = Field(
        description="against the last stage the value was found in: what each device holds"
    )
    how: str = Field(description="how it changed, or a note")
    compared_with: int | None = Field(ge=0, description="the stage it was compared with")
    differing_devices: list[int] = Field(description="devices whose data changed")
    slices: list[list[Range] | None] | None = Field(
        description="per device, [start, stop] per dim (null: no part); null without a layout"
    )


class TraceDocument(Doc):
    """One value's sharding at every stage of a pass sequence, and the first change."""

    version: Version
    path: str
    program: str = Field(description="the program traced (module_NNNN.<name>, or a module)")
    value: str = Field(description="--value as given")
    identity: Identity
    anchor_stage: int = Field(ge=0, description="the stage --value was found in first")
    first_change: int | None = Field(
        ge=0, description="the first stage where what a device holds changed; null: none"
    )
    stages: list[TraceStage]


DOCUMENTS = {"trace": TraceDocument}
