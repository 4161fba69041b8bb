"""The stages of a pass sequence as `trace` reads them: each module (or pass-dump section)
of each stage file, scanned by the IR scanner, with what identifies each sharded value in it
(its entry-function argument or result index, its `loc(...)` name or HLO `op_name`).

The scanner gives the values; the few facts it does not keep (which computation a line is
in, `parameter(N)`, `metadata={op_name=...}`, `loc(#alias)`) are read from the value's own
line of text. Pure: paths in, `Stage`s out.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from meshdiag.errors import MeshdiagError

if TYPE_CHECKING:
    from meshdiag.ir.model import ModuleReport, Value

ARG_NAME = re.compile(r"^%arg(\d+)$")
RESULT_NAME = re.compile(r"^result#(\d+)$")
STEM = re.compile(r"\.\d+$")
_PARAM = re.compile(r"\bparameter\((\d+)\)")
OP_NAME = re.compile(r'metadata=\{[^}]*?\bop_name="((?:[^"\\]|\\.)*)"')
LOC_REF = re.compile(r'loc\((#loc\d*|"(?:[^"\\]|\\.)*")')
_LOC_ALIAS = re.compile(r"^(#loc\d*)\s*=\s*loc\((.*)\)\s*$")
_QUOTED = re.compile(r'^"((?:[^"\\]|\\.)*)"(.?)')
_FUNC = re.compile(r"func\.func\s+(?:\w+\s+)?@([\w.$-]+)")


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
        return STEM.sub("", self.name)


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


def loc_name(ref: str, aliases: dict[str, str], depth: int = 0) -> str | None:
    """The name a location carries: `"name"(...)` or `"name"`, a file location as
    `file:line:col`; aliases followed; None for unknown/fused/callsite locations."""
    if depth > 8:
        return None
    if ref.startswith("#loc"):
        body = aliases.get(ref)
        return None if body is None else loc_name(body, aliases, depth + 1)
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
    refs = LOC_REF.findall(segment)
    return loc_name(refs[-1], aliases) if refs else None


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
            if om := OP_NAME.search(text):
                occ.loc = om.group(1)
        else:
            if entry and occ.kind == "arg" and (am := ARG_NAME.match(occ.name)):
                occ.arg = int(am.group(1))
                occ.loc = _arg_loc(text, occ.arg, stage.aliases)
            if entry and occ.kind == "result" and (rm := RESULT_NAME.match(occ.name)):
                occ.result, occ.root = int(rm.group(1)), True
            if occ.kind != "arg" and occ.kind != "result":
                refs = LOC_REF.findall(text)
                if refs:
                    occ.loc = loc_name(refs[-1], stage.aliases)
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
    from meshdiag.ir.scan import scan_path

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
    from meshdiag.ir.scan import expand_paths
    from meshdiag.trace.stages import classify, order_stages

    files = [sf for p in expand_paths([path]) if (sf := classify(p, path)) is not None]
    out: dict[str, list[Stage]] = {}
    for prog, sfs in order_stages(files).items():
        stages: list[Stage] = []
        for sf in sfs:
            stages.extend(_stages_of_file(sf.path, sf.name, len(stages)))
        if stages:
            out[prog or os.path.basename(os.path.normpath(path))] = stages
    return out
