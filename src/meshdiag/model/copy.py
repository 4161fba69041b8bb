"""What a simulated host→device copy leaves behind: each device after the copy, the pieces of
the read-back tensor, and the tensor dims a TTNN mapper split (for MD105).

Plain data: `meshdiag.simulate` computes these, the MD105/MD106 checks judge them, the report
prints them. Regions are half-open index ranges per tensor dim.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: a region of a tensor: one half-open (start, stop) per dim
Ranges = tuple[tuple[int, int], ...]
Shape = tuple[int, ...]


@dataclass(frozen=True)
class DeviceCopy:
    """One device after the copy."""

    device: int
    position: int  # row-major index in the mesh
    coord: tuple[int, ...]
    #: source region copied to this device (half-open per dim); None when nothing was written
    written: Ranges | None
    #: destination spec before the copy / after it (None = no buffer / not part of the tensor)
    allocated: Shape | None
    dest_shape: Shape | None
    #: read-back includes this device's buffer although nothing was written to it
    stale: bool
    #: written, but the destination spec differs from the shard (read back reinterpreted)
    mismatched: bool
    #: for a device without data: the zero-size spec it should have (`(1,0,32,32)`), if any
    empty_shape: Shape | None
    #: first/last written value as it sits in the buffer (data mode) or as the source holds
    #: it (symbolic); checksum: the exact sum of the source values written there
    first: float | None = None
    last: float | None = None
    checksum: float | None = None

    @property
    def shard_shape(self) -> Shape | None:
        return None if self.written is None else tuple(b - a for a, b in self.written)

    def to_json(self) -> dict:
        return {
            "device": self.device,
            "coord": list(self.coord),
            "dest_shape": list(self.dest_shape) if self.dest_shape is not None else None,
            "written": [list(r) for r in self.written] if self.written is not None else None,
            "stale": self.stale,
        }


PieceKind = Literal["data", "stale", "reinterpreted"]


@dataclass(frozen=True)
class Piece:
    """One device buffer's place in the read-back tensor."""

    device: int
    region: Ranges  # in read-back coordinates
    kind: PieceKind
    source: Ranges | None  # the source region written to that device
    matches: bool


@dataclass(frozen=True)
class Readback:
    shape: Shape
    matches_source: bool
    stale_devices: tuple[int, ...]
    pieces: tuple[Piece, ...]
    composer: str

    @property
    def differing(self) -> tuple[Piece, ...]:
        return tuple(p for p in self.pieces if not p.matches)

    def to_json(self) -> dict:
        return {
            "shape": list(self.shape),
            "matches_source": self.matches_source,
            "stale_devices": list(self.stale_devices),
        }


@dataclass(frozen=True)
class ShardedDim:
    """A tensor dim split `shards` ways, with the device ids at each shard index (for MD105)."""

    dim: int
    size: int
    shards: int
    ids_by_index: tuple[tuple[int, ...], ...]
