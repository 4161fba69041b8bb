"""Run a per-value rule over a module, judging each distinct value once across modules.

Pass dumps print the same annotated lines in module after module, and the scanner shares one
`LineValues` per distinct line (ir/model.py). A rule's verdict on a value depends on the
value and on a few facts about its module (the meshes it declares, its device count, the
global mesh, ...), which the rule states as a hashable key. Values found clean under those
facts are remembered, so a module whose lines were all seen before under the same facts
costs a set difference, not a Python loop over its values.

A line not seen before is judged value by value, but a rule also states what decides
whether a value has a finding (`Decides`: its sharding and shape, say, never its name or
place), and a value like one found clean under the same facts is not judged again: MLIR
prints every op line with its own SSA names, so its lines are new in every module, while
their shardings and shapes repeat (on the cold bench 220k of 251k values asked about were
such values). A value not known clean is judged itself: the messages name it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING

from meshdiag.ir.model import Value
from meshdiag.memo import IdentityTable

if TYPE_CHECKING:
    from meshdiag.checks.context import CheckContext
    from meshdiag.checks.rule import Rule
    from meshdiag.ir.model import ModuleReport
    from meshdiag.memo import RunMemos
    from meshdiag.model.findings import Finding

#: a rule's verdict on one value: (message, fix) per problem, empty when clean
Judge = Callable[[Value, Hashable, "RunMemos"], list[tuple[str, str | None]]]
#: what decides whether a value has a finding under given facts: values with equal keys are
#: both clean or both not (the fields the judge reads, but the name, which only its messages
#: show). Parsed objects (a sharding, its tiled form) go in by identity, `id(v.sharding)`:
#: hashing one calls Python for each key, `id` does not, and a run parses each distinct
#: sharding text once per module state, so equal ones are mostly the same object (one that
#: is not is judged again: on the cold bench 31k of 251k values are judged, 20k with keys
#: compared by value, and the checks take about as long; on the 252 MB MLIR file, whose
#: shapes never repeat, they are a quarter faster). Only attributes of the value itself: the
#: verdicts keep each clean key's value, so no identity in a kept key is reused
Decides = Callable[[Value], Hashable]

#: column entries all rules keep judged before starting over (each holds its values: about
#: 1 KB; a real program's every-pass dump has a few thousand distinct ones)
MAX_JUDGED = 1 << 15
_UNBOUNDED = 1 << 62  # the pair is bounded as a whole (MAX_JUDGED), never one table alone


class _Book:
    """Every rule's verdicts of a run, by (rule, facts, partitioned), and how many column
    entries they judged in all (kept as they grow: summing the tables at every module cost
    a tenth of the checks on the cold bench)."""

    __slots__ = ("by_facts", "judged")

    def __init__(self) -> None:
        self.by_facts: dict[tuple, _Verdicts] = {}
        self.judged = 0


class _Verdicts:
    """Under one (rule, facts, partitioned): the column entries judged, and of those the
    ones with findings and their verdicts; and the keys (`Decides`) of the values found
    clean, each with its value (which keeps the objects its key names by identity alive).
    All clear together: an entry judged but missing from `found` would read as clean."""

    __slots__ = ("judged", "found", "clean")

    def __init__(self) -> None:
        self.judged = IdentityTable(_UNBOUNDED)
        self.found = IdentityTable(_UNBOUNDED)
        self.clean: dict[Hashable, Value] = {}


def value_findings(
    module: ModuleReport,
    ctx: CheckContext,
    rule: Rule,
    facts: Hashable,
    judge: Judge,
    decides: Decides,
) -> list[Finding]:
    """`judge(v, facts, memos)` for every value of `module`, as findings of `rule` at each
    value's line and column. `judge` must depend on nothing but the value and `facts` (the
    memos only remember its answers), and whether it finds anything on nothing but
    `decides(v)` and `facts`."""
    items = module.items
    if not items:
        return []
    part = module.partitioned
    memos = ctx.memos
    book = memos.slot("checks.verdicts", _Book)
    # bounded whether the facts are new or not (a big file of new lines under the same
    # facts grows one table)
    if book.judged > MAX_JUDGED:
        book.by_facts.clear()
        book.judged = 0
    key = (rule.code, facts, part)
    verdicts = book.by_facts.get(key)
    if verdicts is None:
        verdicts = book.by_facts[key] = _Verdicts()
    judged, found = verdicts.judged, verdicts.found
    ids = module.item_ids()
    one_off: list[Value] = []  # Values of this module only: their verdicts are dropped after
    if not ids <= judged.ids():  # lines not seen before under these facts
        seen = judged.data  # the table's own dict (id -> (item, _)), read inline: hot loop
        clean = verdicts.clean
        before = len(seen) + len(clean)
        for item in items:
            if item.__class__ is Value:  # a line of this module only: never seen again
                k = decides(item)
                if k in clean:
                    continue
                res = judge(item, facts, memos)
                if res:
                    found.put(item, [(item, res)])
                    one_off.append(item)
                else:
                    clean[k] = item
                continue
            hit = seen.get(id(item))
            if hit is not None and hit[0] is item:
                continue
            bad = None  # made for the few items with a finding
            for v in item.partitioned if part else item.protos:  # type: ignore[attr-defined]
                k = decides(v)
                if k in clean:
                    continue
                res = judge(v, facts, memos)
                if res:
                    if bad is None:
                        bad = []
                    bad.append((v, res))
                else:
                    clean[k] = v
            seen[id(item)] = (item, True)  # `judged.put`, inline (it has no bound)
            if bad:
                found.put(item, bad)
        book.judged += len(seen) + len(clean) - before
    out: list[Finding] = []
    if not found:  # nothing under these facts ever had a finding
        return out
    dirty = ids & found.ids()
    for item in items if dirty else ():  # module order: equal-keyed findings keep it
        i = id(item)
        if i not in dirty:
            continue
        dirty.discard(i)
        lines = [item.line] if item.__class__ is Value else module.lines_of(item)  # type: ignore[attr-defined]
        for line in lines:
            for v, res in found.get(item):
                for message, fix in res:
                    out.append(
                        rule.finding(
                            message,
                            fix,
                            path=ctx.path,
                            line=line,
                            column=v.column,
                            module=module.name,
                        )
                    )
    for item in one_off:
        found.pop(item)
    return out
