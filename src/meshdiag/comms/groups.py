"""Replica groups and source-target pairs as XLA prints them, parsed into device-id rows.

Three spellings of `replica_groups=` (XLA's `CollectiveDeviceList`):

- list (V1): `{{0,1},{2,3}}`; `{}` means one group of every device;
- iota (V2): `[G,S]<=[reshape]T(perm)`: the rows of
  `arange(prod(reshape)).reshape(reshape).transpose(perm).reshape(G, S)` — the same iota as a
  tile assignment (`tiles.TileAssignment`), e.g. `[2,4]<=[4,2]T(1,0)` is `{0,2,4,6},{1,3,5,7}`;
- mesh (V3): a mesh and the axes the groups run over, e.g.
  `mesh['axis_0'=2,'axis_1'=4] {'axis_1'}` (`{0,1,2,3},{4,5,6,7}`), with `device_ids=(...)`
  when the mesh is not iota, bare or quoted names, `@mesh<a=2,b=4> {a}` as older XLA printed
  it, and sub-axes `a:(1)2`. The groups are `axis_groups(mesh, axes)`.

`source_target_pairs={{0,1},{1,2}}` lists (source, target) device pairs.

The rows are kept flat (`Groups`: one array of every id), read as a tuple of tuples.
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate, chain
from typing import TYPE_CHECKING, Any, Literal

from meshdiag import limits
from meshdiag.errors import MeshdiagError, ParseError
from meshdiag.ir.text import brace_end
from meshdiag.limits import MAX_RANK, check_device_count
from meshdiag.model.mesh import Mesh
from meshdiag.model.tiles import LISTED_IOTA_DEVICES, TileAssignment
from meshdiag.notation._cursor import Cursor
from meshdiag.notation.gspmd_v3 import read_axis_list, read_device_ids, read_mesh_axes

if TYPE_CHECKING:
    import numpy as np

    from meshdiag.model.mesh import Mesh
    from meshdiag.model.sharding import AxisRef

Form = Literal["list", "iota", "mesh"]


class Groups(Sequence):
    """Rows of device ids (replica groups, source-target pairs), kept as one flat array of
    every id and the rows' length (or where each row ends, when they differ): a tuple of
    tuples holds an int object and two slots per device, about 100 bytes a device of the
    lists of thousands of devices XLA can print, against 8 here. It reads as a tuple of
    tuples: `len`, indexing and slicing, iteration (each row a tuple made when read), and
    equality with one."""

    __slots__ = ("_ids", "_size", "_ends", "_hash")

    def __init__(self, rows: Iterable[Sequence[int]]) -> None:
        rows = rows if isinstance(rows, list | tuple) else list(rows)
        lengths = list(map(len, rows))
        self._ids = array("q", chain.from_iterable(rows))
        size = lengths[0] if lengths else 0
        if size and lengths.count(size) == len(lengths):
            self._size, self._ends = size, None  # rows of one length: no ends kept
        elif not lengths:
            self._size, self._ends = 0, None
        else:
            self._size, self._ends = -1, array("q", accumulate(lengths))
        self._hash: int | None = None

    @classmethod
    def of_flat(cls, ids: Sequence[int], size: int) -> Groups:
        """Rows of `size` ids each (`size` >= 1), from all their ids in order."""
        g = cls(())
        if len(ids):
            g._ids = array("q", ids)
            g._size = size
        return g

    @classmethod
    def of_array(cls, rows: np.ndarray) -> Groups:
        """The rows of a 2-D array of ids (without a Python int per id)."""
        g = cls(())
        count, size = rows.shape
        if count and size:
            g._ids = array("q", rows.astype("int64", copy=False).tobytes())
            g._size = int(size)
        elif count:  # rows of nothing
            g._size, g._ends = -1, array("q", bytes(8 * count))
        return g

    def __len__(self) -> int:
        if self._ends is not None:
            return len(self._ends)
        return len(self._ids) // self._size if self._size else 0

    def _row(self, i: int) -> tuple[int, ...]:
        if self._ends is None:
            s = self._size
            return tuple(self._ids[i * s : (i + 1) * s])
        start = self._ends[i - 1] if i else 0
        return tuple(self._ids[start : self._ends[i]])

    def __getitem__(self, i: Any) -> Any:
        n = len(self)
        if isinstance(i, slice):
            return tuple(self._row(j) for j in range(*i.indices(n)))
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("group index out of range")
        return self._row(i)

    def __iter__(self) -> Iterator[tuple[int, ...]]:
        if self._ends is None and self._size:
            return zip(*[iter(self._ids)] * self._size, strict=False)  # rows, made in C
        return (self._row(i) for i in range(len(self)))

    @property
    def num_ids(self) -> int:
        """Ids in all rows."""
        return len(self._ids)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Groups):
            return (self._ids, self._size, self._ends) == (other._ids, other._size, other._ends)
        if isinstance(other, tuple):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            ends = self._ends.tobytes() if self._ends is not None else b""
            self._hash = hash((self._ids.tobytes(), self._size, ends))
        return self._hash

    def __repr__(self) -> str:
        return f"Groups({tuple(self)!r})"

    def __reduce__(self):
        return (Groups, (tuple(self),))


@dataclass(frozen=True)
class ReplicaGroups:
    """Parsed `replica_groups`: the device ids of each group, row by row."""

    form: Form
    text: str  # as written
    #: the groups; None for `{}` (one group of every device: its size is the module's count)
    groups: Groups | None
    #: mesh form only: the collective's own mesh and the axes named
    mesh: Mesh | None = None
    axes: tuple[AxisRef, ...] = ()

    @property
    def group_size(self) -> int | None:
        """Devices per group (None for `{}`)."""
        if not self.groups:
            return None
        return len(self.groups[0])

    @property
    def num_devices(self) -> int | None:
        if self.groups is None:
            return None
        return self.groups.num_ids


_IOTA = re.compile(r"\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?")


def replica_groups_end(line: str, pos: int) -> int:
    """Index after the `replica_groups=` value starting at `line[pos]`; -1 when unclosed."""

    c = line[pos : pos + 1]
    if c == "{":
        m = _PRINTED_ID_LISTS.match(line, pos)  # as XLA prints them: one pass in C
        return m.end() if m else brace_end(line, pos)
    if c == "[":
        m = _IOTA.match(line, pos)
        return m.end() if m else _word_end(line, pos)
    brace = line.find("{", pos)  # mesh form: the axes list closes it
    return brace_end(line, brace) if brace >= 0 else -1


def id_count(groups: Sequence[Sequence[int]]) -> int:
    """The ids in all rows of `groups` (`Groups` knows without reading them)."""
    if isinstance(groups, Groups):
        return groups.num_ids
    return sum(len(g) for g in groups)


def _word_end(line: str, pos: int) -> int:
    end = line.find(",", pos)
    return len(line) if end < 0 else end


def parse_replica_groups(text: str) -> ReplicaGroups:
    """Any spelling of a `replica_groups=` value; ParseError (with its column) if malformed.
    (The collective scan reads each distinct collective line once per run.)"""
    t = text.strip()
    if t.startswith("{"):
        groups = parse_id_lists(t, "a device id")
        return ReplicaGroups("list", text, Groups(groups) if groups else None)
    if t.startswith("["):
        return _iota(t)
    if t.startswith(("mesh", "@mesh")):
        return _mesh_form(t)
    raise ParseError("replica groups: '{{...}}', '[G,S]<=[...]' or 'mesh[...] {...}'", text, 0)


def parse_pairs(text: str) -> Groups:
    """`source_target_pairs={{0,1},{1,2}}` (the braces) → ((0, 1), (1, 2)), as `Groups`."""
    pairs = parse_id_lists(text.strip(), "a device id")
    for p in pairs:
        if len(p) != 2:
            raise ParseError("pairs of two device ids ({source,target})", text, 0)
    return Groups(pairs)


#: id lists as XLA prints them (no spaces, ids of at most 9 digits): read by splitting
_PRINTED_ID_LISTS = re.compile(r"\{(?:\{\d{1,9}(?:,\d{1,9})*\}(?:,\{\d{1,9}(?:,\d{1,9})*\})*)?\}")


def parse_id_lists(text: str, what: str) -> list[tuple[int, ...]]:
    """`{{0,1},{2,3}}` → [(0, 1), (2, 3)] (spaces allowed), `{}` → []."""
    if _PRINTED_ID_LISTS.fullmatch(text):  # a collective scan reads thousands of these
        if text == "{}":
            return []
        out = [tuple(map(int, g.split(","))) for g in text[2:-2].split("},{")]
        if sum(map(len, out)) <= limits.MAX_DEVICES:
            return out
    return read_id_lists(text, what)  # spaces, or an error to point at


def read_id_lists(text: str, what: str) -> list[tuple[int, ...]]:
    """`parse_id_lists` with a cursor: any spacing, errors with their column."""
    cur = Cursor(text)
    cur.expect("{", "'{'")
    out: list[tuple[int, ...]] = []
    while not cur.accept("}"):
        if out:
            cur.expect(",", "',' or '}'")
        cur.expect("{", "'{' to start a group")
        ids: list[int] = []
        while not cur.accept("}"):
            if ids:
                cur.expect(",", "',' or '}'")
            ids.append(cur.integer(what, signed=False))
        out.append(tuple(ids))
        check_device_count(sum(len(g) for g in out) or 1, "replica groups")
    if not cur.at_end():
        raise cur.error("end of the groups")
    return out


def _iota(text: str) -> ReplicaGroups:

    m = _IOTA.fullmatch(text)
    if m is None:
        raise ParseError("an iota replica group list '[G,S]<=[dims]T(perm)'", text, 0)
    g, s = int(m.group(1)), int(m.group(2))
    reshape = [int(x) for x in m.group(3).split(",")]
    perm = [int(x) for x in m.group(4).split(",")] if m.group(4) else None
    if len(reshape) > MAX_RANK:
        raise ParseError(f"at most {MAX_RANK} iota dimensions", text, m.start(3))
    try:
        tile = TileAssignment.iota((g, s), reshape, perm)
    except MeshdiagError as e:
        raise ParseError(f"a valid iota ({e})", text, 0) from None
    if tile.num_devices <= LISTED_IOTA_DEVICES:  # listed in Python: no numpy import
        return ReplicaGroups("iota", text, Groups.of_flat(tile.devices(), s))
    return ReplicaGroups("iota", text, Groups.of_array(tile.array()))


def _mesh_form(text: str) -> ReplicaGroups:

    cur = Cursor(text)
    close = ">" if cur.accept("@mesh<") else None
    if close is None:
        if not cur.accept_word("mesh"):
            raise cur.error("'mesh[' or '@mesh<'")
        cur.expect("[", "'[' to start the mesh axes")
        close = "]"
    axes = read_mesh_axes(cur, close, "replica group mesh")
    ids = None
    if cur.accept(","):
        if not cur.accept_word("device_ids"):
            raise cur.error("'device_ids='")
        cur.expect("=", "'='")
        ids = read_device_ids(cur, math.prod(s for _, s in axes))
    refs_pos = cur.ws().pos
    refs = read_axis_list(cur)
    if not cur.at_end():
        raise cur.error("end of the replica groups")
    try:
        mesh = Mesh(tuple(axes), ids)
        groups = mesh_groups(mesh, refs)
    except MeshdiagError as e:
        if isinstance(e, ParseError):
            raise
        raise ParseError(f"axes of the replica group mesh ({e})", text, refs_pos) from None
    return ReplicaGroups("mesh", text, groups, mesh, refs)


# -- groups of mesh axes ------------------------------------------------------------------


def axis_factors(mesh: Mesh, refs: tuple[AxisRef, ...]) -> list[tuple[str, int, int]]:
    """The mesh's axes cut into factors at every sub-axis boundary `refs` use, major to
    minor: (axis, pre, size) where the factor is `axis:(pre)size`. An axis x of size n with
    sub-axis `x:(m)k` is [m, k, n/(m·k)] (the sub-axis is the middle factor)."""
    cuts: dict[str, set[int]] = {name: {1, size} for name, size in mesh.axes}
    for r in refs:
        if r.name not in cuts:
            raise MeshdiagError(f"axis {r.name!r} is not in the mesh <{mesh.short()}>")
        if r.is_sub:
            full = mesh.axis_size(r.name)
            assert r.pre is not None and r.size is not None
            if r.pre < 1 or r.size < 1 or full % (r.pre * r.size):
                raise MeshdiagError(
                    f"sub-axis {r.name}:({r.pre}){r.size} does not divide axis {r.name}={full}"
                )
            cuts[r.name] |= {r.pre, r.pre * r.size}
    out = []
    for name in mesh.names:
        c = sorted(cuts[name])
        for lo, hi in zip(c, c[1:], strict=False):
            if hi % lo:
                raise MeshdiagError(f"sub-axes of {name!r} overlap (cuts at {lo} and {hi})")
            out.append((name, lo, hi // lo))
    return out


def axis_groups(mesh: Mesh, refs: tuple[AxisRef, ...]) -> np.ndarray:
    """Device ids of the groups that run over `refs` (in that order, major to minor): one row
    per group, groups ordered row-major over the other factors. No refs: every device alone."""
    factors, chosen = chosen_factors(mesh, refs)
    return groups_over(mesh, factors, chosen)


def chosen_factors(
    mesh: Mesh, refs: tuple[AxisRef, ...]
) -> tuple[list[tuple[str, int, int]], list[int]]:
    """The mesh's factors (`axis_factors`) and which of them `refs` run over, in their
    order; MeshdiagError unless the refs are distinct, non-overlapping (sub-)axes of the
    mesh. Checks `axis_groups`' arguments without making the groups (nor importing numpy)."""
    factors = axis_factors(mesh, refs)
    chosen: list[int] = []
    for r in refs:
        full = mesh.axis_size(r.name)
        lo, hi = (r.pre, r.pre * r.size) if r.is_sub else (1, full)  # type: ignore[operator]
        idx = [i for i, (a, pre, size) in enumerate(factors) if a == r.name and lo <= pre < hi]
        if any(i in chosen for i in idx):
            raise MeshdiagError(f"axis {r.name!r} is named twice in the replica group axes")
        chosen.extend(idx)
    return factors, chosen


