"""Pieces the documents share: the model base, the version, findings, device slices."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Doc(BaseModel):
    """A JSON object of the contract: every key listed, no other key allowed."""

    model_config = ConfigDict(extra="forbid")


Version = Literal[1]
Severity = Literal["error", "warning", "info"]
Split = Literal["xla", "chunk", "array-split", "even"]
#: a half-open [start, stop] range of one tensor dimension, in global coordinates
Range = tuple[int, int]


class Finding(Doc):
    """One check firing at one place."""

    code: str = Field(pattern=r"^MD\d{3}$", description="the check's code, e.g. MD101")
    name: str = Field(description="the check's name, e.g. mesh-mismatch")
    severity: Severity
    path: str | None = Field(description="the file, as given on the command line")
    line: int | None = Field(ge=1, description="1-based line")
    column: int | None = Field(ge=1, description="1-based column")
    message: str = Field(description="what is wrong, in one sentence")
    fix: str | None = Field(description="the concrete corrected value, when there is one")


class DeviceSlices(Doc):
    """The part of one tensor one device holds."""

    device: int = Field(ge=0)
    slices: list[Range] | None = Field(
        description="[start, stop] per tensor dimension; null when the device holds no part"
    )
    shard_shape: list[int] | None = Field(description="the shape of the part it holds")
    buffer_shape: list[int] | None = Field(
        description="its buffer, padded to the tile size under the xla split; null for none"
    )
    empty: bool = Field(description="true when the device holds no element")


IdSpace = Literal["logical", "physical"]


class DeviceAssignment(Doc):
    """The dump's logical partition -> physical device map (XLA's device_assignment)."""

    devices: list[int] = Field(description="the physical device of logical partition i, at i")
    source: str = Field(description="the file it was read from")
