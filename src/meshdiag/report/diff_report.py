"""`meshdiag diff` output: text lines and JSON documents for two shardings or two dumps.

Pure: a `ShardingDiff` in, lines or a JSON-ready dict out; `ValueDiff`s as they come in,
lines or pieces of the JSON document out (a dump diff is written as its values are
compared, never held whole).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from meshdiag.report.reshard_report import slices_text, table

if TYPE_CHECKING:
    from meshdiag.layouts.diff import LayoutDiff, ShardingDiff
    from meshdiag.pipeline.dump_diff import DumpDiff, ValueDiff

JSON_VERSION = 1
MAX_DEVICE_ROWS = 64


def _ids(ids: tuple[int, ...], limit: int = 16) -> str:
    text = ",".join(map(str, ids[:limit]))
    return text + (f",... ({len(ids)})" if len(ids) > limit else "")


def verdict_line(d: LayoutDiff) -> str:
    n = d.num_devices
    if d.verdict == "same":
        return f"same layout: each of the {n} devices holds the same slice under A and B"
    differ = d.differing
    what = f"{len(differ)} of {n} devices hold different data: {_ids(differ)}"
    if d.note:
        return f"different: {d.note}; {what}"
    if d.verdict == "permuted":
        return f"same tiling, another device order: {what}"
    return f"different layout: {what}"


def device_rows(d: LayoutDiff) -> list[str]:
    rows = [["device", "A", "B", "B's slice is on (under A)"]]
    shown = [x for x in d.devices if not x.same] if d.note is None else list(d.devices)
    for x in shown[:MAX_DEVICE_ROWS]:
        rows.append(
            [str(x.device), slices_text(x.a), slices_text(x.b), _ids(x.a_holders, 8) or "-"]
        )
    out = table(rows)
    if len(shown) > MAX_DEVICE_ROWS:
        out.append(f"... {len(shown) - MAX_DEVICE_ROWS} more devices (--format json lists all)")
    return out


def sharding_text(res: ShardingDiff, text_a: str, text_b: str) -> list[str]:
    from meshdiag.notation.gspmd import print_gspmd

    def label(text: str, h) -> str:
        gspmd = print_gspmd(h)
        return gspmd if text.strip() == gspmd else f"{text.strip()} = {gspmd}"

    shape = "x".join(map(str, res.diff.shape)) or "scalar"
    lines = [
        f"A: {label(text_a, res.a)}",
        f"B: {label(text_b, res.b)}",
        f"shape {shape}" if res.has_shape else f"compared per tile (no --shape): {shape} tiles",
        verdict_line(res.diff),
    ]
    if res.diff.verdict != "same":
        lines.extend(device_rows(res.diff))
    return lines


def _layout_json(d: LayoutDiff) -> dict:
    return {
        "verdict": d.verdict,
        "note": d.note,
        "shape": list(d.shape),
        "num_devices": d.num_devices,
        "differing_devices": list(d.differing),
        "devices": [
            {
                "device": x.device,
                "a": [list(r) for r in x.a] if x.a is not None else None,
                "b": [list(r) for r in x.b] if x.b is not None else None,
                "same": x.same,
                "b_slice_held_under_a_by": list(x.a_holders),
            }
            for x in d.devices
        ],
    }


def sharding_json(res: ShardingDiff, text_a: str, text_b: str) -> dict:
    from meshdiag.notation.gspmd import print_gspmd

    doc = {
        "version": JSON_VERSION,
        "a": {"input": text_a.strip(), "gspmd": print_gspmd(res.a)},
        "b": {"input": text_b.strip(), "gspmd": print_gspmd(res.b)},
        "shape_given": res.has_shape,
    }
    doc.update(_layout_json(res.diff))
    return doc


def _where(v) -> str:
    return f"line {v.line}" if v is not None else "-"


def dumps_text(
    diffs: Iterable[ValueDiff],
    path_a: str,
    path_b: str,
    *,
    details: bool,
    run: DumpDiff | None = None,
) -> Iterator[str]:
    """The text report's lines, each as soon as its value is in; the counts last, then
    what `run` (the comparison `diffs` come from) could not read of the dumps."""
    yield f"A: {path_a}"
    yield f"B: {path_b}"
    current = None
    counts: dict[str, int] = {}
    total = 0
    for vd in diffs:
        total += 1
        counts[vd.status] = counts.get(vd.status, 0) + 1
        file, module, module_k, name, k = vd.key
        where = (file, module, module_k)
        if where != current:
            current = where
            yield f"{file + ': ' if file else ''}module {module}" + (
                f" (#{module_k + 1})" if module_k else ""
            )
        label = name + (f" (#{k + 1})" if k else "")
        lines_ab = f"A {_where(vd.a)}, B {_where(vd.b)}"
        if vd.status in ("only-a", "only-b"):
            yield f"  {label}  only in {'A' if vd.status == 'only-a' else 'B'} ({lines_ab})"
            continue
        text = f"  {label}  {vd.status} ({lines_ab})"
        if vd.diff is not None and vd.status != "same":
            text += ": " + verdict_line(vd.diff)
        elif vd.reason:
            text += f": {vd.reason}"
        yield text
        if details and vd.diff is not None and vd.status != "same":
            a, b = vd.a.text if vd.a else "", vd.b.text if vd.b else ""
            yield f"      A: {a}"
            yield f"      B: {b}"
            yield from ("      " + r for r in device_rows(vd.diff))
    order = ("same", "permuted", "different", "only-a", "only-b", "not-compared")
    yield f"{total} values: " + ", ".join(f"{counts.get(s, 0)} {s}" for s in order)
    if run is not None and run.problem_count:
        yield (
            f"{run.problem_count} part(s) of the dumps could not be read; "
            "the values in them were not compared:"
        )
        for side, f in run.problems:
            yield f"  {side} {f.path}:{f.line or 1}:{f.column or 1}: {f.message}"
        if run.problem_count > len(run.problems):
            yield f"  (+{run.problem_count - len(run.problems)} more)"


def _value_json(v) -> dict | None:
    if v is None:
        return None
    return {
        "line": v.line,
        "column": v.column,
        "sharding": v.text,
        "shape": list(v.shape) if v.shape is not None else None,
        "local_shape": list(v.local_shape) if v.local_shape is not None else None,
    }


def value_json(vd: ValueDiff) -> dict:
    """One entry of the document's `values`."""
    file, module, module_k, name, k = vd.key
    entry = {
        "file": file or None,
        "module": module,
        "module_occurrence": module_k,
        "name": name,
        "occurrence": k,
        "status": vd.status,
        "reason": vd.reason,
        "a": _value_json(vd.a),
        "b": _value_json(vd.b),
    }
    if vd.diff is not None:
        entry["differing_devices"] = list(vd.diff.differing)
        entry["num_devices"] = vd.diff.num_devices
    return entry


