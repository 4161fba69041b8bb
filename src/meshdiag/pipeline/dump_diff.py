"""Compare the sharded values of two dumps by per-device slices, as both dumps stream by.

Values are matched by (file, module, value name, occurrence): the file by its path below the
directory given (a single file needs no name match), the module by its name, pass-dump
section and, when those repeat in a file (`mlir-print-ir-after-all` prints
`IR Dump After Canonicalizer` many times), by its place among the modules so named; the value
by its printed name and, when a name repeats in a module, by its position among the values
of that name. Each matched pair is compared with `sharding_diff`; values only one side has
are reported as such. A value with no partner under its module's full key is paired by
module name alone (without the section) when the other side holds that name once in the
file: each section of a pass dump is then compared with the one module of a plain dump.

Both files of a pair are read a module from each in turn (`ir.module_stream`): a module
is held only until its partner comes by, and a value without an exact partner until its
file ends (where the loose pairing above is made). Memory is flat in the files' size when
they print the same modules in the same order, and otherwise about what has no partner,
which a module one side lacks does not change. The order out: file by file (A's files,
then the files only B has); in each, the exactly paired values as their pairs are found
(A's order for dumps in one order), then the rest of A's in A's order (paired loosely or
only in A), then the rest of B's in B's.

What could not be read of either dump (its error-level MD001 findings: a line too long, an
annotation that does not parse) is gathered as the files are read (`DumpDiff.problems`):
those values were not compared, and the report says so.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NamedTuple

from meshdiag.errors import MeshdiagError
from meshdiag.ir.model import ModuleReport, Value
from meshdiag.layouts.diff import DIFFERENT, SAME, LayoutDiff, compare_layouts, rank_of, tile_shape
from meshdiag.memo import RunMemos
from meshdiag.model.mesh import Mesh
from meshdiag.model.sharding import HloSharding

if TYPE_CHECKING:
    from meshdiag.model.findings import Finding

ONLY_A, ONLY_B, NOT_COMPARED = "only-a", "only-b", "not-compared"


class Key(NamedTuple):
    """Where a value is, as the two dumps are matched by."""

    file: str  # below the directory compared; "" for a file compared with a file
    module: str  # its name, and its pass-dump section in brackets
    #: k for the k+1-th module of that name and section in the file
    module_occurrence: int
    name: str
    occurrence: int  # k for the k+1-th value of that name in the module


@dataclass(frozen=True)
class ValueDiff:
    key: Key
    status: str  # same, permuted, different, only-a, only-b, not-compared
    a: Value | None
    b: Value | None
    diff: LayoutDiff | None = None
    reason: str | None = None


def _module_key(m: ModuleReport) -> str:
    return f"{m.name or '<module>'}" + (f" [{m.section}]" if m.section else "")


def _loose(k: Key) -> tuple[str, str, str, int]:
    """The key without the pass-dump section and the module's place:
    `mod [IR Dump After X]` → `mod`."""
    return k.file, k.module.split(" [", 1)[0], k.name, k.occurrence


def _compare(
    a: Value,
    ma: ModuleReport,
    b: Value,
    mb: ModuleReport,
    mesh: Mesh | None,
    split: str,
    memos: RunMemos,
) -> tuple[str, LayoutDiff | None, str | None]:
    from meshdiag.pipeline.inspect import num_devices

    if a.hlo is None or b.hlo is None:
        return NOT_COMPARED, None, "its sharding did not parse (see `meshdiag inspect`)"
    shape_a, shape_b = a.shape, b.shape
    if shape_a is not None and shape_b is not None and shape_a != shape_b:
        return DIFFERENT, None, f"the shapes differ: {shape_a} and {shape_b}"
    shape = shape_a if shape_a is not None else shape_b
    try:
        if shape is None or shape_a is None or shape_b is None:  # partitioned: compare tiles
            shape = memos.table("dump_diff.tile_shapes", 4096).call(_tile_shape, a.hlo, b.hlo)
        na, nb = num_devices(a, ma, mesh), num_devices(b, mb, mesh)
        n = max(x for x in (na, nb, a.hlo.num_devices, b.hlo.num_devices, 1) if x is not None)
        # a pair of shardings on one shape is compared once a run
        diff = memos.table("dump_diff.layouts", 4096).call(
            _layout_diff, a.hlo, b.hlo, shape, split, n, memos
        )
    except MeshdiagError as e:
        return NOT_COMPARED, None, str(e)
    return diff.verdict, diff, diff.note


def _tile_shape(a: HloSharding, b: HloSharding) -> tuple[int, ...]:
    """The shape two shardings of values without a global shape are compared on: per dim
    the lcm of their tile counts (`layouts.diff.tile_shape`)."""
    return tile_shape(a, b, rank_of(a, b))


def _layout_diff(
    a: HloSharding, b: HloSharding, shape: tuple, split: str, n: int, memos: RunMemos
) -> LayoutDiff:
    """`compare_layouts` of `a` and `b` on `shape`, without its devices when they are all
    the same (nothing shows them: a dump of a million values keeps a verdict each). Equal
    shardings lay out alike: one layout (which refuses what it would refuse for both)
    and no comparison. Each sharding's tiling is worked out once a run (`memos`); the
    layouts are not kept (the pair is: shapes mostly differ from value to value)."""
    from meshdiag.layouts.engine import layout, whole_spec

    def laid(h: HloSharding):
        return layout(h, shape, split=split, num_devices=n, memos=memos, keep=False)

    if a == b:
        spec = whole_spec(a, shape, split, n, memos)  # (no layout made where it names one)
        if spec is not None:
            return LayoutDiff(SAME, shape, spec.tiling.n, (), None)
        lay = laid(a)
        return LayoutDiff(SAME, lay.shape, lay.num_devices, (), None)
    diff = compare_layouts(laid(a), laid(b))
    if diff.verdict == SAME and diff.note is None:
        diff = replace(diff, devices=())
    return diff


#: problems of reading the dumps kept to show (the rest are only counted)
MAX_PROBLEMS = 1000


class DumpDiff:
    """Two dumps compared: iterating gives one ValueDiff per value of either dump, as the
    dumps are read (in the order the module docstring gives); meanwhile `differs` says
    whether any value so far is not the same, and `problems` gathers what could not be
    read of them — ("A" or "B", its MD001 finding), the first `MAX_PROBLEMS` of
    `problem_count` — whose values were then not compared.

    Raises MeshdiagError for a path that does not exist (when made), and for a file given
    itself that has nothing to read (when iterated, before any value: its MD001 says why).
    """

    def __init__(
        self, path_a: str, path_b: str, *, mesh: Mesh | None = None, split: str = "xla"
    ) -> None:
        for p in (path_a, path_b):
            if not os.path.exists(p):
                raise MeshdiagError(f"{p}: no such file or directory")
        self.paths = (path_a, path_b)
        self.mesh = mesh
        self.split = split
        self.differs = False
        self.problems: list[tuple[str, Finding]] = []
        self.problem_count = 0

    def _problem(self, side: str, f: Finding) -> None:
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append((side, f))

    def __iter__(self) -> Iterator[ValueDiff]:
        for d in self._diffs():
            if d.status != SAME:
                self.differs = True
            yield d

    def _diffs(self) -> Iterator[ValueDiff]:
        from meshdiag.ir.scan import expand_paths

        path_a, path_b = self.paths
        # (each reading of the dumps finds its own)
        self.differs, self.problems, self.problem_count = False, [], 0
        dir_a, dir_b = os.path.isdir(path_a), os.path.isdir(path_b)
        files_b = {_below(f, path_b) if dir_b else "": f for f in expand_paths([path_b])}
        memos = RunMemos()  # this run's: layouts and the pair memo
        sides = (_Side("A", dir_a, self._problem), _Side("B", dir_b, self._problem))
        how = (self.mesh, self.split, memos)
        for fa in expand_paths([path_a]):
            fkey = _below(fa, path_a) if dir_a else ""
            fb = files_b.pop(fkey, None)
            yield from _file_pair(fkey, fa, fb, sides, *how)
        for fkey, fb in files_b.items():
            yield from _file_pair(fkey, None, fb, sides, *how)


def _below(path: str, root: str) -> str:
    """`os.path.relpath(path, root)` of a file the walk of the directory `root` found: what
    follows `root/` (relpath, at 10 us a call, was a tenth of diffing two dump directories
    of 40k files each)."""
    prefix = root if root.endswith(os.sep) else root + os.sep
    if path.startswith(prefix) and "/." not in path[len(prefix) - 1 :]:
        return path[len(prefix) :]
    return os.path.relpath(path, root)


def diff_dumps(
    path_a: str, path_b: str, *, mesh: Mesh | None = None, split: str = "xla"
) -> Iterator[ValueDiff]:
    """The ValueDiffs of `DumpDiff(path_a, path_b)`, without its problems."""
    return iter(DumpDiff(path_a, path_b, mesh=mesh, split=split))


class _Side:
    """One dump's way of reading its files: its own scan memo (the two files of a pair are
    read in turns, a block at a time: each scan keeps its own state), whether it is a
    directory (whose unreadable files are skipped rather than refused), and where the
    problems of reading it go (`problem(label, finding)`)."""

    def __init__(self, label: str, is_dir: bool, problem: Callable[[str, Finding], None]) -> None:
        from meshdiag.pipeline.inspect import scan_cache

        self.label = label
        self.is_dir = is_dir
        self.problem = problem
        self.cache = scan_cache(RunMemos())

    def modules(self, path: str | None, fkey: str) -> Iterator[tuple[Key, list, ModuleReport]]:
        """Each module of `path` (none when None) with its key (value name and occurrence
        left empty) and its values keyed; raises for a file given itself that has nothing
        to read, once its modules are all out."""
        if path is None:
            return
        from meshdiag.ir.module_stream import ModuleStream

        seen: dict[str, int] = {}
        count = 0
        with ModuleStream(path, self.cache) as stream:
            for m in stream:
                count += 1
                mkey = _module_key(m)
                k = seen.get(mkey, 0)
                seen[mkey] = k + 1
                yield Key(fkey, mkey, k, "", 0), _keyed(m), m
            report = stream.report
        assert report is not None
        errors = [f for f in report.findings if f.code == "MD001"]
        if errors and not count and not self.is_dir:  # a directory's binary files are skipped
            f = errors[0]
            raise MeshdiagError(f"{f.path}:{f.line or 1}: {f.message}")
        for f in errors:
            if f.severity == "error":  # (not the notes of files skipped on purpose)
                self.problem(self.label, f)


def _keyed(m: ModuleReport) -> list[tuple[tuple[str, int], Value]]:
    """The module's values with their (name, occurrence of that name)."""
    seen: dict[str, int] = {}
    out = []
    for v in m.values:
        k = seen.get(v.name, 0)
        seen[v.name] = k + 1
        out.append(((v.name, k), v))
    return out


