"""A finished copy simulation: every device after the copy, the read-back, the findings, and
(data mode) the arrays; its `--format json` document."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from meshdiag.errors import MeshdiagError
from meshdiag.model.copy import DeviceCopy, Ranges, Readback, Shape
from meshdiag.simulate.data import arange_f32
from meshdiag.simulate.regions import extent, flat_index, region_sum, unravel

if TYPE_CHECKING:
    import numpy as np

    from meshdiag.model.findings import Finding
    from meshdiag.model.mesh import Mesh

JSON_VERSION = 1


@dataclass(eq=False)
class CopySimulation:
    mesh: Mesh
    shape: Shape
    mapper: str
    split: str
    dest: str
    write: str
    era: str
    stale_fill: str
    symbolic: bool
    devices: tuple[DeviceCopy, ...]  # sorted by device id
    readback: Readback
    findings: tuple[Finding, ...]
    #: data mode only: the source, each device's flat buffer, the read-back tensor
    buffers: dict[int, np.ndarray] = field(default_factory=dict, repr=False)
    readback_data: np.ndarray | None = field(default=None, repr=False)

    @property
    def source(self) -> np.ndarray | None:
        """The source tensor in data mode (`arange(prod(shape))` as float32), made on demand:
        the simulation itself gives the source's memory to the read-back once it is copied."""
        if self.symbolic:
            return None

        return arange_f32(math.prod(self.shape)).reshape(self.shape)

    def device(self, device_id: int) -> DeviceCopy:
        for d in self.devices:
            if d.device == device_id:
                return d
        raise MeshdiagError(f"device {device_id} is not in the mesh")

    def to_json(self) -> dict:
        """The `meshdiag simulate-copy --format json` document (docs/json.md,
        `contracts/simulate_copy.py`)."""
        return {
            "version": JSON_VERSION,
            "mesh": {"shape": list(self.mesh.shape)},
            "source_shape": list(self.shape),
            "mapper": self.mapper,
            "split": self.split,
            "dest": self.dest,
            "write": self.write,
            "devices": [d.to_json() for d in self.devices],
            "readback": self.readback.to_json(),
            "findings": [f.to_json() for f in self.findings],
        }


def device_results(
    mesh: Mesh,
    shape: Shape,
    regions: list[Ranges | None],
    empty_shapes: list[Shape | None],
    allocated: list[Shape | None],
    final: list[Shape | None],
    read: set[int],
    readback: Readback,
    buffers: dict[int, np.ndarray] | None,
) -> tuple[DeviceCopy, ...]:
    """Every device after the copy, sorted by device id. `read` are the mesh positions the
    read-back reads; `buffers` (data mode) give the first/last values as the buffers hold
    them, else they come from the source's index math."""
    ids = mesh.ids
    stale_set = set(readback.stale_devices)
    devices: list[DeviceCopy] = []
    for p in range(mesh.size):
        r = regions[p]
        first = last = checksum = None
        if r is not None and math.prod(extent(r)) > 0:
            if buffers is not None:
                buf = buffers[ids[p]]
                cnt = math.prod(extent(r))
                first, last = float(buf[0]), float(buf[cnt - 1])
            else:
                first = float(flat_index(shape, tuple(lo for lo, _ in r)))
                last = float(flat_index(shape, tuple(hi - 1 for _, hi in r)))
            # exact, from the region (a float64 pass over the data would cost a full read)
            checksum = float(region_sum(shape, r))
        w = None if r is None else extent(r)
        devices.append(
            DeviceCopy(
                device=ids[p],
                position=p,
                coord=tuple(int(c) for c in unravel(p, mesh.shape)),
                written=r,
                allocated=allocated[p],
                dest_shape=final[p],
                stale=ids[p] in stale_set,
                mismatched=r is not None and p in read and final[p] != w,
                empty_shape=empty_shapes[p],
                first=first,
                last=last,
                checksum=checksum,
            )
        )
    devices.sort(key=lambda d: d.device)
    return tuple(devices)
