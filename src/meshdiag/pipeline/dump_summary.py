"""A whole dump directory as one report: what `meshdiag inspect DIR` prints.

An every-pass XLA dump prints the same few shardings in every pass file; listed file by file
they bury the answer (a 36 MB dump printed 71,025 lines). `DumpSummary` folds the files into
one aggregate instead: files, modules, meshes, each distinct sharding once — by its device
layout, so the GSPMD and the Shardy spelling of one layout are one group — with how many
values and files use it and a bounded list of where, and the findings by code and by text.

It holds one entry per distinct sharding, mesh and finding text, never the values
themselves, so a big directory streams: workers fold their batches (`add`), the parent
`merge`s the batches in order.

    s = DumpSummary()
    for item in iter_inspect(paths): s.add(item, mesh=None)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from meshdiag.errors import MeshdiagError
from meshdiag.ir.devices import ids_label_for
from meshdiag.ir.fast import native
from meshdiag.ir.model import Value
from meshdiag.memo import RunMemos
from meshdiag.pipeline.inspect import gspmd_text, num_devices, own_text

if TYPE_CHECKING:
    from collections.abc import Callable

    from meshdiag.ir.model import MeshDecl, ModuleReport
    from meshdiag.layouts.engine import Layout
    from meshdiag.model.findings import Finding
    from meshdiag.model.mesh import Mesh
    from meshdiag.model.sharding import HloSharding
    from meshdiag.pipeline.inspect import Inspected

#: files listed per sharding; shapes and spellings kept per sharding; distinct finding
#: texts kept. The reports show the commonest few; counting more than they show keeps the
#: counts exact (so the same however the files were batched) until a sharding has more
#: distinct shapes or spellings than this (`counts_text` then says so)
WHERE_MAX = 4
SHAPES_MAX = 64
SPELLINGS_MAX = 64
FINDINGS_MAX = 10_000


@dataclass
class Group:
    """One device layout and every value that has it."""

    key: str  # the layout in canonical GSPMD text, or the sharding's text without one
    values: int = 0  # values (one per value, however many annotations it has on its line)
    files: int = 0
    #: each way it is written, with how many annotations write it so
    spellings: dict[str, int] = field(default_factory=dict)
    shapes: dict[tuple[int, ...], int] = field(default_factory=dict)  # global shapes
    local_shapes: dict[tuple[int, ...], int] = field(default_factory=dict)  # per device
    #: the first files that use it, as (path, value name, line)
    where: list[tuple[str, str, int]] = field(default_factory=list)
    #: (global shape, device count) to draw it with: its first value with a global shape
    draw: tuple[tuple[int, ...], int | None] | None = None

    def merge(self, o: Group) -> None:
        self.values += o.values
        self.files += o.files
        _add_counts(self.spellings, o.spellings, SPELLINGS_MAX)
        _add_counts(self.shapes, o.shapes, SHAPES_MAX)
        _add_counts(self.local_shapes, o.local_shapes, SHAPES_MAX)
        if len(self.where) < WHERE_MAX:
            self.where.extend(o.where[: WHERE_MAX - len(self.where)])
        if self.draw is None:
            self.draw = o.draw

    def layout(self, split: str) -> Layout | None:
        """The layout its picture shows: its sharding on `draw`'s shape and device count
        (None without one; MeshdiagError when it cannot be laid out). Not remembered: each
        is drawn once, and a million-device one holds ~70 MB."""
        if self.draw is None:
            return None
        from meshdiag.layouts.engine import layout
        from meshdiag.notation.gspmd import parse_gspmd

        shape, n = self.draw
        return layout(parse_gspmd(self.key), shape, split=split, num_devices=n)


@dataclass
class SeenMesh:
    decl: MeshDecl  # the first declaration
    files: int = 0


@dataclass
class SeenFinding:
    first: Finding
    count: int = 0
    files: int = 0


@dataclass
class DumpSummary:
    files: int = 0  # files read
    skipped: int = 0  # files a directory walk left out (binaries, LLVM IR)
    modules: int = 0
    values: int = 0
    meshes: dict[tuple[str, str], SeenMesh] = field(default_factory=dict)
    groups: dict[str, Group] = field(default_factory=dict)
    by_code: Counter = field(default_factory=Counter)
    #: which id space the files' device numbers are in (ir.devices.ids_label) → files
    id_spaces: Counter = field(default_factory=Counter)
    #: findings by (code, severity, message, fix): the same finding in every pass is one
    findings: dict[tuple, SeenFinding] = field(default_factory=dict)
    #: findings whose text came after FINDINGS_MAX distinct ones (counted in `by_code`)
    unlisted: int = 0

    @property
    def num_findings(self) -> int:
        return sum(self.by_code.values())

    def add(self, item: Inspected, *, mesh: Mesh | None, memos: RunMemos | None = None) -> None:
        """Fold one file in (a binary one found by its content, not its name, counts as
        skipped, like those the directory walk leaves out)."""
        fold = self.fold(item.report.path, mesh, memos)
        for m in item.report.modules:
            fold.module(m)
        self.end(fold, item)

    def fold(self, path: str, mesh: Mesh | None, memos: RunMemos | None = None) -> FileFold:
        """Start folding in one file a module at a time (`FileFold.module`, then `end`):
        `add` without holding the file's modules. `memos` (the run's) are not kept in the
        summary, which goes from worker to parent."""
        return FileFold(self, path, mesh, memos if memos is not None else RunMemos())

    def end(self, fold: FileFold, item: Inspected) -> None:
        """The file's modules are in: count it (or skip it) and fold in its findings."""
        if item.report.skipped == "binary":
            self.skipped += 1
            return
        self.files += 1
        self.id_spaces[ids_label_for(fold.path, fold.memos)] += 1
        for k in fold.meshes:
            self.meshes[k].files += 1
        self._add_findings(item.findings)

    def _merge_group(self, key: str, g: Group) -> None:
        mine = self.groups.get(key)
        if mine is None:
            self.groups[key] = g
        else:
            mine.merge(g)

    def _add_findings(self, findings: list[Finding]) -> None:
        in_file: set[tuple] = set()
        for f in findings:
            self.by_code[f.code] += 1
            k = (f.code, f.severity, f.message, f.fix)
            seen = self.findings.get(k)
            if seen is None:
                if len(self.findings) >= FINDINGS_MAX:
                    self.unlisted += 1
                    continue
                seen = self.findings[k] = SeenFinding(f)
            seen.count += 1
            if k not in in_file:
                in_file.add(k)
                seen.files += 1

    def merge(self, o: DumpSummary) -> None:
        """Fold in the summary of the files after this one's."""
        self.files += o.files
        self.skipped += o.skipped
        self.modules += o.modules
        self.values += o.values
        self.id_spaces.update(o.id_spaces)
        for k, sm in o.meshes.items():
            mine = self.meshes.get(k)
            if mine is None:
                self.meshes[k] = sm
            else:
                mine.files += sm.files
        for key, g in o.groups.items():
            self._merge_group(key, g)
        self.by_code.update(o.by_code)
        for k, sf in o.findings.items():
            mine = self.findings.get(k)
            if mine is None:
                if len(self.findings) >= FINDINGS_MAX:
                    self.unlisted += sf.count
                    continue
                self.findings[k] = sf
            else:
                mine.count += sf.count
                mine.files += sf.files
        self.unlisted += o.unlisted