#: a module as `_file_pair` holds it: (its place in its file, its key, its values keyed by
#: (name, occurrence), the module)
_Held = tuple[int, Key, list, ModuleReport]


def _file_pair(
    fkey: str,
    fa: str | None,
    fb: str | None,
    sides: tuple[_Side, _Side],
    mesh: Mesh | None,
    split: str,
    memos: RunMemos,
) -> Iterator[ValueDiff]:
    """The diffs of file `fa` of A against `fb` of B (either None: the file only the other
    side has). The two are read a module from each in turn; a module is held until the
    other side's module of its key comes by, and then the pair is compared. So what is
    held is what has no partner (kept to the end anyway, for the loose pairing) and what
    one side has read ahead of the other, which is as many modules as the other side had
    with no partner before: about twice what has no partner at most, however the two order
    their modules."""
    streams = (sides[0].modules(fa, fkey), sides[1].modules(fb, fkey))
    held: tuple[dict, dict] = ({}, {})  # per side: (module, occurrence) -> _Held
    # per side, the values without an exact partner: ((module's place, value's place), key,
    # value, module)
    rest: tuple[list, list] = ([], [])
    read = [0, 0]
    live = [fa is not None, fb is not None]
    try:
        while live[0] or live[1]:
            for side in (0, 1):
                if not live[side]:
                    continue
                got = next(streams[side], None)
                if got is None:
                    live[side] = False
                    continue
                k, values, m = got
                entry = (read[side], k, values, m)
                read[side] += 1
                mk = (k.module, k.module_occurrence)
                partner = held[1 - side].pop(mk, None)
                if partner is not None:
                    pair = (entry, partner) if side == 0 else (partner, entry)
                    yield from _module_pair(*pair, rest, mesh, split, memos)
                elif live[1 - side]:  # its partner may come yet
                    held[side][mk] = entry
                else:
                    _rest(entry, rest[side])
    finally:
        for stream in streams:
            stream.close()
    for side in (0, 1):
        for entry in held[side].values():
            _rest(entry, rest[side])
        rest[side].sort(key=lambda e: e[0])
    yield from _loosely_paired(
        [e[1:] for e in rest[0]], [e[1:] for e in rest[1]], mesh, split, memos
    )


