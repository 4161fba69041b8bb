"""Compare the sharded values of two dumps by per-device slices.

Values are matched by (file, module, value name, occurrence): the file by its path below the
directory given (a single file needs no name match), the module by its name and pass-dump
section, the value by its printed name and, when a name repeats in a module, by its position
among the values of that name. Each matched pair is compared with `sharding_diff`; values only
one side has are reported as such.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, replace

from meshdiag.errors import MeshdiagError
from meshdiag.ir.model import FileReport, ModuleReport, Value
from meshdiag.layouts.diff import DIFFERENT, SAME, LayoutDiff, compare_layouts, rank_of, tile_shape
from meshdiag.memo import RunMemos
from meshdiag.model.mesh import Mesh
from meshdiag.model.sharding import HloSharding

ONLY_A, ONLY_B, NOT_COMPARED = "only-a", "only-b", "not-compared"

Key = tuple[str, str, str, int]


@dataclass(frozen=True)
class ValueDiff:
    key: Key
    status: str  # same, permuted, different, only-a, only-b, not-compared
    a: Value | None
    b: Value | None
    diff: LayoutDiff | None = None
    reason: str | None = None


def _reports(path: str) -> list[FileReport]:
    from meshdiag.ir.scan import scan_paths

    if not os.path.exists(path):
        raise MeshdiagError(f"{path}: no such file or directory")
    return list(scan_paths([path]))


def _module_key(m: ModuleReport) -> str:
    return f"{m.name or '<module>'}" + (f" [{m.section}]" if m.section else "")


def _loose(k: Key) -> Key:
    """The key without the pass-dump section: `mod [IR Dump After X]` → `mod`."""
    file, module, name, n = k
    return file, module.split(" [", 1)[0], name, n


def _entries(path: str) -> Iterator[tuple[Key, Value, ModuleReport]]:
    is_dir = os.path.isdir(path)
    for rep in _reports(path):
        errors = [f for f in rep.findings if f.code == "MD001"]
        if errors and not rep.modules and not is_dir:  # a directory's binary files are skipped
            f = errors[0]
            raise MeshdiagError(f"{f.path}:{f.line or 1}: {f.message}")
        fkey = os.path.relpath(rep.path, path) if is_dir else ""
        for m in rep.modules:
            mkey = _module_key(m)
            seen: dict[str, int] = {}
            for v in m.values:
                k = seen.get(v.name, 0)
                seen[v.name] = k + 1
                yield (fkey, mkey, v.name, k), v, m


def _compare(
    a: Value,
    ma: ModuleReport,
    b: Value,
    mb: ModuleReport,
    mesh: Mesh | None,
    split: str,
    memos: RunMemos,
) -> tuple[str, LayoutDiff | None, str | None]:
    from meshdiag.pipeline.inspect import num_devices

    if a.hlo is None or b.hlo is None:
        return NOT_COMPARED, None, "its sharding did not parse (see `meshdiag inspect`)"
    shape_a, shape_b = a.shape, b.shape
    if shape_a is not None and shape_b is not None and shape_a != shape_b:
        return DIFFERENT, None, f"the shapes differ: {shape_a} and {shape_b}"
    shape = shape_a if shape_a is not None else shape_b
    try:
        if shape is None or shape_a is None or shape_b is None:  # partitioned: compare tiles
            shape = tile_shape(a.hlo, b.hlo, rank_of(a.hlo, b.hlo))
        na, nb = num_devices(a, ma, mesh), num_devices(b, mb, mesh)
        n = max(x for x in (na, nb, a.hlo.num_devices, b.hlo.num_devices, 1) if x is not None)
        # a pair of shardings on one shape is compared once a run
        diff = memos.table("dump_diff.layouts", 4096).call(
            _layout_diff, a.hlo, b.hlo, shape, split, n
        )
    except MeshdiagError as e:
        return NOT_COMPARED, None, str(e)
    return diff.verdict, diff, diff.note


def _layout_diff(a: HloSharding, b: HloSharding, shape: tuple, split: str, n: int) -> LayoutDiff:
    """`compare_layouts` of `a` and `b` on `shape`, without its devices when they are all
    the same (nothing shows them: a dump of a million values keeps a verdict each). Equal
    shardings lay out alike: one layout (which refuses what it would refuse for both)
    and no comparison."""
    from meshdiag.layouts.engine import layout

    if a == b:
        lay = layout(a, shape, split=split, num_devices=n)
        return LayoutDiff(SAME, lay.shape, lay.num_devices, (), None)
    diff = compare_layouts(
        layout(a, shape, split=split, num_devices=n),
        layout(b, shape, split=split, num_devices=n),
    )
    if diff.verdict == SAME and diff.note is None:
        diff = replace(diff, devices=())
    return diff


def diff_dumps(
    path_a: str, path_b: str, *, mesh: Mesh | None = None, split: str = "xla"
) -> list[ValueDiff]:
    """One ValueDiff per value of either dump, in A's order then B's leftovers.

    A value whose module section has no partner (a pass dump against a plain dump) is paired
    by module name alone when that side holds the module once: each section of the pass dump
    is then compared with the one plain module.
    """
    left = {k: (v, m) for k, v, m in _entries(path_a)}
    right = {k: (v, m) for k, v, m in _entries(path_b)}
    pairs: dict[Key, Key | None] = {k: k if k in right else None for k in left}
    matched_b = {k for k in pairs.values() if k is not None}
    loose_a: dict[Key, list[Key]] = {}
    loose_b: dict[Key, list[Key]] = {}
    for k in left:
        if pairs[k] is None:
            loose_a.setdefault(_loose(k), []).append(k)
    for k in right:
        if k not in matched_b:
            loose_b.setdefault(_loose(k), []).append(k)
    for lk, ka in loose_a.items():
        kb = loose_b.get(lk, [])
        if len(kb) == 1:
            for k in ka:
                pairs[k] = kb[0]
        elif len(ka) == 1 and kb:
            pairs[ka[0]] = kb[0]
    out = []
    memos = RunMemos()  # this run's
    for k, (va, ma) in left.items():
        kb = pairs[k]
        if kb is None:
            out.append(ValueDiff(k, ONLY_A, va, None))
            continue
        matched_b.add(kb)
        vb, mb = right[kb]
        status, diff, reason = _compare(va, ma, vb, mb, mesh, split, memos)
        out.append(ValueDiff(k, status, va, vb, diff, reason))
    out.extend(ValueDiff(k, ONLY_B, None, v) for k, (v, _) in right.items() if k not in matched_b)
    return out


def all_same(diffs: list[ValueDiff]) -> bool:
    return all(d.status == SAME for d in diffs)
