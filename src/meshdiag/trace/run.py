"""Follow one value through a pass sequence: its sharding, mesh and per-device layout at each
stage, and the first stage where what a device holds changed.

    from meshdiag.trace.run import trace_path
    result = trace_path("dump_dir/", "arg:0")

`trace_stages` orders a directory's stage files, `trace_read` reads each stage (one per
module or `IR Dump Before/After` section) with the IR scanner, `trace_match` finds the value
in each stage (or says "lost track"). Here consecutive stages where it was found are compared
by per-device slices (`sharding_diff.compare_layouts`), with per-device shapes after SPMD
partitioning recognised as tiles of the global shape.

Pure: paths in, a `Trace` out; nothing is printed here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from meshdiag.errors import MeshdiagError
from meshdiag.memo import RunMemos
from meshdiag.trace.match import (
    LOST,
    SHARDED,
    UNSHARDED,
    Found,
    Identity,
    Query,
    anchor_of,
    close_names,
    find,
    identity_of,
    parse_query,
    unannotated_anchor,
)
from meshdiag.trace.read import Stage, program_stages

if TYPE_CHECKING:
    from meshdiag.layouts.engine import Layout
    from meshdiag.model.mesh import Mesh

SAME, CHANGED, FIRST, UNKNOWN = "same", "changed", "first", "unknown"


# -- comparing consecutive stages ---------------------------------------------------------


@dataclass
class StageTrace:
    stage: Stage
    found: Found
    gspmd: str | None = None
    mesh: str | None = None
    shape: tuple[int, ...] | None = None  # the global shape the layout is of
    local_shape: tuple[int, ...] | None = None  # per-device shape written in the stage
    layout: Layout | None = None
    change: str = UNKNOWN  # first, same, changed, unknown
    how: str = ""  # how it changed, or a note
    #: the stage it was compared with (the last one the value was found in)
    compared_with: int | None = None
    differing: tuple[int, ...] = ()


@dataclass
class Trace:
    path: str
    program: str
    query: Query
    identity: Identity
    anchor: int  # the stage it was first found in
    stages: list[StageTrace]

    @property
    def first_change(self) -> StageTrace | None:
        return next((s for s in self.stages if s.change == CHANGED), None)


def _dims(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape)) if shape else "scalar"


def _mesh_text(st: StageTrace, mesh: Mesh | None) -> str | None:
    from meshdiag.pipeline.inspect import value_mesh

    o = st.found.occ
    if o is None:
        return None
    vm = value_mesh(o.value, st.stage.module, mesh)
    return None if vm is None else vm.short()


def _layout_at(st: StageTrace, shape, mesh: Mesh | None, split: str, memos: RunMemos):
    from meshdiag.layouts.engine import layout
    from meshdiag.pipeline.inspect import num_devices

    o = st.found.occ
    h = st.found.hlo
    if o is None or h is None or shape is None or h.kind == "tuple":
        return None
    n = num_devices(o.value, st.stage.module, mesh)
    if h.num_devices is not None and n is not None and h.num_devices > n:
        n = None
    try:
        return layout(h, shape, split=split, num_devices=n, memos=memos)
    except MeshdiagError:
        return None


def _holds_tiles_of(lay: Layout, local: tuple[int, ...]) -> bool:
    """`local` is the per-device buffer the layout gives (the partitioner pads to tiles)."""
    if lay.rank != len(local):
        return False
    present = lay.buffers[lay.present]
    if len(present) == 0:
        return False
    return tuple(int(x) for x in present.max(axis=0)) == tuple(local)


def _axes_of(s) -> dict[str, int] | None:
    """Axis name → tensor dim, for a Shardy sharding."""
    from meshdiag.model.sharding import NamedSharding

    if not isinstance(s, NamedSharding):
        return None
    out = {}
    for d, ds in enumerate(s.dims):
        for a in ds.axes:
            label = a.name if not a.is_sub else f"{a.name}:({a.pre}){a.size}"
            out[label] = d
    return out


def describe_change(a: StageTrace, b: StageTrace, verdict: str) -> str:
    """How the sharding changed from `a` to `b`, in words, given the slices' verdict
    (`permuted` or `different`)."""
    ha, hb = a.found.hlo, b.found.hlo
    parts: list[str] = []
    if ha is not None and hb is not None:
        if ha.kind != hb.kind:
            parts.append(f"{ha.kind}→{hb.kind}")
        elif ha.kind == "tiled":
            ta, tb = ha.data_dims, hb.data_dims
            if ta != tb:
                moved = _axis_moves(a, b)
                if moved:
                    parts.extend(moved)
                else:
                    dims = [
                        f"dim {d}: {x}→{y} tiles"
                        for d, (x, y) in enumerate(zip(ta, tb, strict=False))
                        if x != y
                    ]
                    parts.extend(dims or [f"tiles {ta}→{tb}"])
            elif verdict == "permuted":
                parts.append("device order (same tiling)")
            else:
                parts.append("device assignment")
            if ha.replicate_on_last != hb.replicate_on_last:
                parts.append(
                    "now partially replicated" if hb.replicate_on_last else "no longer replicated"
                )
    if a.mesh and b.mesh and a.mesh != b.mesh:
        parts.append(f"mesh <{a.mesh}>→<{b.mesh}>")
    return "; ".join(parts)


def _axis_moves(a: StageTrace, b: StageTrace) -> list[str]:
    xa = _axes_of(a.found.occ.value.sharding) if a.found.occ else None
    xb = _axes_of(b.found.occ.value.sharding) if b.found.occ else None
    if xa is None or xb is None:
        return []
    out = []
    for ax in sorted(set(xa) | set(xb)):
        da, db = xa.get(ax), xb.get(ax)
        if da == db:
            continue
        if da is None:
            out.append(f'axis "{ax}" added on dim {db}')
        elif db is None:
            out.append(f'axis "{ax}" removed from dim {da}')
        else:
            out.append(f'axis "{ax}" moved from dim {da} to dim {db}')
    return out


def _compare(prev: StageTrace, cur: StageTrace, memos: RunMemos) -> None:
    from meshdiag.layouts.diff import SAME as V_SAME
    from meshdiag.layouts.diff import compare_layouts

    pa, pb = prev.found.status, cur.found.status
    cur.compared_with = prev.stage.index
    if pa == UNSHARDED and pb == UNSHARDED:
        cur.change, cur.how = SAME, "no sharding in either"
        return
    if pa == UNSHARDED:
        cur.change, cur.how = CHANGED, f"sharding added: {cur.gspmd or cur.found.written[0]}"
        return
    if pb == UNSHARDED:
        if cur.stage.module.partitioned and not prev.stage.module.partitioned:
            cur.change = UNKNOWN
            cur.how = "annotation dropped by SPMD partitioning (shapes are per device now)"
        elif cur.stage.module.partitioned:
            cur.change, cur.how = UNKNOWN, "annotation dropped (shapes are per device)"
        else:
            cur.change, cur.how = CHANGED, "sharding removed"
        return
    if prev.shape is not None and cur.shape is not None and prev.shape != cur.shape:
        cur.change = CHANGED
        cur.how = f"shape {_dims(prev.shape)}→{_dims(cur.shape)}"
        return
    la, lb = prev.layout, cur.layout
    note = ""
    if la is None or lb is None:
        ha, hb = prev.found.hlo, cur.found.hlo
        if ha is None or hb is None or "tuple" in (ha.kind, hb.kind):
            cur.change, cur.how = UNKNOWN, "not compared (a sharding did not parse)"
            return
        from meshdiag.layouts.diff import rank_of, tile_shape
        from meshdiag.layouts.engine import layout

        try:
            dims = tile_shape(ha, hb, rank_of(ha, hb))
            n = max(x for x in (ha.num_devices, hb.num_devices, 1) if x is not None)
            la, lb = (
                layout(ha, dims, num_devices=n, memos=memos),
                layout(hb, dims, num_devices=n, memos=memos),
            )
        except MeshdiagError as e:
            cur.change, cur.how = UNKNOWN, f"not compared: {e}"
            return
        note = "compared per tile (no global shape)"
    try:
        diff = compare_layouts(la, lb)
    except MeshdiagError as e:
        cur.change, cur.how = UNKNOWN, f"not compared: {e}"
        return
    cur.differing = diff.differing
    if diff.verdict == V_SAME:
        cur.change = SAME
        how = []
        if prev.mesh and cur.mesh and prev.mesh != cur.mesh:
            how.append(f"same slices, mesh <{prev.mesh}>→<{cur.mesh}>")
        cur.how = "; ".join(how + ([note] if note else []))
        return
    cur.change = CHANGED
    how = describe_change(prev, cur, diff.verdict) or diff.verdict
    if diff.note:
        how += f" ({diff.note})"
    n = len(diff.differing)
    cur.how = f"{how}; {n} of {diff.num_devices} devices hold other data" + (
        f"; {note}" if note else ""
    )


def _resolve(st: StageTrace, known_shape, mesh: Mesh | None, split: str, memos: RunMemos) -> None:
    """The stage's canonical text, mesh, shapes and layout."""
    from meshdiag.notation.gspmd import print_gspmd

    f = st.found
    if f.status != SHARDED or f.occ is None:
        return
    v = f.occ.value
    if f.hlo is not None and f.hlo.kind != "tuple":
        try:
            st.gspmd = print_gspmd(f.hlo)
        except MeshdiagError:
            st.gspmd = None
    st.mesh = _mesh_text(st, mesh)
    tuple_el = f.hlo is not None and v.hlo is not None and f.hlo is not v.hlo
    if v.shape is not None and not tuple_el:
        st.shape = v.shape
    elif v.local_shape is not None and not tuple_el:
        st.local_shape = v.local_shape
    if st.shape is not None:
        st.layout = _layout_at(st, st.shape, mesh, split, memos)
    elif st.local_shape is not None and known_shape is not None:
        lay = _layout_at(st, known_shape, mesh, split, memos)
        if lay is not None and _holds_tiles_of(lay, st.local_shape):
            st.shape, st.layout = known_shape, lay