def _module_pair(
    a: _Held,
    b: _Held,
    rest: tuple[list, list],
    mesh: Mesh | None,
    split: str,
    memos: RunMemos,
) -> Iterator[ValueDiff]:
    """A's and B's module of one key: their values of one (name, occurrence) compared, in
    A's order; the others go to `rest`."""
    ka, values_a, ma = a[1:]
    _, values_b, mb = b[1:]
    partner = {nk: (j, v) for j, (nk, v) in enumerate(values_b)}
    for i, (nk, va) in enumerate(values_a):
        hit = partner.pop(nk, None)
        if hit is None:
            rest[0].append(_unpaired(a, i))
            continue
        status, diff, reason = _compare(va, ma, hit[1], mb, mesh, split, memos)
        yield ValueDiff(ka._replace(name=nk[0], occurrence=nk[1]), status, va, hit[1], diff, reason)
    rest[1].extend(_unpaired(b, j) for j, _ in partner.values())


def _rest(entry: _Held, into: list) -> None:
    """Every value of a module with no partner, into its side's `rest`."""
    into.extend(_unpaired(entry, i) for i in range(len(entry[2])))


def _unpaired(entry: _Held, i: int) -> tuple:
    """The `i`-th value of a held module as its side's `rest` holds it: ((the module's
    place, the value's), its key, the value, the module)."""
    index, k, values, m = entry
    (name, n), v = values[i]
    return (index, i), k._replace(name=name, occurrence=n), v, m


