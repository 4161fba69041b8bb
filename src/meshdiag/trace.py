"""Follow one value through a pass sequence: its sharding, mesh and per-device layout at each
stage, and the first stage where what a device holds changed.

    from meshdiag.trace import trace_path
    result = trace_path("dump_dir/", "arg:0")

Stages come from `trace_stages` (a dump directory) or from the modules of one file (an MLIR
`IR Dump Before/After` stream: one stage per section); each is read by the IR scanner. The
value is first found by the name the user gave (an `inspect` name, `arg:N`/`result:N`, a
`loc(...)` name or HLO `op_name`); what identifies it there — its argument or result index,
its location name, its name and op — is then looked up in every stage. Where none or several
values fit, the stage says "lost track" instead of guessing. Consecutive stages are compared
by per-device slices (`sharding_diff.compare_layouts`).

Pure: paths in, a `Trace` out; nothing is printed here.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .errors import MeshdiagError

if TYPE_CHECKING:
    from .ir.model import ModuleReport, Value
    from .layout_engine import Layout
    from .mesh import Mesh
    from .sharding import HloSharding

SHARDED, UNSHARDED, LOST = "sharded", "unsharded", "lost"
SAME, CHANGED, FIRST, UNKNOWN = "same", "changed", "first", "unknown"

_INDEX_QUERY = re.compile(r"^(arg|result)\s*[:#]\s*(\d+)$")
_ARG_NAME = re.compile(r"^%arg(\d+)$")
_RESULT_NAME = re.compile(r"^result#(\d+)$")
_LOC_QUERY = re.compile(r'^loc\(\s*"?(.*?)"?\s*\)$')
_PARAM = re.compile(r"\bparameter\((\d+)\)")
_OP_NAME = re.compile(r'metadata=\{[^}]*?\bop_name="((?:[^"\\]|\\.)*)"')
_LOC_REF = re.compile(r'loc\((#loc\d*|"(?:[^"\\]|\\.)*")')
_LOC_ALIAS = re.compile(r"^(#loc\d*)\s*=\s*loc\((.*)\)\s*$")
_QUOTED = re.compile(r'^"((?:[^"\\]|\\.)*)"(.?)')
_FUNC = re.compile(r"func\.func\s+(?:\w+\s+)?@([\w.$-]+)")
_STEM = re.compile(r"\.\d+$")


# -- what the user asked for ------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    text: str
    arg: int | None = None
    result: int | None = None
    name: str | None = None
    loc: str | None = None


def parse_query(text: str) -> Query:
    t = text.strip()
    if not t:
        raise MeshdiagError("--value is empty; give a name inspect prints, arg:N or result:N")
    if m := _INDEX_QUERY.match(t):
        n = int(m.group(2))
        return Query(t, arg=n) if m.group(1) == "arg" else Query(t, result=n)
    if m := _ARG_NAME.match(t):
        return Query(t, arg=int(m.group(1)), name=t)
    if m := _RESULT_NAME.match(t):
        return Query(t, result=int(m.group(1)), name=t)
    if m := _LOC_QUERY.match(t):
        return Query(t, loc=m.group(1))
    if t.startswith("%"):
        return Query(t, name=t)
    return Query(t, name="%" + t, loc=t)  # an HLO name without %, or an op_name


# -- stages and the values in them --------------------------------------------------------


@dataclass
class Occurrence:
    """One sharded value (one annotated line) of a stage, with what identifies it."""

    name: str
    line: int
    kind: str
    op: str | None
    value: Value  # the annotation layouts are computed from (GSPMD when the line has both)
    written: tuple[str, ...]  # every annotation of the line, as written
    arg: int | None = None
    root: bool = False  # HLO: the ENTRY's ROOT; MLIR: a result of the main function
    result: int | None = None
    loc: str | None = None

    @property
    def stem(self) -> str:
        return _STEM.sub("", self.name)


@dataclass
class Stage:
    index: int
    name: str
    path: str
    module: ModuleReport
    occurrences: list[Occurrence]
    #: the module's text lines (1-based: lines[0] is the module's first line) and its start
    lines: list[str] = field(repr=False, default_factory=list)
    first_line: int = 1
    #: HLO: the ENTRY computation's line range; MLIR: the main function's
    entry: tuple[int, int] | None = None
    aliases: dict[str, str] = field(repr=False, default_factory=dict)

    def text_at(self, line: int) -> str:
        i = line - self.first_line
        return self.lines[i] if 0 <= i < len(self.lines) else ""

    def in_entry(self, line: int) -> bool:
        return self.entry is not None and self.entry[0] <= line <= self.entry[1]


def _read_lines(path: str) -> list[str]:
    import gzip

    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            return f.read().splitlines()
    except OSError as e:
        raise MeshdiagError(f"{path}: cannot read: {e.strerror or e}") from None


def _entry_range(m: ModuleReport, lines: list[str], first: int) -> tuple[int, int] | None:
    """HLO: the ENTRY computation; MLIR: the `@main` function (else the first function)."""
    start = None
    if m.dialect == "hlo":
        for i, t in enumerate(lines):
            if t.startswith("ENTRY "):
                start = i
                break
    else:
        funcs = [(i, fm.group(1)) for i, t in enumerate(lines) if (fm := _FUNC.search(t))]
        pick = next((i for i, n in funcs if n == "main"), funcs[0][0] if funcs else None)
        start = pick
    if start is None:
        return None
    indent = len(lines[start]) - len(lines[start].lstrip())
    for j in range(start + 1, len(lines)):
        t = lines[j]
        if t.lstrip().startswith("}") and len(t) - len(t.lstrip()) <= indent:
            return first + start, first + j
    return first + start, first + len(lines) - 1


def _loc_name(ref: str, aliases: dict[str, str], depth: int = 0) -> str | None:
    """The name a location carries: `"name"(...)` or `"name"`, a file location as
    `file:line:col`; aliases followed; None for unknown/fused/callsite locations."""
    if depth > 8:
        return None
    if ref.startswith("#loc"):
        body = aliases.get(ref)
        return None if body is None else _loc_name(body, aliases, depth + 1)
    m = _QUOTED.match(ref)
    if m is None:
        return None
    name, after = m.group(1), m.group(2)
    if after == ":":  # a file location: "file.py":12:3
        rest = ref[m.end() :]
        pos = re.match(r"(\d+):(\d+)", rest)
        return f"{name}:{pos.group(1)}:{pos.group(2)}" if pos else name
    return name


def _arg_loc(signature: str, n: int, aliases: dict[str, str]) -> str | None:
    """The `loc(...)` name argument `n` carries in a function signature line."""
    at = signature.find(f"%arg{n}:")
    if at < 0:
        return None
    nxt = signature.find("%arg", at + 4)
    end = signature.find(") ->", at)
    stops = [x for x in (nxt, end) if x >= 0]
    segment = signature[at : min(stops)] if stops else signature[at:]
    refs = _LOC_REF.findall(segment)
    return _loc_name(refs[-1], aliases) if refs else None


def _occurrences(stage: Stage) -> list[Occurrence]:
    m = stage.module
    by_line: dict[tuple[str, int], Occurrence] = {}
    out: list[Occurrence] = []
    for v in m.values:
        key = (v.name, v.line)
        occ = by_line.get(key)
        if occ is not None:
            occ.written = (*occ.written, v.text)
            if occ.value.hlo is None or (v.notation == "gspmd" and occ.value.notation != "gspmd"):
                occ.value = v if v.hlo is not None else occ.value
            continue
        occ = Occurrence(v.name, v.line, v.kind, v.op, v, (v.text,))
        by_line[key] = occ
        out.append(occ)
    for occ in out:
        text = stage.text_at(occ.line)
        entry = stage.in_entry(occ.line)
        if m.dialect == "hlo":
            if entry and occ.kind == "arg" and (pm := _PARAM.search(text)):
                occ.arg = int(pm.group(1))
            occ.root = entry and text.lstrip().startswith("ROOT ")
            if om := _OP_NAME.search(text):
                occ.loc = om.group(1)
        else:
            if entry and occ.kind == "arg" and (am := _ARG_NAME.match(occ.name)):
                occ.arg = int(am.group(1))
                occ.loc = _arg_loc(text, occ.arg, stage.aliases)
            if entry and occ.kind == "result" and (rm := _RESULT_NAME.match(occ.name)):
                occ.result, occ.root = int(rm.group(1)), True
            if occ.kind != "arg" and occ.kind != "result":
                refs = _LOC_REF.findall(text)
                if refs:
                    occ.loc = _loc_name(refs[-1], stage.aliases)
    return out


_LOGGED = re.compile(r"MLIR Module ([\w.-]+):\s*$")


def _logged_stage(text: list[str], line: int, floor: int) -> str | None:
    """tt-xla's debug log prints each stage's module after `MLIR Module <stage>:`: the
    stage a module at `line` was printed for (looked for in the few lines above it)."""
    for i in range(line - 2, max(floor, line - 4) - 1, -1):
        if 0 <= i < len(text) and (m := _LOGGED.search(text[i])):
            return f"MLIR Module {m.group(1)}"
    return None


def _stages_of_file(path: str, label: str | None, start: int) -> list[Stage]:
    """One stage per module (pass-dump section) of one file. A file named on its own that
    holds no module is an error; in a directory (`label` given) it is no stage."""
    from .ir.scan import scan_path

    rep = scan_path(path)
    errors = [f for f in rep.findings if f.code == "MD001"]
    if errors and not rep.modules and label is None:
        f = errors[0]
        raise MeshdiagError(f"{f.path}:{f.line or 1}: {f.message}")
    if rep.skipped or not rep.modules:
        return []
    text = _read_lines(path)
    starts = [m.line for m in rep.modules]
    out = []
    for k, m in enumerate(rep.modules):
        lo = starts[k]
        hi = starts[k + 1] - 1 if k + 1 < len(starts) else len(text)
        lines = text[lo - 1 : hi]
        aliases = {am.group(1): am.group(2) for t in lines if (am := _LOC_ALIAS.match(t))}
        logged = _logged_stage(text, lo, starts[k - 1] if k else 0)
        if label is None:
            name = m.section or logged or (m.name or "<module>")
        elif len(rep.modules) > 1:
            name = f"{label} [{m.section or m.name or f'line {m.line}'}]"
        else:
            name = label
        st = Stage(start + len(out), name, path, m, [], lines, lo, None, aliases)
        st.entry = _entry_range(m, lines, lo)
        st.occurrences = _occurrences(st)
        out.append(st)
    return out


def program_stages(path: str) -> dict[str, list[Stage]]:
    """Program → its stages in pass order, for a dump directory or one file."""
    if not os.path.exists(path):
        raise MeshdiagError(f"{path}: no such file or directory")
    if not os.path.isdir(path):
        stages = _stages_of_file(path, None, 0)
        progs: dict[str, list[Stage]] = {}
        for s in stages:
            progs.setdefault(s.module.name or "<module>", []).append(s)
        for ss in progs.values():
            for i, s in enumerate(ss):
                s.index = i
        return progs
    from .ir.scan import expand_paths
    from .trace_stages import classify, order_stages

    files = [sf for p in expand_paths([path]) if (sf := classify(p, path)) is not None]
    out: dict[str, list[Stage]] = {}
    for prog, sfs in order_stages(files).items():
        stages: list[Stage] = []
        for sf in sfs:
            stages.extend(_stages_of_file(sf.path, sf.name, len(stages)))
        if stages:
            out[prog or os.path.basename(os.path.normpath(path))] = stages
    return out


# -- finding the value in each stage ------------------------------------------------------


@dataclass(frozen=True)
class Identity:
    """What identifies the value across stages, from where it was first found."""

    arg: int | None = None
    result: int | None = None
    loc: str | None = None
    name: str | None = None
    op: str | None = None

    def describe(self) -> str:
        if self.arg is not None:
            return f"argument {self.arg}"
        if self.result is not None:
            return f"result {self.result}"
        parts = [f"loc {self.loc!r}"] if self.loc else []
        if self.name:
            parts.append(f"name {self.name}")
        return ", ".join(parts) or "?"


@dataclass
class Found:
    status: str  # sharded, unsharded, lost
    occ: Occurrence | None = None
    #: the sharding (a tuple's element for one result of a tuple ROOT)
    hlo: HloSharding | None = None
    written: tuple[str, ...] = ()
    how: str = ""  # how it was matched, or why not


def _query_matches(stage: Stage, q: Query) -> list[Occurrence]:
    """The values of a stage the user's --value names: an index first (the entry
    function's), then the name, then the loc/op_name."""
    occs = stage.occurrences
    if q.arg is not None:
        hits = [o for o in occs if o.arg == q.arg]
        if hits or q.name is None:
            return hits
    if q.result is not None:
        f = _result(stage, q.result)
        if f.status == SHARDED and f.occ is not None:
            return [f.occ]
        if q.name is None:
            return []
    hits = [o for o in occs if q.name is not None and o.name == q.name]
    if not hits and q.loc is not None:
        hits = [o for o in occs if o.loc == q.loc]
    return hits