def trace_program(
    path: str,
    program: str,
    stages: list[Stage],
    q: Query,
    *,
    mesh: Mesh | None = None,
    split: str = "xla",
) -> Trace | None:
    """The trace of `q` through one program's stages; None when no stage has it."""
    memos = RunMemos()  # a layout met again at a later stage is computed once
    anchor = anchor_of(stages, q)
    plain = unannotated_anchor(stages, q) if anchor is None else None
    if plain is not None:
        at, ident = plain
    elif anchor is None:
        if q.arg is None and q.result is None:
            return None
        ident = Identity(arg=q.arg, result=q.result)
        # an index names the value even where no stage annotates it
        if not any(find(s, ident).status != LOST for s in stages):
            return None
        at = 0
    else:
        at, occ = anchor
        ident = identity_of(q, occ, stages[at])
    out: list[StageTrace] = []
    prev: StageTrace | None = None
    known_shape = None
    for s in stages:
        st = StageTrace(s, find(s, ident))
        _resolve(st, known_shape, mesh, split, memos)
        if st.shape is not None:
            known_shape = st.shape
        if st.found.status == LOST:
            st.change, st.how = UNKNOWN, st.found.how
        elif prev is None:
            st.change, st.how = FIRST, ""
        else:
            _compare(prev, st, memos)
        if st.local_shape is not None:
            per = _dims(st.local_shape)
            if st.shape is not None:
                whole = _dims(st.shape)
                extra = f"per-device shape {per} after SPMD partitioning (a tile of {whole})"
            else:
                extra = f"per-device shape {per} after SPMD partitioning"
            st.how = f"{st.how}; {extra}" if st.how else extra
        if st.found.status != LOST:
            prev = st
        out.append(st)
    return Trace(path, program, q, ident, at, out)