def loose_pairs(keys_a: Sequence[Key], keys_b: Sequence[Key]) -> dict[int, int]:
    """The loose pairing of the values with no exact partner (`keys_a` of A, `keys_b` of
    B, each in its dump's order): A's index → B's, by `_loose` key, where B holds that key
    once (every A value of it pairs with that one), or A does (it pairs with B's first)."""
    loose_b: dict[tuple, list[int]] = {}
    for j, kb in enumerate(keys_b):
        loose_b.setdefault(_loose(kb), []).append(j)
    loose_a: dict[tuple, list[int]] = {}
    for i, ka in enumerate(keys_a):
        loose_a.setdefault(_loose(ka), []).append(i)
    pair: dict[int, int] = {}
    for lk, ia in loose_a.items():
        jb = loose_b.get(lk, [])
        if len(jb) == 1:
            pair.update(dict.fromkeys(ia, jb[0]))
        elif len(ia) == 1 and jb:
            pair[ia[0]] = jb[0]
    return pair


def _loosely_paired(
    rest_a: list[tuple[Key, Value, ModuleReport]],
    rest_b: list[tuple[Key, Value, ModuleReport]],
    mesh: Mesh | None,
    split: str,
    memos: RunMemos,
) -> Iterator[ValueDiff]:
    """The values of one file pair with no exact partner, compared as `loose_pairs` pairs
    them: in A's order, then B's unpaired ones."""
    pair = loose_pairs([e[0] for e in rest_a], [e[0] for e in rest_b])
    for i, (ka, va, ma) in enumerate(rest_a):
        j = pair.get(i)
        if j is None:
            yield ValueDiff(ka, ONLY_A, va, None)
            continue
        _, vb, mb = rest_b[j]
        status, diff, reason = _compare(va, ma, vb, mb, mesh, split, memos)
        yield ValueDiff(ka, status, va, vb, diff, reason)
    paired_b = set(pair.values())
    for j, (kb, vb, _) in enumerate(rest_b):
        if j not in paired_b:
            yield ValueDiff(kb, ONLY_B, None, vb)
