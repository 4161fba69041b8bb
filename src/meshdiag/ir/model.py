"""What the IR scanner finds in a dump: files → modules → meshes, values, diagnostics.

Plain data: the scanner (`ir/scan.py`) fills it, checks read it, renderers print it.
Lines and columns are 1-based and point into the original file.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Literal

from meshdiag.ir.fast import native

if TYPE_CHECKING:
    from meshdiag.model.findings import Finding
    from meshdiag.model.mesh import Mesh
    from meshdiag.model.sharding import HloSharding, NamedSharding

Notation = Literal["sdy", "gspmd"]


@dataclass
class MeshDecl:
    name: str  # symbol name without '@' ("mesh")
    mesh: Mesh | None  # None when its text did not parse (an MD001 finding says why)
    line: int
    column: int
    text: str  # the mesh attribute as written (`<["x"=2]>`)
    #: where it came from: an `sdy.mesh` op, the `xla.sdy.meshes` module attribute, ...
    source: Literal["sdy.mesh", "xla.sdy.meshes", "inline"] = "sdy.mesh"


@dataclass(slots=True)
class Value:
    """One sharded value: a function argument or result, an op result, a constraint, ...
    (slots, not a dict: a big file makes a million, and copies them from prototypes; where
    the extension is built, `Value` is the native class this dataclass is the twin of)"""

    name: str  # %arg0, %0, %0#1, result#0, %param.1
    line: int
    column: int  # of the sharding annotation
    text: str  # the sharding as written, MLIR escapes decoded
    notation: Notation
    #: role: arg, result, op, constraint, reshard, manual_in, manual_out, custom_call
    kind: str = "op"
    op: str | None = None  # e.g. "stablehlo.custom_call @Sharding", "sdy.reshard"
    shape: tuple[int, ...] | None = None  # global shape, when known
    local_shape: tuple[int, ...] | None = None  # per-device shape (partitioned / manual)
    dtype: str | None = None
    mesh_name: str | None = None  # Shardy mesh symbol it refers to
    #: parsed forms (None when the text did not parse)
    sharding: HloSharding | NamedSharding | None = None
    hlo: HloSharding | None = None  # tiled form, for layouts and checks


#: the dataclass above, the twin of the class values are made of where the extension is
#: built (`ir/fast/_value.c`: the same constructor, fields, equality, repr and pickling;
#: a big file's million values are made and freed without the garbage collector's
#: bookkeeping)
PyValue = Value
_native_value = native("Value")
if not TYPE_CHECKING and _native_value is not None:
    native("adopt_dataclass")(PyValue)  # (dataclasses.fields, replace, asdict see it too)
    Value = _native_value


@dataclass
class Diagnostic:
    """A compiler diagnostic printed in the dump (`error: Mesh is not valid`)."""

    severity: str  # error, warning, note, remark
    message: str
    line: int
    column: int = 1
    location: str | None = None  # `file:line:col` the diagnostic itself names


@dataclass(frozen=True, eq=False)
class LineValues:
    """The values one line of text yields, before its line number is known (their `line`
    is 0). Every occurrence of the same line in the same module state shares one: pass dumps
    print the same annotated lines thousands of times, and a module stores each occurrence
    as (line number, this) instead of a Value per occurrence."""

    protos: tuple[Value, ...]

    @cached_property
    def partitioned(self) -> tuple[Value, ...]:
        """The prototypes as a partitioned module holds them (`per_device`), made once: the
        checks and the summaries all ask, for every module the line is in."""
        return tuple(per_device(p) for p in self.protos)


class ValueGroup:
    """Values of a module that differ only in their line: one to look at, how many, and
    (computed when asked) every line."""

    __slots__ = ("value", "count", "_module", "_item", "_lines")

    def __init__(self, value: Value, count: int, module: ModuleReport, item: object) -> None:
        self.value = value  # the first occurrence
        self.count = count
        self._module = module
        self._item = item
        self._lines: list[int] | None = None

    @property
    def lines(self) -> list[int]:
        """Every occurrence's line, in file order (`value.line` first)."""
        if self._lines is None:
            self._lines = self._module.lines_of(self._item)
        return self._lines


