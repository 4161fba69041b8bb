"""Price a reshard plan: device groups, per-device buffers and bytes of every step, and the
per-device picture of what moves.

Pure: a `Plan` (from `reshard_plan`), the global shape, the element size in; a
`ReshardCost` out. Buffers come from the layout engine (XLA's padded tiles), bytes from
`collective_bytes` (the one place the ring factors live).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from meshdiag.layouts.engine import Layout, layout
from meshdiag.layouts.reshard_plan import (
    GATHER,
    PERMUTE,
    SLICE,
    Axes,
    Plan,
    State,
    Step,
    atoms_of,
    mesh_atoms,
    mesh_cuts,
)
from meshdiag.memo import RunMemos
from meshdiag.model.collective_bytes import wire_bytes
from meshdiag.model.mesh import Mesh
from meshdiag.model.named_to_tiled import named_to_hlo

#: above this many devices the per-device source lists are left out (N x N overlap test)
MAX_SOURCE_DEVICES = 1024


@dataclass(frozen=True)
class StepCost:
    step: Step
    #: devices per group (1 for all-slice; 1 for collective-permute, which has pairs)
    group_size: int
    #: device ids of each group, sorted (empty for all-slice and collective-permute)
    groups: tuple[tuple[int, ...], ...]
    #: (source, target) device pairs that move data (collective-permute only)
    pairs: tuple[tuple[int, int], ...]
    #: the formula's reference buffer per device (`collective_bytes`), padded like XLA
    buffer_shape: tuple[int, ...]
    buffer_bytes: int
    #: bytes each device receives in this step, by device id
    bytes_per_device: tuple[int, ...]

    @property
    def max_bytes(self) -> int:
        return max(self.bytes_per_device, default=0)

    @property
    def total_bytes(self) -> int:
        return sum(self.bytes_per_device)


@dataclass(frozen=True)
class DeviceMove:
    device: int
    source: tuple[tuple[int, int], ...] | None
    target: tuple[tuple[int, int], ...] | None
    #: keeps (same slice) · local (the target is part of what it holds) · receives
    action: str
    bytes_in: int
    #: devices that hold, under the source sharding, part of its target slice that it does not
    #: hold itself (None: not computed, above MAX_SOURCE_DEVICES)
    holders: tuple[int, ...] | None


@dataclass(frozen=True)
class ReshardCost:
    plan: Plan
    shape: tuple[int, ...]
    itemsize: int
    steps: tuple[StepCost, ...]
    devices: tuple[DeviceMove, ...]
    source_layout: Layout
    target_layout: Layout

    @property
    def bytes_per_device(self) -> tuple[int, ...]:
        n = self.plan.mesh.size
        return tuple(sum(s.bytes_per_device[d] for s in self.steps) for d in range(n))

    @property
    def max_bytes(self) -> int:
        return max(self.bytes_per_device, default=0)

    @property
    def total_bytes(self) -> int:
        return sum(self.bytes_per_device)


def state_layout(
    plan: Plan, state: State, shape: tuple[int, ...], memos: RunMemos | None = None
) -> Layout:
    return layout(named_to_hlo(plan.named(state)), shape, num_devices=plan.mesh.size, memos=memos)


def device_groups(mesh: Mesh, atoms: Axes, cuts: dict[str, list[int]]) -> list[tuple[int, ...]]:
    """Device ids of each group of devices that differ only in their `atoms` coordinates."""
    import numpy as np

    all_atoms = mesh_atoms(mesh, cuts)
    sizes = [a.size if a.size is not None else mesh.axis_size(a.name) for a in all_atoms]
    ids = np.asarray(mesh.ids, dtype=np.int64).reshape(sizes or [1])
    # a step's axes may be coarser than the cuts other steps needed: use the finest atoms
    inner = [all_atoms.index(x) for a in atoms for x in atoms_of(mesh, a, cuts)]
    outer = [i for i in range(len(all_atoms)) if i not in inner]
    n = math.prod(sizes[i] for i in inner)
    if all_atoms:
        ids = ids.transpose(outer + inner)
    return sorted(tuple(sorted(g)) for g in ids.reshape(-1, n).tolist())


def _buffer(lay: Layout) -> tuple[int, ...]:
    """The per-device buffer (every present device has the same padded one under `xla`)."""
    import numpy as np

    present = np.flatnonzero(lay.present)
    if not len(present):
        return tuple(0 for _ in lay.shape)
    return tuple(int(x) for x in lay.buffers[present[0]])


def _permute_pairs(before: Layout, after: Layout) -> list[tuple[int, int]]:
    """(source, target) for every device whose new slice it does not hold already; the source
    holds exactly that slice before (the least used one when it is replicated)."""
    holders: dict[tuple, list[int]] = {}
    for d in range(before.num_devices):
        if before.present[d]:
            key = (tuple(before.starts[d].tolist()), tuple(before.stops[d].tolist()))
            holders.setdefault(key, []).append(d)
    load: dict[int, int] = {}
    pairs = []
    for t in range(after.num_devices):
        if not after.present[t]:
            continue
        key = (tuple(after.starts[t].tolist()), tuple(after.stops[t].tolist()))
        mine = (tuple(before.starts[t].tolist()), tuple(before.stops[t].tolist()))
        if before.present[t] and mine == key:
            continue
        cands = holders.get(key)
        if not cands:  # cannot happen for a permute between equal tilings
            continue
        s = min(cands, key=lambda c: (load.get(c, 0), c))
        load[s] = load.get(s, 0) + 1
        pairs.append((s, t))
    return pairs


def _step_cost(
    plan: Plan,
    step: Step,
    shape: tuple[int, ...],
    itemsize: int,
    cuts: dict[str, list[int]],
    memos: RunMemos,
) -> StepCost:
    mesh = plan.mesh
    n_dev = mesh.size
    before = state_layout(plan, step.before, shape, memos)
    buf = _buffer(before)
    if step.kind == SLICE:
        after_buf = _buffer(state_layout(plan, step.after, shape, memos))
        return StepCost(step, 1, (), (), after_buf, 0, (0,) * n_dev)
    if step.kind == PERMUTE:
        after = state_layout(plan, step.after, shape, memos)
        pairs = _permute_pairs(before, after)
        nbytes = math.prod(buf) * itemsize
        per = [0] * n_dev
        for _, t in pairs:
            per[t] += wire_bytes(PERMUTE, nbytes, 2)
        return StepCost(step, 1, (), tuple(pairs), buf, nbytes, tuple(per))
    groups = device_groups(mesh, step.group_axes, cuts)
    n = len(groups[0]) if groups else 1
    if step.kind == GATHER:  # the result: the operand times each dim's gathered factor
        factors = [math.prod(_atom_size(mesh, a) for a in axes) for axes in step.axes]
        buf = tuple(b * f for b, f in zip(buf, factors, strict=True))
    nbytes = math.prod(buf) * itemsize
    each = wire_bytes(step.kind, nbytes, n)
    return StepCost(step, n, tuple(groups), (), buf, nbytes, (each,) * n_dev)


def _atom_size(mesh: Mesh, a) -> int:
    return a.size if a.size is not None else mesh.axis_size(a.name)


def _moves(src: Layout, dst: Layout, bytes_in: tuple[int, ...]) -> tuple[DeviceMove, ...]:
    import numpy as np

    n = src.num_devices
    overlap = None
    if n <= MAX_SOURCE_DEVICES and src.rank:
        lo = np.maximum(dst.starts[:, None, :], src.starts[None, :, :])
        hi = np.minimum(dst.stops[:, None, :], src.stops[None, :, :])
        overlap = np.all(hi > lo, axis=2) & dst.present[:, None] & src.present[None, :]
        # ... but not the devices that hold only what d holds already (its replicas)
        inside = (
            np.all(
                (src.starts[None, :, :] >= src.starts[:, None, :])
                & (src.stops[None, :, :] <= src.stops[:, None, :]),
                axis=2,
            )
            & src.present[:, None]
        )
        overlap &= ~inside
    out = []
    for d in range(n):
        s = _slices(src, d)
        t = _slices(dst, d)
        if s == t:
            action = "keeps"
        elif t is None or (
            s is not None
            and all(a0 <= b0 and b1 <= a1 for (a0, a1), (b0, b1) in zip(s, t, strict=True))
        ):
            action = "local"
        else:
            action = "receives"
        holders = None
        if overlap is not None:
            holders = tuple(int(x) for x in np.flatnonzero(overlap[d]) if x != d)
        out.append(DeviceMove(d, s, t, action, bytes_in[d], holders))
    return tuple(out)


def _slices(lay: Layout, d: int) -> tuple[tuple[int, int], ...] | None:
    if not lay.present[d]:
        return None
    return tuple(zip(lay.starts[d].tolist(), lay.stops[d].tolist(), strict=True))


def cost_plan(
    plan: Plan, shape: tuple[int, ...], itemsize: int, memos: RunMemos | None = None
) -> ReshardCost:
    """Every step's groups, buffer and bytes per device, and each device's move. A step's
    result is the next step's operand: each layout is computed once (the run's `memos`)."""
    memos = RunMemos() if memos is None else memos
    states = [plan.source, plan.target] + [
        x for s in plan.steps for x in (s.before, s.after, s.axes)
    ]
    cuts = mesh_cuts(plan.mesh, states)  # the planner may have cut atoms on the way
    steps = tuple(_step_cost(plan, s, shape, itemsize, cuts, memos) for s in plan.steps)
    src = state_layout(plan, plan.source, shape, memos)
    dst = state_layout(plan, plan.target, shape, memos)
    per = tuple(sum(s.bytes_per_device[d] for s in steps) for d in range(plan.mesh.size))
    return ReshardCost(plan, shape, itemsize, steps, _moves(src, dst, per), src, dst)