def _add_counts(into: dict, more: dict, limit: int | None) -> None:
    """Add `more`'s counts to `into`; new keys only while `into` holds fewer than `limit`."""
    for k, n in more.items():
        if k in into:
            into[k] += n
        elif limit is None or len(into) < limit:
            into[k] = n


# -- one module ------------------------------------------------------------------------------


def module_rows(m: ModuleReport, mesh: Mesh | None, memos: RunMemos) -> dict[str, list]:
    """The module's values by device layout: layout key → [values, {spelling: count},
    {global shape: count}, {local shape: count}, (first name, its row), (shape, devices) to
    draw with or None]. A value annotated twice on its line (HLO's `sharding=` and its
    `xla.sdy.sharding`, MLIR's `mhlo.sharding` and its `xla.sdy.sharding`) is one value.

    Memoised by the module's content: an every-pass dump repeats most modules' annotated
    lines exactly."""
    if m.has_own_values():  # nothing to key by
        return _module_rows(m, mesh, memos)
    items = m.entries()[0]
    key = (
        items,
        m.partitioned,
        m.num_partitions,
        tuple((d.name, d.text) for d in m.meshes),
        mesh,
    )
    memo = memos.content("dump_summary.rows")
    hit = memo.get(key)
    if hit is None:
        hit = memo.put(key, len(items), _module_rows(m, mesh, memos))
    return hit


def _module_rows(m: ModuleReport, mesh: Mesh | None, memos: RunMemos) -> dict[str, list]:
    def key_of(v: Value) -> tuple[str, str]:
        return layout_key(v, memos), own_text(v, memos)

    def draw_of(v: Value) -> tuple | None:
        h = v.hlo
        return None if h is None or h.is_tuple else (v.shape, _devices(v, m, mesh))

    if _native_module_rows is not None:
        return _native_module_rows(m.items, m.lines, m.partitioned, Value, key_of, draw_of)
    return module_rows_py(m.items, m.lines, m.partitioned, key_of, draw_of)


