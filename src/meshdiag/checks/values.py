"""Run a per-value rule over a module, judging each distinct value once across modules.

Pass dumps print the same annotated lines in module after module, and the scanner shares one
`LineValues` per distinct line (ir/model.py). A rule's verdict on a value depends on the
value and on a few facts about its module (the meshes it declares, its device count, the
global mesh, ...), which the rule states as a hashable key. Values found clean under those
facts are remembered, so a module whose lines were all seen before under the same facts
costs a set difference, not a Python loop over its values.

A line not seen before is judged value by value, but a rule also states what decides
whether a value has a finding (`checks.keys.Decides`: fields such as its sharding and the
rank of its shape, never its name or place), and a value like one found clean under the
same facts is not judged again: MLIR prints every op line with its own SSA names, so its
lines are new in every module, while their shardings and shapes repeat (on the cold bench
220k of 251k values asked about were such values). The keys of a module's values are
worked out all at once (`checks.keys.new_keys`, in C when built); a value whose key is not
known clean is judged, and when it has findings so is every value of its key: the messages
name them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING

from meshdiag.checks.keys import Decides, distinct, new_keys
from meshdiag.ir.fast import native
from meshdiag.ir.model import LineValues, Value
from meshdiag.memo import IdentityTable

if TYPE_CHECKING:
    from meshdiag.checks.context import CheckContext
    from meshdiag.checks.rule import Rule
    from meshdiag.ir.model import ModuleReport
    from meshdiag.memo import RunMemos
    from meshdiag.model.findings import Finding

#: a rule's verdict on one value: (message, fix) per problem, empty when clean
Judge = Callable[[Value, Hashable, "RunMemos"], list[tuple[str, str | None]]]
#: column entries all rules keep judged before starting over (each holds its values: about
#: 1 KB; a real program's every-pass dump has a few thousand distinct ones)
MAX_JUDGED = 1 << 15
_UNBOUNDED = 1 << 62  # the pair is bounded as a whole (MAX_JUDGED), never one table alone


class _Book:
    """Every rule's verdicts of a run, by (rule, facts, partitioned), and how many column
    entries they judged in all (kept as they grow: summing the tables at every module cost
    a tenth of the checks on the cold bench)."""

    __slots__ = ("by_facts", "judged", "_keyed", "_distinct")

    def __init__(self) -> None:
        self.by_facts: dict[tuple, _Verdicts] = {}
        self.judged = 0
        self._keyed: tuple[list, int] | None = None  # the list `_distinct` is of, its length
        self._distinct: list[tuple[tuple, Value]] = []

    def clear(self) -> None:
        self.by_facts.clear()
        self.judged = 0
        self._keyed = None
        self._distinct = []

    def distinct(self, items: list) -> list[tuple[tuple, Value]]:
        """`keys.distinct(items)`, once for the rules that judge one module's own values
        one after another (the last list asked about is kept, and so alive)."""
        keyed = self._keyed
        if keyed is None or keyed[0] is not items or keyed[1] != len(items):
            self._distinct = distinct(items)
            self._keyed = (items, len(items))
        return self._distinct


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


def _judged(
    values: Sequence,
    decides: Decides,
    clean: dict[Hashable, Value],
    judge: Judge,
    facts: Hashable,
    memos: RunMemos,
    among: list[tuple[tuple, Value]] | None = None,
) -> list[tuple[Value, list[tuple[str, str | None]]]]:
    """Judge the first `Value` of each key in `values` that is not known clean, keeping the
    keys found clean; of a key with findings every value is judged (the messages name
    them). The values with findings and their verdicts, in order. `among`:
    `keys.distinct(values)`, when the caller has it."""
    firsts = new_keys(values, decides, clean, among)
    if not firsts:
        return []
    bad: dict[Hashable, tuple[Value, list]] = {}
    for k, v in firsts:
        res = judge(v, facts, memos)
        if res:
            bad[k] = (v, res)
        else:
            clean[k] = v
    if not bad:
        return []
    out = []
    for v in values:
        if v.__class__ is not Value:
            continue
        hit = bad.get(decides(v))
        if hit is None:
            continue
        res = hit[1] if hit[0] is v else judge(v, facts, memos)
        if res:
            out.append((v, res))
    return out


def fresh_entries_py(
    shared: Sequence[LineValues], seen: dict[int, tuple], part: bool
) -> tuple[list[LineValues], list[Value]]:
    """Of the shared column entries `shared`, those the verdicts' `seen` (id -> (entry, _):
    `IdentityTable.data`, read and written inline: no bound) does not hold, each once, in
    order, and their values as the module holds them (`part`: partitioned); each is put
    in `seen` as judged. The reference for the native one (`ir/fast/_keys.c`)."""
    fresh: dict[int, LineValues] = {}
    for item in shared:
        hit = seen.get(id(item))
        if hit is None or hit[0] is not item:
            fresh[id(item)] = item
    values: list[Value] = []
    for item in fresh.values():
        values.extend(item.partitioned if part else item.protos)
        seen[id(item)] = (item, True)
    return list(fresh.values()), values


_native_fresh_entries = native("fresh_entries")


def fresh_entries(
    shared: Sequence[LineValues], seen: dict[int, tuple], part: bool
) -> tuple[list[LineValues], list[Value]]:
    """`fresh_entries_py`, in C when built: a dump's modules mostly hold lines no module
    before held, and walking them in Python was a third of a value rule's call."""
    if _native_fresh_entries is not None:
        return _native_fresh_entries(shared, seen, part)
    return fresh_entries_py(shared, seen, part)


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
    shared = module.shared_entries()
    judged, found = verdicts.judged, verdicts.found
    one_off: list[Value] = []  # Values of this module only: their verdicts are dropped after
    own = module.has_own_values()  # values of its own lines: never judged before
    ids = None  # the entries' identities, asked only when needed (a big file's modules
    # hold hundreds of values of their own and a few shared lines)
    if own or not (ids := module.item_ids()) <= judged.ids():  # lines not judged yet
        seen = judged.data  # the table's own dict (id -> (item, _)), read inline: hot loop
        clean = verdicts.clean
        before = len(seen) + len(clean)
        if own:
            # the values of this module's own lines (never seen again), keyed all at once
            among = book.distinct(items)
            for v, res in _judged(items, decides, clean, judge, facts, memos, among):
                found.put(v, [(v, res)])
                one_off.append(v)
        # the shared lines not judged under these facts, each once, keyed all at once too
        fresh, values = fresh_entries(shared, seen, part)
        if fresh:
            # each entry's values with findings, in its order (by identity: a Value is a
            # mutable dataclass, not hashable)
            bad = {id(v): res for v, res in _judged(values, decides, clean, judge, facts, memos)}
            if bad:
                for item in fresh:
                    vs = item.partitioned if part else item.protos  # type: ignore[attr-defined]
                    mine = [(v, bad[id(v)]) for v in vs if id(v) in bad]
                    if mine:
                        found.put(item, mine)
        book.judged += len(seen) + len(clean) - before
    out: list[Finding] = []
    if not found:  # nothing under these facts ever had a finding
        return out
    dirty = (module.item_ids() if ids is None else ids) & found.ids()
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