def trace_path(
    path: str,
    value: str,
    *,
    module: str | None = None,
    mesh: Mesh | None = None,
    split: str = "xla",
) -> Trace:
    """Follow `value` through the pass sequence at `path` (a dump directory or a file)."""
    q = parse_query(value)
    programs = program_stages(path)
    if module is not None:
        # an exact name (or the name after module_NNNN.) wins over a part of one
        picked = {k: v for k, v in programs.items() if module in (k, k.split(".", 1)[-1])}
        if not picked:
            picked = {k: v for k, v in programs.items() if module in k}
        if not picked:
            raise MeshdiagError(
                f"{path}: no program matches --module {module!r}; programs: "
                + ", ".join(sorted(programs))
            )
        programs = picked
    if not programs:
        raise MeshdiagError(f"{path}: no IR stages found (no HLO or MLIR module in it)")
    traces = [
        t
        for prog, stages in programs.items()
        if (t := trace_program(path, prog, stages, q, mesh=mesh, split=split)) is not None
    ]
    if not traces:
        close = close_names(programs, q)
        raise MeshdiagError(
            f"{path}: no value {q.text!r} in any stage; close names: {', '.join(close)}"
        )
    if len(traces) > 1:
        raise MeshdiagError(
            f"{path}: {q.text!r} is in {len(traces)} programs ("
            + ", ".join(t.program for t in traces)
            + "); pick one with --module"
        )
    return traces[0]
