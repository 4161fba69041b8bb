"""TTNN's distribution shape: the grid a mapper splits over (or a composer joins from), and
which mesh position each of its cells lands on (`get_remap_fn`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from meshdiag.errors import MeshdiagError
from meshdiag.model.copy import Shape

if TYPE_CHECKING:
    from meshdiag.model.mesh import Mesh


def distribution(
    mesh: Mesh, placements_len: int, flat: bool, override: Shape | None, what: str
) -> tuple[Shape, bool]:
    """The distribution shape and whether it is placed SUBMESH (coordinates kept).

    `(N,)` for flat (1-D) mappers and composers, else the override or the mesh shape.
    """
    n = mesh.size
    if flat:
        dist: Shape = (n,)
    else:
        dist = override if override is not None else mesh.shape
    if len(dist) != placements_len:
        raise MeshdiagError(
            f"The number of dimensions in the mesh shape {len(dist)} does not match the number "
            f"of placements in the config {placements_len} ({what} on mesh {mesh.shape_text()})"
        )
    if math.prod(dist) > n:
        raise MeshdiagError(
            f"The size of the supplied mesh shape {'x'.join(map(str, dist))} does not match the "
            f"device shape size {n} ({what})"
        )
    # compute_distribution_mode: no override, or an override that fits inside the mesh → SUBMESH
    submesh = (not flat and override is None) or (
        len(dist) == len(mesh.shape) and all(a <= b for a, b in zip(dist, mesh.shape, strict=True))
    )
    return dist, submesh


def grid_positions(mesh: Mesh, dist: Shape, submesh: bool) -> np.ndarray:
    """Mesh position of every distribution cell, row-major over `dist` (ROW_MAJOR: i → i)."""
    cells = math.prod(dist)
    if not submesh:
        return np.arange(cells, dtype=np.int64)
    coords = np.unravel_index(np.arange(cells, dtype=np.int64), dist)
    return np.ravel_multi_index(coords, mesh.shape).astype(np.int64)
