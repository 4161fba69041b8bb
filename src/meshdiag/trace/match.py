"""Find one value in the stages of a pass sequence: what the user's `--value` names, what
identifies it once found, and where that identity is in each stage — or "lost track" when
no value, or several, fit. Pure: `Stage`s in, `Found`s out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from meshdiag.errors import MeshdiagError
from meshdiag.trace.read import ARG_NAME, LOC_REF, OP_NAME, RESULT_NAME, STEM, loc_name

if TYPE_CHECKING:
    from meshdiag.model.sharding import HloSharding
    from meshdiag.trace.read import Occurrence, Stage

SHARDED, UNSHARDED, LOST = "sharded", "unsharded", "lost"

_INDEX_QUERY = re.compile(r"^(arg|result)\s*[:#]\s*(\d+)$")
_LOC_QUERY = re.compile(r'^loc\(\s*"?(.*?)"?\s*\)$')


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
    if m := ARG_NAME.match(t):
        return Query(t, arg=int(m.group(1)), name=t)
    if m := RESULT_NAME.match(t):
        return Query(t, result=int(m.group(1)), name=t)
    if m := _LOC_QUERY.match(t):
        return Query(t, loc=m.group(1))
    if t.startswith("%"):
        return Query(t, name=t)
    return Query(t, name="%" + t, loc=t)  # an HLO name without %, or an op_name


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
            from meshdiag.notation.gspmd import print_gspmd

            el = h.elements[n]
            return Found(SHARDED, o, el, (print_gspmd(el),), f"result {n} (ROOT tuple element)")
        return Found(LOST, how=f"the ROOT tuple has {len(h.elements)} elements")
    if n == 0 and not is_tuple_root:
        return Found(SHARDED, o, h, o.written, "result 0 (ROOT)")
    return Found(LOST, how=f"the ROOT is not a tuple with element {n}")


def _print(h: HloSharding) -> str:
    from meshdiag.notation.gspmd import print_gspmd

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
                f"loc({a})" for a in stage.aliases if loc_name(a, stage.aliases) == ident.loc
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
                (lambda o: o.stem == STEM.sub("", ident.name or ""), "name stem"),
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
                o for o in stage.occurrences if o.stem == STEM.sub("", ident.name) and same_op(o)
            ]
            how = f"name stem {STEM.sub('', ident.name)} and op"
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


def anchor_of(stages: list[Stage], q: Query) -> tuple[int, Occurrence] | None:
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


def unannotated_anchor(stages: list[Stage], q: Query) -> tuple[int, Identity] | None:
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
                om = OP_NAME.search(text)
                loc = om.group(1) if om else None
            else:
                refs = LOC_REF.findall(text)
                loc = loc_name(refs[-1], s.aliases) if refs else None
            return s.index, Identity(loc=loc, name=q.name)
    return None


def identity_of(q: Query, occ: Occurrence, stage: Stage) -> Identity:
    if q.result is not None:
        return Identity(result=q.result)
    if occ.arg is not None:
        return Identity(arg=occ.arg, name=occ.name)
    if occ.result is not None:
        return Identity(result=occ.result)
    return Identity(loc=occ.loc, name=occ.name, op=occ.op)


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
