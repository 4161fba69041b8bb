"""Run a per-value rule over a module, judging each distinct value once across modules.

Pass dumps print the same annotated lines in module after module, and the scanner shares one
`LineValues` per distinct line (ir/model.py). A rule's verdict on a value depends on the
value and on a few facts about its module (the meshes it declares, its device count, the
global mesh, ...), which the rule states as a hashable key. Values found clean under those
facts are remembered, so a module whose lines were all seen before under the same facts
costs a set difference, not a Python loop over its values.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING

from meshdiag.ir.model import Value, per_device

if TYPE_CHECKING:
    from meshdiag.checks.context import CheckContext
    from meshdiag.checks.registry import Rule
    from meshdiag.ir.model import ModuleReport
    from meshdiag.model.findings import Finding

#: a rule's verdict on one value: (message, fix) per problem, empty when clean
Judge = Callable[[Value, Hashable], list[tuple[str, str | None]]]

#: (rule code, facts, partitioned) → {id(item): item} of the column entries judged under
#: those facts, and of those that got findings: {id(item): (item, verdicts)}. Entries hold
#: their item, so ids are not reused meanwhile.
_JUDGED: dict[tuple, dict[int, object]] = {}
_FOUND: dict[tuple, dict[int, tuple[object, list]]] = {}
#: column entries all rules keep judged before starting over (each holds its values: about
#: 1 KB; a real program's every-pass dump has a few thousand distinct ones)
MAX_JUDGED = 1 << 15


def value_findings(
    module: ModuleReport, ctx: CheckContext, rule: Rule, facts: Hashable, judge: Judge
) -> list[Finding]:
    """`judge(v, facts)` for every value of `module`, as findings of `rule` at each value's
    line and column. `judge` must depend on nothing but the value and `facts`."""
    items = module.items
    if not items:
        return []
    part = module.partitioned
    key = (rule.code, facts, part)
    # bounded whether the facts are new or not (a big file of new lines under the same
    # facts grows one dict)
    if sum(map(len, _JUDGED.values())) > MAX_JUDGED:
        _JUDGED.clear()
        _FOUND.clear()
    judged = _JUDGED.get(key)
    if judged is None:
        judged = _JUDGED[key] = {}
        _FOUND[key] = {}
    found = _FOUND[key]
    ids = module.item_ids()
    one_off: list[int] = []  # Values of this module only: their verdicts are dropped after
    if not ids <= judged.keys():  # lines not seen before under these facts
        for item in items:
            i = id(item)
            if i in judged:
                continue
            if item.__class__ is Value:
                values = [item]
            else:
                values = [per_device(p) if part else p for p in item.protos]  # type: ignore[attr-defined]
            verdicts = [(v, res) for v in values if (res := judge(v, facts))]
            if item.__class__ is not Value:  # one-off Values are never seen again
                judged[i] = item
            if verdicts:
                found[i] = (item, verdicts)
                if item.__class__ is Value:
                    one_off.append(i)
    out: list[Finding] = []
    if not found:  # nothing under these facts ever had a finding
        return out
    dirty = ids & found.keys()
    for item in items if dirty else ():  # module order: equal-keyed findings keep it
        i = id(item)
        if i not in dirty:
            continue
        dirty.discard(i)
        lines = [item.line] if item.__class__ is Value else module.lines_of(item)  # type: ignore[attr-defined]
        for line in lines:
            for v, res in found[i][1]:
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
    for i in one_off:
        del found[i]
    return out


def clear() -> None:
    _JUDGED.clear()
    _FOUND.clear()