def mesh_groups(mesh: Mesh, refs: tuple[AxisRef, ...]) -> Groups:
    """`axis_groups` as `Groups`; for a mesh of at most `LISTED_IOTA_DEVICES` devices made
    in Python (a dump's replica groups are a few small meshes: importing numpy for them was
    most of linting a small dump)."""
    factors, chosen = chosen_factors(mesh, refs)
    if mesh.size > LISTED_IOTA_DEVICES:
        return Groups.of_array(groups_over(mesh, factors, chosen))
    dims = [s for _, _, s in factors] or [1]
    # the mesh positions read over the other factors, then the chosen ones (the transpose
    # `groups_over` makes): an iota of the factors so transposed
    order = [i for i in range(len(dims)) if i not in chosen] + chosen
    at = TileAssignment.iota((mesh.size,), dims, order).devices()
    ids = mesh.ids
    return Groups.of_flat([ids[a] for a in at], math.prod(dims[i] for i in chosen))


def groups_over(mesh: Mesh, factors: list[tuple[str, int, int]], chosen: list[int]) -> np.ndarray:
    """Rows of devices varying over the factor dims `chosen` (in that order)."""
    devices = mesh.devices_array().reshape([s for _, _, s in factors] or [1])
    others = [i for i in range(len(factors)) if i not in chosen]
    n = 1
    for i in chosen:
        n *= factors[i][2]
    return devices.transpose(others + chosen).reshape(-1, n)