def at_line(p: Value, line: int, partitioned: bool = False) -> Value:
    """A copy of `p` at `line`; in a partitioned module its shape is per device."""
    shape, local = p.shape, p.local_shape
    if partitioned and shape is not None and local is None:
        shape, local = None, shape
    return Value(
        p.name,
        line,
        p.column,
        p.text,
        p.notation,
        p.kind,
        p.op,
        shape,
        local,
        p.dtype,
        p.mesh_name,
        p.sharding,
        p.hlo,
    )


def from_proto(
    proto: Value,
    name: str,
    line: int,
    column: int,
    shape: tuple[int, ...] | None,
    dtype: str | None,
    kind: str,
    op: str | None,
) -> Value:
    """A copy of `proto` with these seven fields set: the value of a plain line whose
    sharding text is `proto`'s (`ScanCache.protos`); the Python twin of `_values.c`."""
    p = proto
    return Value(
        name,
        line,
        column,
        p.text,
        p.notation,
        kind,
        op,
        shape,
        p.local_shape,
        dtype,
        p.mesh_name,
        p.sharding,
        p.hlo,
    )


class ModuleReport:
    """One module (or pass-dump section) of a dump: its meshes, sharded values, diagnostics.

    Values are stored as two columns in file order — line numbers, and for each either a
    Value or the LineValues of a repeated line — so a dump that repeats a line ten thousand
    times holds one set of Values for it. `values` gives them as Value objects,
    `value_groups()` once per distinct value with all its lines (what checks and summaries
    want); `lines` and `items` are the columns themselves.
    """

    def __init__(
        self,
        name: str | None,
        line: int,
        dialect: Literal["mlir", "hlo"] = "mlir",
        section: str | None = None,
        partitioned: bool = False,
        num_partitions: int | None = None,
        meshes: list[MeshDecl] | None = None,
        values: list[Value] | None = None,
        diagnostics: list[Diagnostic] | None = None,
    ) -> None:
        self.name = name  # `@ReplicateShardedData.6`'s name without '@'; HloModule name
        self.line = line  # line of the `module` / `HloModule` header
        self.dialect = dialect
        #: pass-dump section title (`IR Dump Before AnalyzeMeshPass (analyze-mesh)`), if any
        self.section = section
        #: shapes in the module are per-device (after SPMD partitioning)
        self.partitioned = partitioned
        self.num_partitions = num_partitions
        self.meshes: list[MeshDecl] = meshes if meshes is not None else []
        self.diagnostics: list[Diagnostic] = diagnostics if diagnostics is not None else []
        #: the value columns: line numbers, and per line a Value or a LineValues
        self.lines: list[int] = []
        self.items: list[Value | LineValues] = []
        self._values: tuple | None = None  # (stamp, list): `values`, memoised
        self._groups: tuple | None = None  # (stamp, list): `value_groups()`, memoised
        self._lines_by_item: tuple | None = None  # (stamp, {id(item): lines}): `lines_of`
        #: (stamp, entries, their ids, the ids as a set or None): `entries`, `item_ids`
        self._entries: tuple | None = None
        self._shared: tuple | None = None  # (stamp, list): `shared_entries`
        for v in values or ():
            self.add(v)

    def add(self, v: Value) -> None:
        self.lines.append(v.line)
        self.items.append(v)

    @property
    def values(self) -> list[Value]:
        """Every value in file order, one Value each (a new list each time the module
        changed; `value_groups()` is cheaper)."""
        stamp = (len(self.items), self.partitioned)
        memo = self._values
        if memo is not None and memo[0] == stamp:
            return memo[1]
        part = self.partitioned
        values: list[Value] = []
        add = values.append
        for line, it in zip(self.lines, self.items, strict=True):
            if it.__class__ is Value:
                add(it)  # type: ignore[arg-type]
            else:
                for p in it.protos:  # type: ignore[union-attr]
                    add(at_line(p, line, part))
        self._values = (stamp, values)
        return values

    @values.setter
    def values(self, values: list[Value]) -> None:
        self.lines = []
        self.items = []
        for v in values:
            self.add(v)

    def value_groups(self) -> list[ValueGroup]:
        """The distinct values in order of first occurrence, each with its count."""
        stamp = (len(self.items), self.partitioned)
        memo = self._groups
        if memo is not None and memo[0] == stamp:
            return memo[1]
        items = self.items
        n = len(items)
        # at C speed: occurrences per item, and each item's first index (a dict built from
        # the reversed column keeps the smallest index per key)
        counts = Counter(map(id, items))
        firsts = sorted(
            dict(zip(map(id, reversed(items)), range(n - 1, -1, -1), strict=True)).values()
        )
        part = self.partitioned
        groups = []
        for i in firsts:
            it = items[i]
            if it.__class__ is Value:
                groups.append(ValueGroup(it, 1, self, it))  # type: ignore[arg-type]
                continue
            c = counts[id(it)]
            line = self.lines[i]
            for p in it.protos:  # type: ignore[union-attr]
                groups.append(ValueGroup(at_line(p, line, part), c, self, it))
        self._groups = (stamp, groups)
        return groups

    def entries(self) -> tuple[tuple[Value | LineValues, ...], tuple[int, ...]]:
        """(the column entries, their identities) in order, kept until the module changes:
        the identities key every memo by module content (pass dumps repeat modules' lines
        exactly); a memo keeps the entries so the ids stay theirs."""
        stamp = len(self.items)
        memo = self._entries
        if memo is None or memo[0] != stamp:
            items = tuple(self.items)
            memo = self._entries = (stamp, items, tuple(map(id, items)), None)
        return memo[1], memo[2]

    def shared_entries(self) -> list[LineValues]:
        """The column entries shared with other occurrences of their line (`LineValues`), in
        order, kept until the module changes: each per-value rule walks them, and a big file
        of new lines has none among a million values."""
        stamp = len(self.items)
        memo = self._shared
        if memo is None or memo[0] != stamp:
            memo = self._shared = (stamp, of_class(self.items, LineValues))
        return memo[1]

    def has_own_values(self) -> bool:
        """Whether some column entries are `Value`s of lines of this module's own, not
        shared `LineValues`: such a module has no content key (its values are not
        hashable), and its checks key its values all at once."""
        return len(self.shared_entries()) < len(self.items)

    def item_ids(self) -> frozenset[int]:
        """The identities of the column entries, as a set (kept like `entries`)."""
        self.entries()
        memo = self._entries
        if memo[3] is None:  # type: ignore[index]
            memo = self._entries = (*memo[:3], frozenset(memo[2]))  # type: ignore[index]
        return memo[3]  # type: ignore[index]

    def lines_of(self, item: object) -> list[int]:
        """The lines of a column entry (one pass over the module for all entries, kept)."""
        stamp = len(self.items)
        memo = self._lines_by_item
        if memo is None or memo[0] != stamp:
            by_item: dict[int, list[int]] = {}
            get = by_item.get
            for line, it in zip(self.lines, self.items, strict=True):
                ls = get(id(it))
                if ls is None:
                    by_item[id(it)] = [line]
                else:
                    ls.append(line)
            memo = self._lines_by_item = (stamp, by_item)
        return memo[1].get(id(item), [])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ModuleReport):
            return NotImplemented
        return self._fields() == other._fields()

    def _fields(self) -> tuple:
        return (
            self.name,
            self.line,
            self.dialect,
            self.section,
            self.partitioned,
            self.num_partitions,
            self.meshes,
            self.values,
            self.diagnostics,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it was

    def __repr__(self) -> str:
        return (
            f"ModuleReport(name={self.name!r}, line={self.line}, dialect={self.dialect!r}, "
            f"section={self.section!r}, values={len(self.items)} rows)"
        )


def per_device(p: Value) -> Value:
    """A prototype as a partitioned module holds it: its shape is the per-device shape
    (made once per line: `LineValues.partitioned`)."""
    if p.shape is None or p.local_shape is not None:
        return p
    return at_line(p, p.line, True)


@dataclass
class FileReport:
    path: str
    modules: list[ModuleReport] = field(default_factory=list)
    #: MD001 findings from reading/parsing this file
    findings: list[Finding] = field(default_factory=list)
    #: why the file was not scanned ("binary", "empty"), else None
    skipped: str | None = None


def of_class_py(items: list, cls: type) -> list:
    """The items whose class is exactly `cls`, in order: the reference for the native
    `of_class` (`ir/fast/_keys.c`)."""
    return [it for it in items if it.__class__ is cls]


#: `of_class_py`, in C when built (a big file's modules hold a million values, none shared)
of_class = native("of_class") or of_class_py
