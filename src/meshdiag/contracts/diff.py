"""`meshdiag diff A B --format json`: two shardings, or two dumps, compared by per-device
slices."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, RootModel

from meshdiag.contracts._base import Doc, Range, Version

Verdict = Literal["same", "permuted", "different"]


class Side(Doc):
    input: str = Field(description="the sharding as given")
    gspmd: str = Field(description="its device assignment in GSPMD text")


class DeviceDiff(Doc):
    device: int = Field(ge=0)
    a: list[Range] | None = Field(description="the slice the device holds under A (null: none)")
    b: list[Range] | None = Field(description="the slice the device holds under B (null: none)")
    same: bool
    b_slice_held_under_a_by: list[int] = Field(
        description="devices that hold this device's B slice under A (where it can come from)"
    )


class ShardingDiffDocument(Doc):
    """Two shardings compared by the slice each device holds."""

    version: Version
    a: Side
    b: Side
    shape_given: bool = Field(description="false: compared per tile, no --shape given")
    verdict: Verdict = Field(
        description="same layout; the same tiles on another device order; or different tiles"
    )
    note: str | None
    shape: list[int] = Field(description="the tensor shape (tile counts without --shape)")
    num_devices: int = Field(ge=0)
    differing_devices: list[int] = Field(description="devices whose slice differs")
    devices: list[DeviceDiff]


class ValueSide(Doc):
    line: int = Field(ge=1)
    column: int | None = Field(ge=1)
    sharding: str = Field(description="the annotation as written")
    shape: list[int] | None
    local_shape: list[int] | None


class ValueDiff(Doc):
    file: str | None = Field(description="the file, relative to the directories compared")
    module: str | None = Field(description="the module (and pass-dump section)")
    module_occurrence: int = Field(
        ge=0,
        description="k for the k+1-th module of that name and section in its file (a pass "
        "dump prints some sections many times)",
    )
    name: str = Field(description="the value's name, as in inspect")
    occurrence: int = Field(ge=0, description="k for the k+1-th value of that name")
    status: Literal["same", "permuted", "different", "only-a", "only-b", "not-compared"]
    reason: str | None = Field(description="why it was not compared, or a note")
    a: ValueSide | None
    b: ValueSide | None
    differing_devices: list[int] = Field(None, description="present when compared")
    num_devices: int = Field(None, description="present when compared")


class ReadProblem(Doc):
    side: Literal["a", "b"]
    path: str
    line: int | None = Field(ge=1)
    column: int | None = Field(ge=1)
    message: str = Field(description="what could not be read (the MD001 message)")


class DumpDiffDocument(Doc):
    """Two dumps compared value by value."""

    version: Version
    a: str = Field(description="the first path")
    b: str = Field(description="the second path")
    values: list[ValueDiff]
    problems: list[ReadProblem] = Field(
        description="parts of the dumps that could not be read: their values were not "
        "compared (exit code 2); the first 1,000"
    )
    problem_count: int = Field(ge=0, description="how many there were in all")


class DiffDocument(RootModel[ShardingDiffDocument | DumpDiffDocument]):
    """Two shardings or two dumps compared by per-device slices (one of two documents)."""


DOCUMENTS = {"diff": DiffDocument}
