"""Step 3, copy (on shapes): what lands where, and what the destination's specs become.

Each shard goes to the start of its device's buffer (a flat allocation); a shard larger than
its buffer is refused, as TTNN refuses it. `by-reference` then replaces the destination's specs
with the written devices' shard specs (current TTNN `copy_to_device`); `by-value` leaves the
specs as allocated (tt-metal PR #18833's bug).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from meshdiag.errors import MeshdiagError
from meshdiag.model.copy import Ranges, Shape
from meshdiag.simulate.regions import extent, region_text, shape_text

if TYPE_CHECKING:
    from meshdiag.model.mesh import Mesh


def copy_specs(
    mesh: Mesh,
    shape: Shape,
    regions: list[Ranges | None],
    allocated: list[Shape | None],
    write: str,
) -> list[Shape | None]:
    """The destination's spec per mesh position after the copy (None: not part of it)."""
    ids = mesh.ids
    final: list[Shape | None] = []
    for p in range(mesh.size):
        r, a = regions[p], allocated[p]
        if r is None:
            final.append(None if write == "by-reference" else a)
            continue
        w = extent(r)
        if a is None:
            raise MeshdiagError(
                f"device {ids[p]} has no destination buffer, but the mapper sends it source "
                f"{region_text(r, shape)}; allocate one there (--dest fresh sizes every "
                "device from its shard)"
            )
        if math.prod(w) > math.prod(a):
            raise MeshdiagError(
                f"the copy fails on device {ids[p]}: its shard {shape_text(w)} ({math.prod(w)} "
                f"elements) does not fit the destination buffer {shape_text(a)} "
                f"({math.prod(a)}); TTNN refuses it ('Host tensor has different shape'). "
                "Allocate the destination from the source's per-device specs (--dest fresh)"
            )
        final.append(w if write == "by-reference" else a)
    return final
