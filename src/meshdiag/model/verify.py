"""Shardy's verifiers as messages: what makes a mesh (`MeshAttr::verify`) or a named sharding
(`verifyTensorShardingAttr`) invalid. [] when valid. Checks and conversions call these on
the model; the notations only parse and print."""

from __future__ import annotations

from meshdiag.model.mesh import Mesh
from meshdiag.model.sharding import AxisRef, NamedSharding
from meshdiag.model.text import axis_ref_text


def mesh_problems(mesh: Mesh) -> list[str]:
    """Shardy's mesh verifier (`MeshAttr::verify`) as messages; [] when the mesh is valid."""
    msgs: list[str] = []
    ids = mesh.device_ids
    if ids is None:
        return msgs
    for d in ids:
        if d < 0:
            msgs.append(f"device id must be non-negative, got: {d}")
            break
    if not mesh.axes:
        if len(ids) > 1:
            msgs.append("axes is empty and device_ids has more than one element")
        return msgs
    n = mesh.size
    if len(ids) != n:
        msgs.append(
            "total product of axis sizes must match total number of device ids, "
            f"got: {n} != {len(ids)}"
        )
    elif sorted(ids) != list(range(n)):
        msgs.append(
            f"sorted device ids must be iota(product(axes)), got: {', '.join(map(str, sorted(ids)))}"
        )
    return msgs


def verify_named(s: NamedSharding, mesh: Mesh, rank: int | None = None) -> list[str]:
    """Shardy's `verifyTensorShardingAttr` facts as messages ([] when valid).

    Checks: maximal-mesh rules, rank, priorities, unknown axes, sub-axis bounds, duplicates,
    overlapping / mergeable sub-axes, full and sub-axis of the same axis, and the mesh order of
    `replicated` / `unreduced`. Divisibility is not a verifier error (a separate check).
    """
    msgs: list[str] = []
    msgs.extend(mesh_problems(mesh))
    if mesh.is_maximal and (s.dims or s.replicated or s.unreduced):
        msgs.append(
            "a maximal sharding can only have a sharding with rank 0 and no replicated or "
            "unreduced axes."
        )
        return msgs
    if rank is not None and rank != len(s.dims):
        msgs.append(f"sharding doesn't match tensor rank: {len(s.dims)} != {rank}")
    for i, d in enumerate(s.dims):
        if d.priority is not None and d.priority < 0:
            msgs.append(f"dim {i} has a negative priority")
        if d.priority is not None and not d.axes and not d.is_open:
            msgs.append(f"dim {i} is empty and closed but has a priority")
    lists: list[tuple[str, tuple[AxisRef, ...]]] = [("dim", d.axes) for d in s.dims]
    lists += [("replicated", s.replicated), ("unreduced", s.unreduced), ("manual", s.manual)]
    seen: list[AxisRef] = []
    known: list[AxisRef] = []
    for kind, refs in lists:
        prev: AxisRef | None = None
        for a in refs:
            if not mesh.has_axis(a.name):
                msgs.append(f'unknown axis name: "{a.name}"')
                prev = None
                continue
            if a.is_sub:
                bad = _sub_axis_problem(a, mesh.axis_size(a.name))
                if bad:
                    msgs.append(bad)
                    prev = None
                    continue
                if (
                    prev is not None
                    and prev.is_sub
                    and prev.name == a.name
                    and prev.pre * prev.size == a.pre  # type: ignore[operator]
                ):
                    msgs.append(
                        f"two consecutive sub-axes can be merged: {axis_ref_text(prev)}, {axis_ref_text(a)}"
                    )
            if a in seen:
                msgs.append(f"duplicate axis ref: {axis_ref_text(a)}")
            seen.append(a)
            known.append(a)
            prev = a
        if kind in ("replicated", "unreduced") and not _mesh_ordered(refs, mesh):
            msgs.append(f"{kind} axes are not ordered w.r.t. mesh")
    # full axis + sub-axis of the same axis, and overlapping sub-axes
    by_name: dict[str, list[AxisRef]] = {}
    for a in dict.fromkeys(known):
        by_name.setdefault(a.name, []).append(a)
    for name, refs in by_name.items():
        subs = [a for a in refs if a.is_sub]
        if subs and len(subs) != len(refs):
            msgs.append(f'both sub-axis and full-axis are used for axis name: "{name}"')
            continue
        subs.sort(key=lambda a: (a.pre, a.size))
        for x, y in zip(subs, subs[1:], strict=False):
            if x.pre * x.size > y.pre:  # type: ignore[operator]
                msgs.append(f"overlapping sub-axes: {axis_ref_text(x)}, {axis_ref_text(y)}")
    return msgs


def _sub_axis_problem(a: AxisRef, full: int) -> str | None:
    pre, size = a.pre, a.size
    assert pre is not None and size is not None
    if pre < 1:
        return f"sub-axis pre-size must be at least 1: {axis_ref_text(a)}"
    if size <= 1:
        return f"sub-axis sizes must be greater than 1: {axis_ref_text(a)}"
    if full % (pre * size):
        return (
            f"sub-axis next pre-size {pre * size} doesn't divide the size of the full axis "
            f"{full}: {axis_ref_text(a)}"
        )
    if size == full:
        return f"sub-axis size is equal to the full axis size: {axis_ref_text(a)}"
    return None


def _mesh_ordered(refs: tuple[AxisRef, ...], mesh: Mesh) -> bool:
    keys = []
    for a in refs:
        if not mesh.has_axis(a.name):
            return True  # reported as unknown already
        keys.append((mesh.axis_index(a.name), a.pre or 1))
    return keys == sorted(keys)
