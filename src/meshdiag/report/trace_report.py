"""`meshdiag trace` output: text lines and the JSON document for one value's trace.

Pure: a `Trace` in, lines or a JSON-ready dict out. The picture of the layout at the first
change is drawn by `report.picture.render_text`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from meshdiag.trace.run import StageTrace, Trace

JSON_VERSION = 1


def _dims(shape) -> str:
    return "x".join(map(str, shape)) if shape else "scalar"


def _annotation(st: StageTrace) -> str:
    f = st.found
    if f.status == "lost":
        return "?"
    if f.status == "unsharded":
        return "(no sharding)"
    written = f.written[0].strip() if f.written else "?"
    if st.gspmd and st.gspmd != written:
        return f"{written} = {st.gspmd}"
    return written


def _where(st: StageTrace) -> str:
    o = st.found.occ
    return f"{o.name} line {o.line}" if o is not None else ""


def _details(st: StageTrace) -> str:
    parts = []
    if st.mesh:
        parts.append(f"mesh {st.mesh}")
    if st.local_shape is not None:
        parts.append(f"per-device shape {_dims(st.local_shape)}")
    elif st.shape is not None:
        parts.append(f"shape {_dims(st.shape)}")
    return "  ".join(parts)


def _verdict(st: StageTrace, first_change: int | None) -> str:
    if st.found.status == "lost":
        return st.how or "lost track"
    if st.change == "first":
        return "first stage with the value" + (f"; {st.how}" if st.how else "")
    if st.change == "same":
        return "same" + (f" ({st.how})" if st.how else "")
    if st.change == "changed":
        tag = "CHANGED (first change)" if st.stage.index == first_change else "changed"
        return f"{tag}: {st.how}"
    return st.how or "not compared"


def _collapsible(prev: StageTrace | None, st: StageTrace) -> bool:
    """A stage that repeats the one before it: same status, same text, nothing changed."""
    if prev is None or st.change not in ("same", "unknown"):
        return False
    if st.found.status != prev.found.status:
        return False
    if st.found.status == "lost":
        return st.how == prev.how
    return (
        st.change == "same"
        and st.found.written == prev.found.written
        and st.local_shape == prev.local_shape
        and st.mesh == prev.mesh
        and st.how == prev.how
    )


def trace_text(t: Trace, *, all_stages: bool = False, width: int = 100) -> list[str]:
    from meshdiag.report.picture import render_text

    first = t.first_change
    first_idx = first.stage.index if first is not None else None
    anchor = t.stages[t.anchor]
    lines = [
        f"trace of {t.query.text} in {t.path}",
        f"program {t.program}: {len(t.stages)} stage{'' if len(t.stages) == 1 else 's'} in pass "
        "order; followed by "
        f"{t.identity.describe()} (found as {_where(anchor) or t.query.text} in stage "
        f"{t.anchor})",
    ]
    k = 0
    stages = t.stages
    while k < len(stages):
        st = stages[k]
        run = k + 1
        if not all_stages:
            while run < len(stages) and _collapsible(stages[run - 1], stages[run]):
                run += 1
        lines.append(
            f"{st.stage.index:>3}  {st.stage.name}" + (f"  ({_where(st)})" if _where(st) else "")
        )
        lines.append(f"     {_annotation(st)}" + (f"  {_details(st)}" if _details(st) else ""))
        lines.append(f"     {_verdict(st, first_idx)}")
        if run - k == 2:
            nxt = stages[k + 1]
            lines.append(f"{nxt.stage.index:>3}  {nxt.stage.name}: the same")
        elif run - k > 2:
            last = stages[run - 1]
            lines.append(
                f"{stages[k + 1].stage.index:>3}-{last.stage.index}  "
                f"{run - k - 1} more stages, the same: {stages[k + 1].stage.name} ... "
                f"{last.stage.name}"
            )
        k = run
    if first is None:
        known = [s for s in stages if s.found.status != "lost"]
        lines.append(
            f"no change: every stage the value was found in ({len(known)} of {len(stages)}) "
            "gives each device the same data"
        )
        return lines
    lines.append(
        f"first change: stage {first.stage.index} {first.stage.name} "
        f"(compared with stage {first.compared_with}): {first.how}"
    )
    if first.layout is not None:
        lines.append(render_text(first.layout, first.gspmd, width=width, max_cells=64).rstrip("\n"))
    else:
        lines.append("(no picture: the stage gives no global shape for this value)")
    return lines


def _slices(st: StageTrace) -> list | None:
    lay = st.layout
    if lay is None:
        return None
    out = []
    for d in range(lay.num_devices):
        if not lay.present[d]:
            out.append(None)
        else:
            out.append([[int(a), int(b)] for a, b in zip(lay.starts[d], lay.stops[d], strict=True)])
    return out


def _stage_json(st: StageTrace) -> dict:
    o = st.found.occ
    return {
        "index": st.stage.index,
        "stage": st.stage.name,
        "path": st.stage.path,
        "status": st.found.status,
        "matched_by": st.found.how,
        "name": o.name if o is not None else None,
        "line": o.line if o is not None else None,
        "written": list(st.found.written),
        "gspmd": st.gspmd,
        "mesh": st.mesh,
        "shape": list(st.shape) if st.shape is not None else None,
        "local_shape": list(st.local_shape) if st.local_shape is not None else None,
        "partitioned": st.stage.module.partitioned,
        "change": st.change,
        "how": st.how,
        "compared_with": st.compared_with,
        "differing_devices": list(st.differing),
        "slices": _slices(st),
    }


def trace_json(t: Trace) -> dict:
    first = t.first_change
    ident = t.identity
    return {
        "version": JSON_VERSION,
        "path": t.path,
        "program": t.program,
        "value": t.query.text,
        "identity": {
            "arg": ident.arg,
            "result": ident.result,
            "loc": ident.loc,
            "name": ident.name,
        },
        "anchor_stage": t.anchor,
        "first_change": first.stage.index if first is not None else None,
        "stages": [_stage_json(s) for s in t.stages],
    }
