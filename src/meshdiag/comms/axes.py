"""Which axes of a mesh give a collective's groups.

A set of replica groups runs over the (sub-)axes S of a mesh when it equals, as a set of
device sets, the groups `groups.axis_groups(mesh, S)` gives: the devices that differ only in
their coordinates along S. On `batch=2,model=4`, `{0,1,2,3},{4,5,6,7}` runs over `model`,
`{0,4},{1,5},{2,6},{3,7}` over `batch`, `{0,2},{1,3},{4,6},{5,7}` over the sub-axis
`model:(1)2` (the major half of model), and `{0,3},{1,2},{4,7},{5,6}` over none: no axis of the mesh gives it.

The search is small: the first group fixes how many coordinates it spans along each axis
(the size of the sub-axis used there), which leaves only the sub-axis offsets to try.
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING

from meshdiag.comms.groups import mesh_groups
from meshdiag.model.sharding import AxisRef

if TYPE_CHECKING:
    from meshdiag.model.mesh import Mesh

Groups = tuple[tuple[int, ...], ...]

#: candidate axis sets tried per group set at most (meshes of many prime-factor axes)
MAX_TRIES = 4096


def _canon(rows) -> tuple:
    return tuple(sorted(tuple(sorted(int(x) for x in r)) for r in rows))


def attribute(groups: Groups, mesh: Mesh) -> tuple[AxisRef, ...] | None:
    """The (sub-)axes of `mesh` whose groups are `groups` (full axes as plain names, in mesh
    order), `()` for groups of one device each; None when no axes give them (devices outside
    the mesh, devices missing or repeated, groups of different sizes, or no axes fit)."""
    if not groups or mesh.is_maximal or mesh.is_empty:
        return None
    ids = mesh.ids
    pos_of = {d: i for i, d in enumerate(ids)}
    flat = [d for g in groups for d in g]
    if len(flat) != len(ids) or set(flat) != set(pos_of):
        return None
    n = len(groups[0])
    if any(len(g) != n for g in groups):
        return None
    shape = mesh.shape
    coords = [_unravel(pos_of[d], shape) for d in groups[0]]
    spans = [len({c[k] for c in coords}) for k in range(len(shape))]
    if math.prod(spans) != n:
        return None
    options: list[list[AxisRef | None]] = []
    for (name, size), span in zip(mesh.axes, spans, strict=True):
        if span == 1:
            options.append([None])
        elif span == size:
            options.append([AxisRef(name)])
        else:
            options.append(
                [AxisRef(name, pre, span) for pre in range(1, size + 1) if size % (pre * span) == 0]
            )
    target = _canon(groups)
    for combo in itertools.islice(itertools.product(*options), MAX_TRIES):
        refs = tuple(r for r in combo if r is not None)
        if _canon(mesh_groups(mesh, refs)) == target:
            return refs
    return None


def _unravel(pos: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for s in reversed(shape):
        pos, c = divmod(pos, s)
        out.append(c)
    return tuple(reversed(out))


def refs_text(refs: tuple[AxisRef, ...]) -> str:
    """`model`, `batch,model`, `model:(2)2`; `-` for none."""
    if not refs:
        return "-"
    return ",".join(r.name if not r.is_sub else f"{r.name}:({r.pre}){r.size}" for r in refs)
