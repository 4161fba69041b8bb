"""`meshdiag reshard` output: the steps table, the per-device picture, and the JSON document.

Pure: a `ReshardCost` in, lines of text or a JSON-ready dict out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from meshdiag.layouts.reshard_cost import ReshardCost, StepCost
    from meshdiag.model.sharding import AxisRef

JSON_VERSION = 1
#: devices listed in the text picture (JSON lists every one)
MAX_DEVICE_ROWS = 64


def axis_text(a: AxisRef) -> str:
    return f"{a.name}:({a.pre}){a.size}" if a.is_sub else a.name


def bytes_text(n: int) -> str:
    """`1024 B`, `192 KiB`, `1.5 GiB`."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            break
    return f"{value:.4g} {unit}"


def slices_text(s) -> str:
    if s is None:
        return "-"
    return "[" + ", ".join(f"{a}:{b}" for a, b in s) + "]"


def _step_axes(sc: StepCost) -> str:
    st = sc.step
    if st.kind == "collective-permute":
        return "device to device"
    if st.kind == "all-to-all":
        moved = ",".join(axis_text(a) for a in st.axes[st.src_dim])  # type: ignore[index]
        return f"{moved}: dim {st.src_dim}->{st.tgt_dim}"
    parts = [
        f"dim {d}: {','.join(axis_text(a) for a in axes)}" for d, axes in enumerate(st.axes) if axes
    ]
    return "; ".join(parts)


def _groups(sc: StepCost, limit: int = 3) -> str:
    if sc.pairs:
        shown = " ".join(f"{s}->{t}" for s, t in sc.pairs[:limit])
        more = f" ... ({len(sc.pairs)} pairs)" if len(sc.pairs) > limit else ""
        return shown + more
    if not sc.groups:
        return "-"
    shown = " ".join("{" + ",".join(map(str, g)) + "}" for g in sc.groups[:limit])
    more = f" ... ({len(sc.groups)} groups)" if len(sc.groups) > limit else ""
    return shown + more


def table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def render_text(cost: ReshardCost, source: str, target: str, dtype: str) -> list[str]:
    from meshdiag.notation.gspmd import print_gspmd
    from meshdiag.notation.shardy import print_sdy_dims

    plan = cost.plan
    mesh = plan.mesh
    shape = "x".join(map(str, cost.shape)) or "scalar"
    lines = [
        f"reshard {source.strip()} -> {target.strip()}",
        f"  mesh {mesh.short()} ({mesh.size} devices), shape {shape} {dtype}",
        f"  from {print_sdy_dims(plan.named(plan.source))} = "
        f"{print_gspmd(cost.source_layout.sharding)}",
        f"  to   {print_sdy_dims(plan.named(plan.target))} = "
        f"{print_gspmd(cost.target_layout.sharding)}",
    ]
    if not cost.steps:
        lines.append("no collectives: every device already holds its target slice")
    else:
        rows = [
            ["#", "collective", "axes", "n", "groups / pairs", "buffer", "bytes/device", "after"]
        ]
        for i, sc in enumerate(cost.steps, 1):
            buf = f"{dtype}[{','.join(map(str, sc.buffer_shape))}]"
            per = bytes_text(sc.max_bytes) if sc.step.kind != "all-slice" else "0 (local)"
            rows.append(
                [
                    str(i),
                    sc.step.kind,
                    _step_axes(sc),
                    str(sc.group_size),
                    _groups(sc),
                    buf,
                    per,
                    print_sdy_dims(plan.named(sc.step.after)),
                ]
            )
        lines.append("")
        lines.extend(table(rows))
        if plan.fallback:
            lines.append(
                "note: no all-to-all/collective-permute sequence was found for some axes; they "
                "are gathered and sliced again (a cheaper sequence may exist)"
            )
    lines.append("")
    lines.append(
        f"bytes received per device: max {bytes_text(cost.max_bytes)}, "
        f"total {bytes_text(cost.total_bytes)} over {mesh.size} devices"
    )
    rows = [["device", "from", "to", "move", "bytes in", "data from"]]
    for mv in cost.devices[:MAX_DEVICE_ROWS]:
        holders = "-"
        if mv.action == "receives" and mv.holders is not None:
            holders = ",".join(map(str, mv.holders[:8])) + (" ..." if len(mv.holders) > 8 else "")
        rows.append(
            [
                str(mv.device),
                slices_text(mv.source),
                slices_text(mv.target),
                mv.action,
                str(mv.bytes_in),
                holders,
            ]
        )
    lines.extend(table(rows))
    if len(cost.devices) > MAX_DEVICE_ROWS:
        lines.append(
            f"... {len(cost.devices) - MAX_DEVICE_ROWS} more devices (--format json lists all)"
        )
    return lines


def _axes_json(axes) -> list[list[str]]:
    return [[axis_text(a) for a in d] for d in axes]


def to_json(cost: ReshardCost, source: str, target: str, dtype: str) -> dict:
    from meshdiag.notation.gspmd import print_gspmd
    from meshdiag.notation.shardy import print_sdy_dims

    plan = cost.plan
    mesh = plan.mesh

    def side(text: str, state, lay) -> dict:
        return {
            "input": text.strip(),
            "sdy": print_sdy_dims(plan.named(state)),
            "gspmd": print_gspmd(lay.sharding),
        }

    return {
        "version": JSON_VERSION,
        "mesh": {"axes": [list(a) for a in mesh.axes], "device_ids": list(mesh.ids)},
        "shape": list(cost.shape),
        "dtype": dtype,
        "itemsize": cost.itemsize,
        "from": side(source, plan.source, cost.source_layout),
        "to": side(target, plan.target, cost.target_layout),
        "fallback": plan.fallback,
        "steps": [
            {
                "kind": sc.step.kind,
                "axes": _axes_json(sc.step.axes),
                "src_dim": sc.step.src_dim,
                "tgt_dim": sc.step.tgt_dim,
                "group_size": sc.group_size,
                "groups": [list(g) for g in sc.groups],
                "pairs": [list(p) for p in sc.pairs],
                "buffer_shape": list(sc.buffer_shape),
                "buffer_bytes": sc.buffer_bytes,
                "bytes_per_device": list(sc.bytes_per_device),
                "after": print_sdy_dims(plan.named(sc.step.after)),
            }
            for sc in cost.steps
        ],
        "bytes_per_device": list(cost.bytes_per_device),
        "max_bytes": cost.max_bytes,
        "total_bytes": cost.total_bytes,
        "devices": [
            {
                "device": mv.device,
                "from": [list(r) for r in mv.source] if mv.source is not None else None,
                "to": [list(r) for r in mv.target] if mv.target is not None else None,
                "action": mv.action,
                "bytes_in": mv.bytes_in,
                "holders": list(mv.holders) if mv.holders is not None else None,
            }
            for mv in cost.devices
        ],
    }
