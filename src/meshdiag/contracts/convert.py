"""`meshdiag convert SHARDING [--to T] [--derive-mesh] --format json`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from meshdiag.contracts._base import Doc, Version


class Derived(Doc):
    """What XLA's Shardy import makes of the sharding (`--derive-mesh`)."""

    gspmd: str = Field(description="the sharding in GSPMD text (V2)")
    derived_mesh: str | None = Field(description="the mesh it derives (null: not tiled)")
    derived_sharding: str | None = Field(description="the sharding on that mesh (Shardy)")
    fits: list[str] = Field(description="meshes on which a plain PartitionSpec expresses it")


class ConvertDocument(Doc):
    """A sharding in another notation, and/or the mesh XLA's import derives from it.

    `to`, `output` and `note` are present with --to (the default when --derive-mesh is not
    given), `derive` with --derive-mesh.
    """

    version: Version
    input: str = Field(description="the sharding as given")
    to: Literal["gspmd", "gspmd-v1", "gspmd-v3", "sdy", "pspec"] = Field(None)
    output: str = Field(None, description="the sharding in the --to notation")
    note: str | None = Field(None, description="the mesh the output is on, when it needs one")
    derive: Derived = Field(None)


DOCUMENTS = {"convert": ConvertDocument}