def _count_top_level(text: str) -> int:
    """How many comma-separated items a parenthesised list at the start of `text` holds
    (1 when it is not parenthesised)."""
    if not text.startswith("("):
        return 1
    depth, items, seen = 0, 1, False
    for ch in text:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
            if depth == 0:
                return items if seen else 0
        elif ch == "," and depth == 1:
            items += 1
        elif depth >= 1 and not ch.isspace():
            seen = True
    return items


def _result_count(stage: Stage) -> int | None:
    """How many results the entry function (HLO: its ROOT) has; None when unknown."""
    if stage.entry is None:
        return None
    lo, hi = stage.entry
    if stage.module.dialect == "hlo":
        for i in range(lo, hi + 1):
            t = stage.text_at(i).lstrip()
            if t.startswith("ROOT "):
                eq = t.find("= ")
                return _count_top_level(t[eq + 2 :]) if eq >= 0 else None
        return None
    for i in range(lo, min(hi, lo + 20) + 1):  # the signature, maybe over several lines
        t = stage.text_at(i)
        at = t.find(") -> ")
        if at >= 0:
            return _count_top_level(t[at + 5 :])
        if t.rstrip().endswith("{") and i > lo:
            break
    return None


def _result(stage: Stage, n: int) -> Found:
    """Result `n` of the stage's entry: an MLIR `result#n`, or the HLO ROOT (element `n` of a
    tuple ROOT)."""
    count = _result_count(stage)
    if count is not None and n >= count:
        return Found(LOST, how=f"lost track: the entry has {count} result(s)")
    mlir = [o for o in stage.occurrences if o.result == n]
    if mlir:
        o = mlir[0]
        return Found(SHARDED, o, o.value.hlo, o.written, f"result {n}")
    if stage.module.dialect != "hlo":
        return Found(UNSHARDED, how=f"result {n} has no sharding")
    roots = [o for o in stage.occurrences if o.root]
    if not roots:
        has_root = stage.entry is not None and any(
            stage.text_at(i).lstrip().startswith("ROOT ")
            for i in range(stage.entry[0], stage.entry[1] + 1)
        )
        if has_root:
            return Found(UNSHARDED, how="the ROOT has no sharding")
        return Found(LOST, how="no ENTRY ROOT")
    split = [o for o in roots if re.search(r"#\d+$", o.name)]
    if split:  # the scanner gives each element of a tuple ROOT as `%tuple.0#k`
        el = [o for o in split if o.name.endswith(f"#{n}")]
        if not el:
            return Found(LOST, how=f"the ROOT tuple has {len(split)} elements")
        o = el[0]
        text = _print(o.value.hlo) if o.value.hlo is not None else o.written[0]
        return Found(SHARDED, o, o.value.hlo, (text,), f"result {n} (ROOT tuple element)")
    o = roots[0]
    h = o.value.hlo
    is_tuple_root = " tuple(" in stage.text_at(o.line)
    if h is not None and h.kind == "tuple":
        if n < len(h.elements) and is_tuple_root:
            from .formats.gspmd import print_gspmd

            el = h.elements[n]
            return Found(SHARDED, o, el, (print_gspmd(el),), f"result {n} (ROOT tuple element)")
        return Found(LOST, how=f"the ROOT tuple has {len(h.elements)} elements")
    if n == 0 and not is_tuple_root:
        return Found(SHARDED, o, h, o.written, "result 0 (ROOT)")
    return Found(LOST, how=f"the ROOT is not a tuple with element {n}")


