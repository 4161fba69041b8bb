"""`meshdiag layout SHARDING --shape S --format json`."""

from __future__ import annotations

from pydantic import Field

from meshdiag.contracts._base import (
    DeviceAssignment,
    DeviceSlices,
    Doc,
    Finding,
    IdSpace,
    Split,
    Version,
)


class LayoutDocument(Doc):
    """The per-device slices of one tensor."""

    version: Version
    shape: list[int] = Field(description="the global tensor shape")
    split: Split
    num_devices: int | None = Field(description="devices of the mesh (null: of the sharding)")
    gspmd: str | None = Field(description="the sharding in XLA's GSPMD text (V2)")
    devices: list[DeviceSlices] = Field(description="every device, sorted by id")
    device_ids: IdSpace = Field(
        description="which ids `devices` lists: logical partition ids, or physical devices "
        "when a device assignment is given"
    )
    device_assignment: DeviceAssignment | None = Field(
        description="the --device-assignment used to map logical ids to physical devices"
    )
    findings: list[Finding] = Field(description="MD105 uneven shards; MD103/MD104 with --target")


DOCUMENTS = {"layout": LayoutDocument}