#: values put into one `json.dumps` call: one call per value cost more than the comparing
#: (185k values: 4 s of an 11 s diff)
JSON_BATCH = 1024


def dumps_json(
    diffs: Iterable[ValueDiff], path_a: str, path_b: str, run: DumpDiff | None = None
) -> Iterator[str]:
    """The JSON document of a dump diff in pieces, written as the values come in (a batch
    of `JSON_BATCH` at a time): joined, the bytes `json.dumps` gives for the whole document
    (`{"version": ..., "a": ..., "b": ..., "values": [...], "problems": [...],
    "problem_count": ...}`; the problems are what `run`, the comparison `diffs` come from,
    could not read)."""
    head = {"version": JSON_VERSION, "a": path_a, "b": path_b, "values": []}
    yield json.dumps(head)[:-2]  # up to the values' `[`
    sep = ""
    batch: list[dict] = []
    for vd in diffs:
        batch.append(value_json(vd))
        if len(batch) >= JSON_BATCH:
            yield sep + json.dumps(batch)[1:-1]  # the entries, joined by ", "
            sep = ", "
            batch = []
    if batch:
        yield sep + json.dumps(batch)[1:-1]
    problems = [] if run is None else run.problems
    tail = {
        "problems": [
            {
                "side": side.lower(),
                "path": f.path,
                "line": f.line,
                "column": f.column,
                "message": f.message,
            }
            for side, f in problems
        ],
        "problem_count": 0 if run is None else run.problem_count,
    }
    yield "], " + json.dumps(tail)[1:]  # the values' `]`, then the rest of the document