def _print(h: HloSharding) -> str:
    from .formats.gspmd import print_gspmd

    try:
        return print_gspmd(h)
    except MeshdiagError:
        return "?"


def _has_unannotated(stage: Stage, ident: Identity) -> str | None:
    """Where the value is in the stage without an annotation: why we know, or None."""
    if stage.entry is None:
        return None
    lo, hi = stage.entry
    if ident.arg is not None:
        pat = (
            re.compile(rf"\bparameter\({ident.arg}\)")
            if stage.module.dialect == "hlo"
            else re.compile(rf"%arg{ident.arg}\s*:")
        )
        if any(pat.search(stage.text_at(i)) for i in range(lo, hi + 1)):
            return f"argument {ident.arg} has no sharding"
        return None
    if ident.loc is not None:
        if stage.module.dialect == "hlo":
            needle = f'op_name="{ident.loc}"'
            n = sum(1 for i in range(lo, hi + 1) if needle in stage.text_at(i))
        else:
            refs = {f'loc("{ident.loc}"'} | {
                f"loc({a})" for a in stage.aliases if _loc_name(a, stage.aliases) == ident.loc
            }
            n = sum(1 for i in range(lo, hi + 1) if any(r in stage.text_at(i) for r in refs))
        if n == 1:
            return f"its op (loc {ident.loc!r}) has no sharding"
        if n > 1:
            return f"none of the {n} ops with loc {ident.loc!r} has a sharding"
    return None


