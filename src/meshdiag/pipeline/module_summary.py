"""What `meshdiag inspect FILE` shows of one module, computed: a small model of the report.

Per module: its header, meshes and diagnostics, each distinct sharding text with how many
values have it, the first few places it appears, its GSPMD form, and the layout to draw for
the first `MAX_PICTURES` that have one. The text writer (`report/file_text.py`) only renders
this; nothing here renders.

    memos = RunMemos()
    shown = summarise_module(module, mesh=None, split="xla", memos=memos)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, NamedTuple

from meshdiag.ir.fast import native
from meshdiag.ir.model import Value
from meshdiag.layouts.engine import TiledSpec, whole_spec
from meshdiag.memo import RunMemos, Table
from meshdiag.pipeline.inspect import (
    gspmd_text,
    layout_devices,
    num_devices,
    own_text,
    value_layout,
)

if TYPE_CHECKING:
    from meshdiag.ir.model import Diagnostic, FileReport, MeshDecl, ModuleReport
    from meshdiag.layouts.engine import Layout
    from meshdiag.model.mesh import Mesh
    from meshdiag.model.sharding import HloSharding

#: locations listed per distinct sharding; pictures drawn per module
FIRST_LOCATIONS = 3
MAX_PICTURES = 8
#: picture keys a run remembers having a layout (about the text writer's renderings kept)
MAX_KNOWN_PICTURES = 4096

PictureKey = tuple["HloSharding", tuple[int, ...], int | None, str, str]


class Picture:
    """A layout to draw, titled, with what it is computed from (equal keys: equal
    pictures). A picture whose key had a layout before in the run computes its layout only
    when asked: the text writer keeps what it drew by key, and a real dump draws the same
    few layouts in module after module (4 in 5 pictures of 4,050 real modules)."""

    __slots__ = ("title", "key", "whole", "_layout", "_make")

    def __init__(
        self,
        title: str,
        key: PictureKey,
        layout: Layout | None = None,
        make: Callable[[], Layout | None] | None = None,
        whole: TiledSpec | None = None,
    ) -> None:
        self.title = title
        self.key = key
        #: the layout named by its tiling and shape, when the picture can be drawn from
        #: those (`value_whole`)
        self.whole = whole
        self._layout = layout
        self._make = make

    @property
    def layout(self) -> Layout:
        if self._layout is None:
            assert self._make is not None
            lay = self._make()
            assert lay is not None  # the same inputs gave a layout before
            self._layout, self._make = lay, None
        return self._layout


class ShardingLine(NamedTuple):
    """One distinct sharding text of a module (a named tuple: a big file's summaries make
    ten thousand)."""

    text: str  # as written (a tuple element's own sharding alone)
    gspmd: str | None  # its V2 GSPMD text when that says something else, else None
    count: int  # values that have it
    firsts: tuple[tuple[str, int, int], ...]  # the first FIRST_LOCATIONS as (name, line, col)
    picture: Picture | None


@dataclass(frozen=True)
class ModuleSummary:
    """One module as the text report shows it. Its `shardings` are computed as they are
    read, once: a picture's layout (up to ~70 MB for a million devices) lives only until
    the reader moves on, so a module of many big distinct layouts holds one at a time."""

    name: str | None
    line: int
    dialect: str
    section: str | None
    partitioned: bool
    num_partitions: int | None
    meshes: tuple[MeshDecl, ...]
    diagnostics: tuple[Diagnostic, ...]
    values: int
    shardings: Iterator[ShardingLine]


def summarise_module(
    m: ModuleReport, *, mesh: Mesh | None, split: str, memos: RunMemos | None = None
) -> ModuleSummary:
    """What the text report shows of `m` (the global `mesh` and `split` rule pick the
    layouts)."""
    memos = memos if memos is not None else RunMemos()
    groups = text_groups(m, memos)
    return ModuleSummary(
        m.name,
        m.line,
        m.dialect,
        m.section,
        m.partitioned,
        m.num_partitions,
        tuple(m.meshes),
        tuple(m.diagnostics),
        sum(e[0] for e in groups.values()),
        _shardings(groups, m, mesh, split, memos),
    )


def _shardings(
    groups: dict[str, list], m: ModuleReport, mesh: Mesh | None, split: str, memos: RunMemos
) -> Iterator[ShardingLine]:
    lines = m.lines
    pictures = 0
    known = memos.table("module_summary.pictures", MAX_KNOWN_PICTURES)
    for text, (count, firsts, vals) in groups.items():
        g = gspmd_text(vals[0], memos)
        picture = None
        if pictures < MAX_PICTURES:
            picture = _picture(vals, m, mesh, split, g or text, memos, known)
            pictures += picture is not None
        yield ShardingLine(
            text,
            g if g and g != text else None,
            count,
            tuple([(name, lines[i], col) for name, i, col in firsts]),
            picture,
        )


def _picture(
    vals: list[Value],
    m: ModuleReport,
    mesh: Mesh | None,
    split: str,
    title: str,
    memos: RunMemos,
    known: Table,
) -> Picture | None:
    """The layout of the first value with a global shape and a tiled form that has one
    (whether its key has one is remembered for the run, in `known`)."""
    for v in vals:
        if v.shape is None or v.hlo is None:  # no picture without a global shape
            continue
        n = num_devices(v, m, mesh)
        key = (v.hlo, v.shape, n, split, title)
        has = known.get(key)
        if has is None:
            whole = value_whole(v, n, split, memos)
            if whole is not None:  # drawn from its tiling, its layout made if need be
                known.put(key, True)
                return Picture(
                    title, key, make=partial(value_layout, v, n, split, memos), whole=whole
                )
            lay = value_layout(v, n, split, memos)
            known.put(key, lay is not None)
            if lay is not None:
                return Picture(title, key, lay)
        elif has:
            return Picture(title, key, make=partial(value_layout, v, n, split, memos))
    return None


def value_whole(v: Value, n: int | None, split: str, memos: RunMemos | None = None):
    """`value_layout`'s layout named by a tiling and the shape (`engine.whole_spec`) where
    its tiles are all whole: its picture is then drawn from those alone
    (`report.whole.whole_text`), the layout made only if the picture needs it. None for any
    other value."""
    h = v.hlo
    if h is None or v.shape is None:
        return None
    return whole_spec(h, v.shape, split, layout_devices(h, n), memos)


def text_groups(m: ModuleReport, memos: RunMemos) -> dict[str, list]:
    """Per distinct sharding text, in order of first use: [how many values have it, the
    first FIRST_LOCATIONS as (name, row, column), its distinct values as the module holds
    them (by identity), in order]. Memoised by the module's column entries: a real pass
    dump repeats most modules' annotated lines exactly (27 of 36 modules of one every-pass
    XLA dump of a sharded MLP)."""
    items = m.items
    part = m.partitioned
    memo = memos.content("module_summary.groups")
    key = None
    if not m.has_own_values():  # (values of its own lines are not hashable)
        items = m.entries()[0]
        key = (items, part)
        hit = memo.get(key)
        if hit is not None:
            return hit
    if _native_text_groups is not None:
        by_text = _native_text_groups(
            items,
            Value,
            lambda v: own_text(v, memos),
            lambda item: _rows(item, part, memos),
            FIRST_LOCATIONS,
        )
    else:
        by_text = text_groups_py(items, part, memos)
    if key is not None:
        memo.put(key, len(items), by_text)  # the key holds the entries
    return by_text


def text_groups_py(items: Sequence, part: bool, memos: RunMemos) -> dict[str, list]:
    """`text_groups` of the column entries `items`, in Python: the reference for the native
    one (`ir/fast/_groups.c`, which takes a big file's million values of their own)."""
    by_text: dict[str, list] = {}
    get = by_text.get
    seen: set[int] = set()  # the values grouped, by identity (a shared line's come again)
    for i, item in enumerate(items):
        if item.__class__ is Value:  # a value of its own line: its row, as `_rows` makes it
            text = item.text
            if item.notation != "sdy" or text.startswith("#sdy.sharding_per_value"):
                text = own_text(item, memos)  # else a Shardy value's own text is its text
            rows: tuple = ((text, item.name, item.column, item),)
        else:
            rows = _rows(item, part, memos)
        for text, name, col, v in rows:
            e = get(text)
            if e is None:  # (a value is grouped under one text only: new here)
                by_text[text] = [1, [(name, i, col)], [v]]
                seen.add(id(v))
            else:
                e[0] += 1
                if e[0] <= FIRST_LOCATIONS:
                    e[1].append((name, i, col))
                if id(v) not in seen:
                    seen.add(id(v))
                    e[2].append(v)
    return by_text


def _rows(item, part: bool, memos: RunMemos) -> tuple:
    """A line's values (a `LineValues` entry) as (text, name, column, value as the module
    holds it), each under its own sharding (a tuple element's, not the whole tuple's);
    memoised per entry."""
    memo = memos.table("module_summary.rows")
    key = (item, part)
    hit = memo.get(key)
    if hit is None:
        hit = memo.put(
            key,
            tuple(
                (own_text(p, memos), p.name, p.column, v)
                for p, v in zip(item.protos, item.partitioned if part else item.protos, strict=True)
            ),
        )
    return hit


def summarise_file(
    report: FileReport, *, mesh: Mesh | None, split: str, memos: RunMemos | None = None
) -> list[ModuleSummary]:
    """`summarise_module` of each module of `report`, in order."""
    memos = memos if memos is not None else RunMemos()
    return [summarise_module(m, mesh=mesh, split=split, memos=memos) for m in report.modules]


_native_text_groups = native("text_groups")
