"""`meshdiag simulate-copy ... --format json`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from meshdiag.contracts._base import Doc, Finding, Range, Split, Version


class SimMesh(Doc):
    shape: list[int] = Field(description="the mesh's axis sizes")


class DeviceCopy(Doc):
    device: int = Field(ge=0)
    coord: list[int] = Field(description="the device's coordinate in the mesh")
    dest_shape: list[int] | None = Field(description="the destination buffer's spec shape")
    written: list[Range] | None = Field(
        description="the source region copied to the device; null when nothing was"
    )
    stale: bool = Field(description="read-back includes this buffer though nothing was written")


class Readback(Doc):
    shape: list[int]
    matches_source: bool
    stale_devices: list[int]


class SimulateCopyDocument(Doc):
    """A host-to-device copy and its read-back."""

    version: Version
    mesh: SimMesh
    source_shape: list[int]
    mapper: str = Field(description="the mapper as given (replicate, shard:1, a sharding, ...)")
    split: Split = Field(description="the split rule the mapper used")
    dest: str = Field(description="fresh, uniform:SHAPE or per-device:FILE, as given")
    write: Literal["by-reference", "by-value"]
    devices: list[DeviceCopy] = Field(description="every device, sorted by id")
    readback: Readback
    findings: list[Finding]


DOCUMENTS = {"simulate-copy": SimulateCopyDocument}