def find(stage: Stage, ident: Identity) -> Found:
    """The value in one stage, by its identity; LOST (with why) when none or several fit."""
    if ident.result is not None:
        return _result(stage, ident.result)
    if ident.arg is not None:
        hits = [o for o in stage.occurrences if o.arg == ident.arg]
        how = f"argument {ident.arg}"
    elif ident.loc is not None:
        hits = [o for o in stage.occurrences if o.loc == ident.loc]
        how = f"loc {ident.loc!r}"
        if len(hits) > 1:
            for narrow, what in (
                (lambda o: o.name == ident.name, "name"),
                (lambda o: o.stem == _STEM.sub("", ident.name or ""), "name stem"),
                (lambda o: o.op == ident.op, "op"),
            ):
                fewer = [o for o in hits if narrow(o)]
                if len(fewer) == 1:
                    hits, how = fewer, f"{how} and {what}"
                    break
    else:
        same_op = (lambda o: True) if ident.op is None else (lambda o: o.op == ident.op)
        hits = [o for o in stage.occurrences if o.name == ident.name and same_op(o)]
        how = f"name {ident.name}"
        if not hits and ident.name is not None:
            hits = [
                o for o in stage.occurrences if o.stem == _STEM.sub("", ident.name) and same_op(o)
            ]
            how = f"name stem {_STEM.sub('', ident.name)} and op"
    if len(hits) == 1:
        o = hits[0]
        return Found(SHARDED, o, o.value.hlo, o.written, how)
    if len(hits) > 1:
        names = ", ".join(sorted({o.name for o in hits})[:6])
        return Found(LOST, how=f"lost track: {len(hits)} values fit ({names})")
    why = _has_unannotated(stage, ident)
    if why is not None:
        return Found(UNSHARDED, how=why)
    note = ""
    if ident.arg is None and ident.result is None and ident.loc is not None:
        mark = "op_name=" if stage.module.dialect == "hlo" else "loc("
        if not any(mark in t for t in stage.lines):
            note = " (the stage prints no locations)"
    return Found(LOST, how=f"lost track: no value with {ident.describe()}{note}")


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
    from .inspect import value_mesh

    o = st.found.occ
    if o is None:
        return None
    vm = value_mesh(o.value, st.stage.module, mesh)
    return None if vm is None else vm.short()


