"""`meshdiag reshard FROM TO --shape S --mesh M --format json`: the collectives between two
layouts and the bytes they move."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from meshdiag.contracts._base import Doc, Range, Version


class MeshDoc(Doc):
    axes: list[tuple[str, int]] = Field(description="[name, size] per axis, major first")
    device_ids: list[int] = Field(description="the device at each mesh position")


class Side(Doc):
    input: str = Field(description="the sharding as given")
    sdy: str = Field(description="its dimension shardings on the mesh (Shardy)")
    gspmd: str = Field(description="its device assignment in GSPMD text")


class Step(Doc):
    kind: Literal["all-gather", "all-slice", "all-to-all", "collective-permute"]
    axes: list[list[str]] = Field(description="per tensor dim, the mesh (sub-)axes it acts on")
    src_dim: int | None = Field(description="all-to-all: the dim the axes leave")
    tgt_dim: int | None = Field(description="all-to-all: the dim the axes join")
    group_size: int = Field(ge=1)
    groups: list[list[int]] = Field(description="the device groups it runs over")
    pairs: list[tuple[int, int]] = Field(description="collective-permute: (source, target)")
    buffer_shape: list[int] = Field(description="each device's buffer before the step")
    buffer_bytes: int = Field(ge=0)
    bytes_per_device: list[int] = Field(description="bytes each device receives, by device id")
    after: str = Field(description="the dimension shardings after the step (Shardy)")


class DeviceMove(Doc):
    device: int = Field(ge=0)
    from_: list[Range] | None = Field(alias="from", description="its slice before")
    to: list[Range] | None = Field(description="its slice after")
    action: Literal["keeps", "local", "receives"] = Field(
        description="keeps its data; cuts it from what it holds; or receives data"
    )
    bytes_in: int = Field(ge=0)
    holders: list[int] | None = Field(description="devices holding the data it lacks")


class ReshardDocument(Doc):
    """The collectives that take one layout to another, and the bytes they move."""

    version: Version
    mesh: MeshDoc
    shape: list[int]
    dtype: str
    itemsize: int = Field(ge=1)
    from_: Side = Field(alias="from")
    to: Side
    fallback: bool = Field(description="true: no direct plan, gather then slice")
    steps: list[Step]
    bytes_per_device: list[int]
    max_bytes: int = Field(ge=0)
    total_bytes: int = Field(ge=0)
    devices: list[DeviceMove]


DOCUMENTS = {"reshard": ReshardDocument}
