"""Step 4, read back (on shapes): every device the destination's specs list, each buffer
reinterpreted as its spec, composed into one tensor; which pieces hold the source's data,
which stale memory (listed but never written), which a written buffer read in another shape.
"""

from __future__ import annotations

import math

from meshdiag.model.copy import Piece, PieceKind, Ranges, Readback, Shape
from meshdiag.simulate.compose import Placed
from meshdiag.simulate.regions import extent


def judge_readback(
    ids: tuple[int, ...],
    shape: Shape,
    regions: list[Ranges | None],
    final: list[Shape | None],
    out_shape: Shape,
    placed: Placed,
    composer: str,
) -> Readback:
    """The read-back of `placed` buffers (from `compose.compose`) against the source.

    `regions` are the source regions written per mesh position, `final` the destination's
    specs after the copy.
    """
    pieces: list[Piece] = []
    for pos, region in placed:
        if pos is None:
            continue
        spec = final[pos]
        assert spec is not None
        if math.prod(spec) == 0:
            continue
        r = regions[pos]
        if r is None:
            kind: PieceKind = "stale"
        elif extent(r) == spec:
            kind = "data"
        else:
            kind = "reinterpreted"
        matches = kind == "data" and region == r
        pieces.append(Piece(ids[pos], region, kind, r, matches))
    stale_devs = tuple(sorted(p.device for p in pieces if p.kind == "stale"))
    matches_source = out_shape == shape and all(p.matches for p in pieces)
    return Readback(out_shape, matches_source, stale_devs, tuple(pieces), composer)


def read_positions(placed: Placed) -> set[int]:
    """The mesh positions the read-back reads (zero-size buffers included)."""
    return {pos for pos, _ in placed if pos is not None}
