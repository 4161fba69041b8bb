"""What step 1 (map) decides: which source region each mesh position receives.

TTNN mappers are placed by `simulate/ttnn_placement.py`, compiler notations (GSPMD, Shardy,
PartitionSpec) by `simulate/compiler_placement.py`; both give a `Placement`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from meshdiag.model.copy import Ranges, Shape, ShardedDim
from meshdiag.notation.ttnn import Composer

if TYPE_CHECKING:
    from meshdiag.layouts.engine import Layout
    from meshdiag.model.findings import Finding


@dataclass
class Placement:
    """Per mesh position: the source region it receives (None = nothing) and, for positions
    that receive nothing, the zero-size spec they would have had."""

    regions: list[Ranges | None]
    empty_shapes: list[Shape | None]
    sharded: list[ShardedDim]
    findings: list[Finding]  # MD105, computed where the sharding is known
    #: the mapper's inverse, the read-back's composer unless one is given
    default_composer: Composer
    #: the compiler sharding's layout (for the `tiles` composer); None for TTNN mappers
    layout: Layout | None = None