def _layout_at(st: StageTrace, shape, mesh: Mesh | None, split: str):
    from .inspect import num_devices
    from .layout_engine import layout

    o = st.found.occ
    h = st.found.hlo
    if o is None or h is None or shape is None or h.kind == "tuple":
        return None
    n = num_devices(o.value, st.stage.module, mesh)
    if h.num_devices is not None and n is not None and h.num_devices > n:
        n = None
    try:
        return layout(h, shape, split=split, num_devices=n)
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
    from .sharding import NamedSharding

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


def _compare(prev: StageTrace, cur: StageTrace) -> None:
    from .sharding_diff import SAME as V_SAME
    from .sharding_diff import compare_layouts

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
        from .layout_engine import layout
        from .sharding_diff import rank_of, tile_shape

        try:
            dims = tile_shape(ha, hb, rank_of(ha, hb))
            n = max(x for x in (ha.num_devices, hb.num_devices, 1) if x is not None)
            la, lb = (
                layout(ha, dims, num_devices=n),
                layout(hb, dims, num_devices=n),
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


def _resolve(st: StageTrace, known_shape, mesh: Mesh | None, split: str) -> None:
    """The stage's canonical text, mesh, shapes and layout."""
    from .formats.gspmd import print_gspmd

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
        st.layout = _layout_at(st, st.shape, mesh, split)
    elif st.local_shape is not None and known_shape is not None:
        lay = _layout_at(st, known_shape, mesh, split)
        if lay is not None and _holds_tiles_of(lay, st.local_shape):
            st.shape, st.layout = known_shape, lay


def _anchor(stages: list[Stage], q: Query) -> tuple[int, Occurrence] | None:
    for s in stages:
        hits = _query_matches(s, q)
        distinct = {(o.name, o.line) for o in hits}
        if len(distinct) == 1:
            return s.index, hits[0]
        if len(distinct) > 1:
            lines = ", ".join(f"{o.name} line {o.line}" for o in hits[:6])
            raise MeshdiagError(
                f"{s.path}: --value {q.text!r} fits {len(distinct)} values in stage "
                f"{s.name} ({lines}); give another name, arg:N or result:N"
            )
    return None


def _unannotated_anchor(stages: list[Stage], q: Query) -> tuple[int, Identity] | None:
    """A value the query names that no stage annotates: the first line defining it gives
    its loc/op_name (an unannotated op is followed by where it came from)."""
    if q.name is None:
        return None
    define = re.compile(r"^\s*(?:ROOT\s+)?" + re.escape(q.name) + r"(?:\s*:\s*\d+)?\s*=\s")
    for s in stages:
        if s.entry is None:
            continue
        for i in range(s.entry[0], s.entry[1] + 1):
            text = s.text_at(i)
            if not define.match(text):
                continue
            if s.module.dialect == "hlo":
                om = _OP_NAME.search(text)
                loc = om.group(1) if om else None
            else:
                refs = _LOC_REF.findall(text)
                loc = _loc_name(refs[-1], s.aliases) if refs else None
            return s.index, Identity(loc=loc, name=q.name)
    return None


def _identity(q: Query, occ: Occurrence, stage: Stage) -> Identity:
    if q.result is not None:
        return Identity(result=q.result)
    if occ.arg is not None:
        return Identity(arg=occ.arg, name=occ.name)
    if occ.result is not None:
        return Identity(result=occ.result)
    return Identity(loc=occ.loc, name=occ.name, op=occ.op)


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
    anchor = _anchor(stages, q)
    plain = _unannotated_anchor(stages, q) if anchor is None else None
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
        ident = _identity(q, occ, stages[at])
    out: list[StageTrace] = []
    prev: StageTrace | None = None
    known_shape = None
    for s in stages:
        st = StageTrace(s, find(s, ident))
        _resolve(st, known_shape, mesh, split)
        if st.shape is not None:
            known_shape = st.shape
        if st.found.status == LOST:
            st.change, st.how = UNKNOWN, st.found.how
        elif prev is None:
            st.change, st.how = FIRST, ""
        else:
            _compare(prev, st)
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


def close_names(programs: dict[str, list[Stage]], q: Query, limit: int = 8) -> list[str]:
    """Names the user may have meant: the closest value names and locs of the dump."""
    import difflib

    names: set[str] = set()
    for stages in programs.values():
        for s in stages:
            for o in s.occurrences:
                names.add(o.name)
                if o.loc:
                    names.add(o.loc)
    want = q.name or q.loc or q.text
    close = difflib.get_close_matches(want, sorted(names), n=limit, cutoff=0.5)
    return close or sorted(names)[:limit]


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