def module_rows_py(
    items: list,
    lines: list[int],
    part: bool,
    key_of: Callable[[Value], tuple[str, str]],
    draw_of: Callable[[Value], tuple | None],
) -> dict[str, list]:
    """`module_rows` of the column entries `items` at `lines` (`part`: the module is
    partitioned), each value's (layout key, spelling) from `key_of` and a row's (shape,
    devices) to draw with from `draw_of` (None: ask the next value). The reference for the
    native one (`ir/fast/_rows.c`: a cold dump's modules mostly hold lines no module before
    held, and this walk was about a microsecond a value)."""
    # each entry once, at its first index, with how many times the module holds it (a
    # shared line's `LineValues` at each of its lines)
    firsts: dict[int, list] = {}
    for i, it in enumerate(items):
        seen = firsts.get(id(it))
        if seen is None:
            firsts[id(it)] = [i, 1]
        else:
            seen[1] += 1
    out: dict[str, list] = {}
    one_off: set[tuple] = set()  # (line, name, key) of Values kept whole
    # (layout key, spelling) by what they are worked out from: a module's values mostly
    # share their text and parsed objects (copies of one prototype), which stay alive
    # meanwhile, so their identities name them
    texts: dict[tuple, tuple[str, str]] = {}
    for i, times in firsts.values():
        it = items[i]
        if it.__class__ is Value:
            vals = [it]
        else:
            vals = it.partitioned if part else it.protos
        counted: set[tuple[str, str]] = set()
        for v in vals:
            of = (v.text, v.notation, id(v.sharding), id(v.hlo))
            got = texts.get(of)
            if got is None:
                got = texts[of] = key_of(v)
            k, spelling = got
            row = out.get(k)
            if row is None:
                row = out[k] = [0, {}, {}, {}, (v.name, i), None]
            row[1][spelling] = row[1].get(spelling, 0) + times
            if it.__class__ is Value:
                once = (lines[i], v.name, k)
                if once in one_off:
                    continue
                one_off.add(once)
            elif (v.name, k) in counted:
                continue
            counted.add((v.name, k))
            row[0] += times
            if v.shape is not None:
                row[2][v.shape] = row[2].get(v.shape, 0) + times
                if row[5] is None:
                    row[5] = draw_of(v)
            elif v.local_shape is not None:
                row[3][v.local_shape] = row[3].get(v.local_shape, 0) + times
    return out


_native_module_rows = native("module_rows")


def _devices(v: Value, m: ModuleReport, mesh: Mesh | None) -> int | None:
    n = num_devices(v, m, mesh)
    if v.hlo is not None and v.hlo.num_devices is not None and n is not None:
        if v.hlo.num_devices > n:
            return None  # the sharding names more devices than the module has: all of them
    return n


def layout_key(v: Value, memos: RunMemos | None = None) -> str:
    """What groups values: the device layout of the value's tiled form as canonical GSPMD
    text (the iota form where one exists: a V1 device list and its V2 spelling are one),
    else the sharding's own text (no tiled form: unparsable, or a Shardy mesh not known)."""
    h = v.hlo
    if h is None:
        return own_text(v, memos)
    if memos is None:
        text = canonical_text(h)
    else:
        text = memos.table("dump_summary.canonical_text").call(canonical_text, h)
    if text is None:
        return gspmd_text(v, memos) or own_text(v, memos)
    return text


def canonical_text(h: HloSharding) -> str | None:
    """`h` as XLA's constructors normalise it, its tile assignment in iota form when it has
    one, without metadata or shard groups, printed."""
    from meshdiag.model.normalize import normal_form
    from meshdiag.notation.gspmd import print_gspmd

    try:
        n = normal_form(h)
        if n.tile is not None:
            iota = n.tile.as_iota()
            if iota is not None:
                n = replace(n, tile=iota)
        return print_gspmd(replace(n, shard_group=None, metadata=()))
    except MeshdiagError:
        return None


class FileFold:
    """One file's part of a `DumpSummary` while its modules come in: their values go
    straight into the summary's groups (a group counts the file, and lists where it first
    appears in it, at the file's first value of that layout)."""

    def __init__(self, summary: DumpSummary, path: str, mesh: Mesh | None, memos: RunMemos) -> None:
        self.summary = summary
        self.path = path
        self.mesh = mesh
        self.memos = memos
        self.groups: set[str] = set()  # the layouts the file has shown so far
        self.meshes: set[tuple[str, str]] = set()

    def module(self, m: ModuleReport) -> None:
        s = self.summary
        s.modules += 1
        for d in m.meshes:
            k = (d.name, d.mesh.short() if d.mesh is not None else d.text)
            if k not in s.meshes:
                s.meshes[k] = SeenMesh(d)
            self.meshes.add(k)
        lines = m.lines
        seen = self.groups
        groups = s.groups
        for key, row in module_rows(m, self.mesh, self.memos).items():
            count, spellings, shapes, local, (name, i), draw = row
            g = groups.get(key)
            if g is None:
                g = groups[key] = Group(key)
            if key not in seen:  # the file's first value of this layout
                seen.add(key)
                g.files += 1
                if len(g.where) < WHERE_MAX:
                    g.where.append((self.path, name, lines[i]))
            g.values += count
            _add_counts(g.spellings, spellings, SPELLINGS_MAX)
            if shapes:
                _add_counts(g.shapes, shapes, SHAPES_MAX)
            if local:
                _add_counts(g.local_shapes, local, SHAPES_MAX)
            if g.draw is None:
                g.draw = draw
            s.values += count

    def end(self, item: Inspected) -> None:
        """The file's modules are in (`DumpSummary.end`): a `FileSink` of its file."""
        self.summary.end(self, item)
