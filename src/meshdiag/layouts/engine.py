"""The layout engine: sharding + global shape + split rule → what every device holds.

For a tiled sharding the tile assignment array `A` (shape `data_dims + subgroup_dims`) says
device `A[i0..ir-1, s...]` holds tile `(i0..ir-1)`; tile `i` along a dim of `n` elements split
`k` ways covers `split_dim(n, k, rule)` range `i` (XLA: `[min(i*c, n), min((i+1)*c, n))`,
`c = ceil(n/k)`, buffers padded to `c`). Everything is computed for all devices at once with
numpy: the position of each device in `A` (`np.unravel_index`) gathers its per-dim ranges.

    >>> lay = layout(HloSharding.tiled(TileAssignment.iota((1, 4, 2)), replicate_on_last=True),
    ...              (32, 32))
    >>> [d.slices for d in lay.devices()][:3]
    [((0, 32), (0, 8)), ((0, 32), (0, 8)), ((0, 32), (8, 16))]

Special kinds: `replicated` (every device, whole tensor), `maximal` (one device, whole tensor),
`manual`/`unknown` (every device, its whole local tensor — the relation between devices is not
known), `unreduced` (every device, whole shape, partial sums awaiting a reduction).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from meshdiag.errors import LimitError, MeshdiagError
from meshdiag.limits import MAX_DIM, MAX_RANK, check_device_count
from meshdiag.model.named_to_tiled import named_to_hlo
from meshdiag.model.sharding import HloSharding, NamedSharding
from meshdiag.model.splits import DimSplit, check_rule, split_dim
from meshdiag.model.tiles import LISTED_IOTA_DEVICES
from meshdiag.notation.detect import parse_sharding

if TYPE_CHECKING:
    import numpy as np

    from meshdiag.memo import RunMemos, Table
    from meshdiag.model.mesh import Mesh

JSON_VERSION = 1
#: devices per chunk of a streamed JSON device list
_JSON_CHUNK = 4096


@dataclass(frozen=True)
class DeviceShard:
    """One device's part of the tensor (a row of `Layout`)."""

    device: int
    #: half-open (start, stop) per dim in global coordinates; None when the device holds nothing
    slices: tuple[tuple[int, int], ...] | None
    shard_shape: tuple[int, ...] | None
    #: the per-device buffer (padded to the tile size under `xla`); None when there is none
    buffer_shape: tuple[int, ...] | None
    empty: bool
    #: devices with equal group ids hold the same data; -1 when the device holds nothing
    group: int
    #: tile coordinate per dim (all 0 for untiled kinds); None when the device holds nothing
    tile: tuple[int, ...] | None

    def to_json(self) -> dict:
        return {
            "device": self.device,
            "slices": [list(s) for s in self.slices] if self.slices is not None else None,
            "shard_shape": list(self.shard_shape) if self.shard_shape is not None else None,
            "buffer_shape": list(self.buffer_shape) if self.buffer_shape is not None else None,
            "empty": self.empty,
        }


class DeviceArrays(NamedTuple):
    """A layout's rows per device (read-only numpy arrays, device ids 0..N-1)."""

    #: [N, rank] int64 half-open ranges (0 where the device is not present)
    starts: np.ndarray
    stops: np.ndarray
    #: [N] bool: the device holds a buffer for this tensor
    present: np.ndarray
    #: [N, rank] int64 per-device buffer extents (0 where not present)
    buffers: np.ndarray
    #: [N, rank] int64 tile coordinates (-1 for devices outside the sharding's devices)
    tile_index: np.ndarray
    #: [N] int64 replica group ids, dense, numbered by lowest device; -1 where not present
    groups: np.ndarray


@dataclass(frozen=True, eq=False)
class Layout:
    """Per-device slices of one tensor: what the sharding, the dims' splits and the tiling
    say, and the per-device arrays (`DeviceArrays`: `starts`, `stops`, `present`, `buffers`,
    `tile_index`, `groups`) made from them when first asked. A picture reads its few tiles
    from the splits and the tiling alone (`tile_part`): a big file draws thousands of
    layouts of a few devices, and making their arrays was most of making them."""

    sharding: HloSharding
    shape: tuple[int, ...]
    split: str
    num_devices: int
    #: the sharding's kind: tiled, replicated, maximal, manual, unknown, unreduced
    kind: str
    #: number of tiles along each tensor dim (all 1 for untiled kinds)
    tiles: tuple[int, ...]
    #: devices hold partial sums (unreduced kind or unreduced subgroup dims)
    partial: bool = False
    #: devices hold manually partitioned (per-device) data: manual kind or manual subgroups
    manual: bool = False
    #: human notes about the semantics (manual/unknown/unreduced), for renderers
    notes: tuple[str, ...] = ()
    #: what the layout shares with every layout of its tiled sharding whatever the dims
    #: (None for untiled kinds)
    tiling: _Tiling | None = field(default=None, repr=False)
    #: per tensor dim, its split into `tiles[d]` shards (tiled kind; untiled kinds hold the
    #: whole tensor on each device holding data)
    ranges: tuple[DimSplit, ...] = field(default=(), repr=False)
    #: the one device holding data (maximal kind); None: every device
    only: int | None = field(default=None, repr=False)
    #: len(shape), kept: renderers ask for it hundreds of times a picture
    rank: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "rank", len(self.shape))

    @property
    def whole_shards(self) -> bool:
        """Every device holds data, none empty and none padded, as the dims' splits say (a
        picture's header then looks at no device)."""
        t = self.tiling
        if t is None:
            return self.only is None and 0 not in self.shape
        # (a whole split holds data in every shard: every device the sharding names does)
        return t.every_member and all(s.whole for s in self.ranges)

    @cached_property
    def arrays(self) -> DeviceArrays:
        """The per-device rows, made once when first asked."""
        return _tiled_arrays(self) if self.tiling is not None else _whole_arrays(self)

    @property
    def starts(self) -> np.ndarray:
        return self.arrays.starts

    @property
    def stops(self) -> np.ndarray:
        return self.arrays.stops

    @property
    def present(self) -> np.ndarray:
        return self.arrays.present

    @property
    def buffers(self) -> np.ndarray:
        return self.arrays.buffers

    @property
    def tile_index(self) -> np.ndarray:
        t = self.tiling
        return t.grid.tile_index if t is not None else self.arrays.tile_index

    @property
    def groups(self) -> np.ndarray:
        return self.arrays.groups

    def tile_part(
        self, index: tuple[int, ...]
    ) -> tuple[tuple[tuple[int, int], ...], tuple[int, ...], int] | None:
        """(slices, buffer, fit) of the tile at `index` (a tile of the sharding's devices),
        or None when they hold nothing (`chunk` past the last chunk); `fit`: 0 when every
        range is a whole tile, 1 when one is shorter (none empty), 2 when one is empty
        (`DimSplit.part`). From the dims' splits alone."""
        if self.tiling is None:  # untiled: the whole tensor
            shape = self.shape
            return tuple((0, n) for n in shape), shape, 2 if 0 in shape else 0
        slices = []
        buffer = []
        worst = 0
        for s, i in zip(self.ranges, index, strict=True):
            piece, held, buf, fit = s.part(i)
            if not held:
                return None
            slices.append(piece)
            buffer.append(buf)
            if fit > worst:
                worst = fit
        return tuple(slices), tuple(buffer), worst

    def tile_order(self) -> TileOrder:
        """The devices holding tiles, by tile: worked out once per tiling (it depends on
        the tile assignment alone), once per layout without one."""
        t = self.tiling
        if t is None:
            return TileOrder.whole(self)
        order = t.listed_order()  # a few devices: in Python
        if order is None:
            order = t.derived["order"] = TileOrder.of(self)
        return order

    def by_tiling(self, name: str) -> dict:
        """A dict the layouts of one tiling share, for what depends on its tile assignment
        alone (a picture's device lists as text); a new one for a layout without one."""
        t = self.tiling
        return {} if t is None else t.shared(name)

    @property
    def shard_shapes(self) -> np.ndarray:
        """[N, rank] valid extents (0 where not present)."""
        return self.stops - self.starts

    @property
    def empty(self) -> np.ndarray:
        """[N] bool: the device holds no element (absent, or a zero-length range)."""
        return self._empty_rows(0, self.num_devices)

    def _empty_rows(self, lo: int, hi: int) -> np.ndarray:
        """`empty[lo:hi]` without computing the other rows."""
        import numpy as np

        if self.rank == 0:
            return ~self.present[lo:hi]
        return ~self.present[lo:hi] | np.any(self.stops[lo:hi] <= self.starts[lo:hi], axis=1)

    @property
    def padded(self) -> np.ndarray:
        """[N] bool: the device's buffer is larger than its valid data."""
        import numpy as np

        if self.rank == 0:
            return np.zeros(self.num_devices, dtype=bool)
        return self.present & np.any(self.buffers > self.shard_shapes, axis=1)

    @property
    def num_groups(self) -> int:
        return int(self.groups.max()) + 1 if self.num_devices else 0

    def device(self, d: int) -> DeviceShard:
        if not 0 <= d < self.num_devices:
            raise MeshdiagError(f"device {d} is not among the {self.num_devices} devices")
        return next(self._records(d, d + 1))

    def devices(self) -> Iterator[DeviceShard]:
        """Per-device records in device-id order."""
        return self._records(0, self.num_devices)

    def _records(self, lo: int, hi: int) -> Iterator[DeviceShard]:
        starts = self.starts[lo:hi].tolist()
        stops = self.stops[lo:hi].tolist()
        bufs = self.buffers[lo:hi].tolist()
        tiles = self.tile_index[lo:hi].tolist()
        present = self.present[lo:hi].tolist()
        empty = self._empty_rows(lo, hi).tolist()
        groups = self.groups[lo:hi].tolist()
        for j in range(hi - lo):
            if not present[j]:
                yield DeviceShard(lo + j, None, None, None, True, -1, None)
                continue
            sl = tuple(zip(starts[j], stops[j], strict=True))
            yield DeviceShard(
                lo + j,
                sl,
                tuple(b - a for a, b in sl),
                tuple(bufs[j]),
                empty[j],
                groups[j],
                tuple(tiles[j]),
            )

    def to_json(self, gspmd: str | None = None) -> dict:
        """The `meshdiag layout --format json` document (docs/json.md, `contracts/layout.py`)."""
        return self.to_json_head(gspmd) | {"devices": [d.to_json() for d in self.devices()]}

    def write_json(self, out: IO[str], gspmd: str | None = None, extra: dict | None = None) -> None:
        """Write `json.dumps(to_json(gspmd) | extra)` to `out` without building it: the device
        list goes out in chunks, so a million devices (120 MB of JSON) cost chunk-sized
        memory."""
        import json

        head = self.to_json_head(gspmd)
        out.write(json.dumps(head)[:-1] + ', "devices": [')
        for lo in range(0, self.num_devices, _JSON_CHUNK):
            hi = min(lo + _JSON_CHUNK, self.num_devices)
            if lo:
                out.write(", ")
            out.write(self._json_devices(lo, hi))
        out.write("]")
        for key, value in (extra or {}).items():
            out.write(f", {json.dumps(key)}: {json.dumps(value)}")
        out.write("}")

    def devices_json_text(self) -> str:
        """`json.dumps([d.to_json() for d in self.devices()])[1:-1]`, formatted from the
        arrays (`inspect --layouts --format json` writes one per value)."""
        return self._json_devices(0, self.num_devices)

    def _json_devices(self, lo: int, hi: int) -> str:
        """`json.dumps([d.to_json() for d in devices lo..hi-1])[1:-1]`, formatted from the
        arrays row by row (a dict per device costs 20 s for a million)."""
        import numpy as np

        r = self.rank
        cols = np.empty((hi - lo, 1 + 4 * r), dtype=np.int64)
        cols[:, 0] = np.arange(lo, hi)
        cols[:, 1 : 1 + 2 * r : 2] = self.starts[lo:hi]
        cols[:, 2 : 2 + 2 * r : 2] = self.stops[lo:hi]
        cols[:, 1 + 2 * r : 1 + 3 * r] = self.stops[lo:hi] - self.starts[lo:hi]
        cols[:, 1 + 3 * r :] = self.buffers[lo:hi]
        pairs = ", ".join(["[%d, %d]"] * r)
        ints = ", ".join(["%d"] * r)
        held = (
            f'{{"device": %d, "slices": [{pairs}], "shard_shape": [{ints}], '
            f'"buffer_shape": [{ints}], "empty": %s}}'
        )
        none = (
            '{"device": %d, "slices": null, "shard_shape": null, "buffer_shape": null, '
            '"empty": true}'
        )
        present = self.present[lo:hi]
        empty = self._empty_rows(lo, hi)
        if present.all():  # one %-format for the whole chunk: the values as one flat tuple
            values = np.empty((hi - lo, cols.shape[1] + 1), dtype=object)
            values[:, :-1] = cols
            values[:, -1] = np.where(empty, "true", "false")
            return ", ".join([held] * (hi - lo)) % tuple(values.ravel().tolist())
        flags = ("false", "true")
        return ", ".join(
            held % (*row, flags[e]) if p else none % row[0]
            for row, p, e in zip(
                cols.tolist(),
                present.tolist(),
                empty.tolist(),
                strict=True,
            )
        )

    def to_json_head(self, gspmd: str | None = None) -> dict:
        """The layout JSON document's fields before `devices`."""
        return {
            "version": JSON_VERSION,
            "shape": list(self.shape),
            "split": self.split,
            "num_devices": self.num_devices,
            "gspmd": gspmd,
        }


#: up to so many devices `TileOrder.tile` reads a tile from lists made once, rather than
#: by numpy calls a tile
LISTED_ORDER_DEVICES = 4096


class TileOrder:
    """The devices of a layout that hold a tile (the sharding's devices; a scalar's present
    ones), sorted by tile in row-major order, devices ascending within a tile: `devs`, and
    for the k-th tile holding devices its run `devs[first[k]:end[k]]` and its row-major
    number `lin[k]`. Made as read-only arrays (`of`) or, for a few devices, as lists
    (`grouped`, `whole`: no numpy), each form made from the other when first asked; by
    tile number (`position`) and tile by tile (`tile`) for pictures of a few tiles."""

    __slots__ = ("tiles", "count", "_arrays", "_lists", "_position", "_tiles")

    def __init__(
        self,
        tiles: tuple[int, ...],
        count: int,
        arrays: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None,
        lists: tuple[list[int], list[int], list[int], list[int]] | None = None,
    ):
        self.tiles = tiles
        self.count = count  # devices holding tiles
        self._arrays = arrays
        self._lists = lists
        self._position: dict[int, int] | None = None
        self._tiles: dict[int, tuple[tuple[int, ...], tuple[int, ...], int]] = {}
        for a in arrays or ():
            a.flags.writeable = False

    @classmethod
    def of(cls, lay: Layout) -> TileOrder:
        """From the layout's per-device tile coordinates (a big tiling)."""
        import numpy as np

        member = lay.tile_index[:, 0] >= 0 if lay.rank else lay.present
        devs = np.nonzero(member)[0]
        if not any(k > 1 for k in lay.tiles):  # one tile
            bounds = np.array([0, len(devs)] if len(devs) else [], dtype=np.int64)
            zeros = np.zeros(len(bounds) // 2, dtype=np.int64)
            return cls(lay.tiles, len(devs), (devs, bounds[:1], bounds[1:], zeros))
        lin = np.ravel_multi_index(tuple(lay.tile_index[devs].T), lay.tiles)
        if len(lin) > 1 and not bool(np.all(lin[1:] >= lin[:-1])):
            order = np.argsort(lin, kind="stable")  # devices stay ascending within a tile
            devs, lin = devs[order], lin[order]
        cuts = np.flatnonzero(np.diff(lin)) + 1
        first = np.concatenate(([0], cuts)).astype(np.int64) if len(devs) else cuts
        end = np.concatenate((cuts, [len(devs)])).astype(np.int64) if len(devs) else cuts
        return cls(lay.tiles, len(devs), (devs, first, end, lin[first]))

    @classmethod
    def grouped(cls, devices: tuple[int, ...], per_tile: int, tiles: tuple[int, ...]) -> TileOrder:
        """From a tile assignment's devices in row-major order, `per_tile` a tile (its data
        dims lead: tile k's devices are the k-th run), in Python."""
        count = len(devices)
        if not count:
            return cls(tiles, 0, lists=([], [], [], []))
        first = list(range(0, count, per_tile))
        devs: list[int] = []
        for f in first:
            devs.extend(sorted(devices[f : f + per_tile]))
        end = [f + per_tile for f in first]
        return cls(tiles, count, lists=(devs, first, end, list(range(len(first)))))

    @classmethod
    def whole(cls, lay: Layout) -> TileOrder:
        """An untiled layout's one tile: the devices holding data (one for maximal)."""
        n = lay.num_devices
        if lay.only is not None:
            return cls(lay.tiles, 1, lists=([lay.only], [0], [1], [0]))
        if n <= LISTED_ORDER_DEVICES:
            return cls(lay.tiles, n, lists=(list(range(n)), [0], [n], [0]))
        import numpy as np  # (a million devices: not a list of them)

        def one(x: int) -> np.ndarray:
            return np.array([x], dtype=np.int64)

        return cls(lay.tiles, n, (np.arange(n, dtype=np.int64), one(0), one(n), one(0)))

    def _as_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if self._arrays is None:
            import numpy as np

            assert self._lists is not None
            arrays = tuple(np.array(x, dtype=np.int64) for x in self._lists)
            for a in arrays:
                a.flags.writeable = False
            self._arrays = arrays  # type: ignore[assignment]
        return self._arrays  # type: ignore[return-value]

    @property
    def devs(self) -> np.ndarray:
        return self._as_arrays()[0]

    @property
    def first(self) -> np.ndarray:
        return self._as_arrays()[1]

    @property
    def end(self) -> np.ndarray:
        return self._as_arrays()[2]

    @property
    def lin(self) -> np.ndarray:
        return self._as_arrays()[3]

    def tile(self, k: int) -> tuple[tuple[int, ...], tuple[int, ...], int]:
        """The k-th tile's coordinate per tensor dim, its devices and its row-major number
        (kept: the layouts of a tiling share its tile order, and pictures ask for the
        same few tiles)."""
        made = self._tiles.get(k)
        if made is not None:
            return made
        if self.count <= LISTED_ORDER_DEVICES:  # a few devices: from lists, made once
            devs, first, end, lins = self.lists()
            group = tuple(devs[first[k] : end[k]])
            lin = lins[k]
        else:
            group = tuple(self.devs[int(self.first[k]) : int(self.end[k])].tolist())
            lin = int(self.lin[k])
        index = []
        rest = lin
        for n in reversed(self.tiles):
            rest, i = divmod(rest, n)
            index.append(i)
        made = self._tiles[k] = (tuple(reversed(index)), group, lin)
        return made

    def __len__(self) -> int:
        return len(self._lists[3]) if self._lists is not None else len(self.lin)

    def lists(self) -> tuple[list[int], list[int], list[int], list[int]]:
        """(devs, first, end, lin) as lists."""
        if self._lists is None:
            self._lists = (
                self.devs.tolist(),
                self.first.tolist(),
                self.end.tolist(),
                self.lin.tolist(),
            )
        return self._lists

    def position(self) -> dict[int, int]:
        """Tile number → k."""
        if self._position is None:
            self._position = {t: k for k, t in enumerate(self.lists()[3])}
        return self._position


# -- the engine ----------------------------------------------------------------------------


def layout(
    sharding: HloSharding | NamedSharding | str,
    shape: tuple[int, ...] | list[int],
    *,
    split: str = "xla",
    num_devices: int | None = None,
    mesh: Mesh | None = None,
    memos: RunMemos | None = None,
    keep: bool = True,
) -> Layout:
    """Per-device slices of a tensor of `shape` under `sharding`.

    `sharding` is an `HloSharding`, a `NamedSharding` (converted to its tiled form), or text in
    any notation `meshdiag.parse_sharding` reads (a PartitionSpec needs `mesh`). `num_devices`
    defaults to the mesh's size, else the tile assignment's device count (1 for untiled kinds,
    `device+1` for maximal). Given the run's `memos`, what a tiled sharding's layout is
    whatever the dims is worked out once (`_Tiling`), and with `keep` a layout asked for again
    (pass dumps repeat the same few) is remembered there, within a million devices' worth
    (`keep=False` for layouts asked once each: a big file's pictures, on shapes that never
    repeat, would fill it with small layouts).
    """
    if isinstance(sharding, str):
        sharding = parse_sharding(sharding, mesh=mesh, rank=len(shape))
    if isinstance(sharding, NamedSharding):
        mesh = sharding.mesh or mesh  # the devices are the named sharding's mesh
        sharding = named_to_hlo(sharding, mesh)
    if not isinstance(sharding, HloSharding):
        raise MeshdiagError(f"cannot lay out {type(sharding).__name__}; expected a sharding")
    if num_devices is None and mesh is not None:
        num_devices = mesh.size
    shape = _check_shape(shape)
    split = check_rule(split)
    if num_devices is not None:
        num_devices = check_device_count(int(num_devices), "layout")
    if memos is None:
        return _compute(sharding, shape, split, num_devices)
    if not keep:
        return _compute(sharding, shape, split, num_devices, memos)
    known = memos.slot("layouts.engine", lambda: LayoutMemo(max_devices=1 << 20))
    key = (sharding, shape, split, num_devices)
    hit = known.get(key)
    if hit is None:
        hit = _compute(sharding, shape, split, num_devices, memos)
        known.put(key, hit)
    return hit


#: tilings a run keeps, of at most so many devices (each holds a few arrays of its device
#: count: at most about 64 KB, 16 MB in all; a big file draws a few distinct shardings per
#: module, mostly of a few devices)
MAX_TILINGS = 256
MAX_TILING_DEVICES = 1024
#: tilings of up to so many devices lay out in one gather (`_gathered`); bigger ones dim by
#: dim, without the [devices, rank] index array
MAX_GATHER_DEVICES = 4096
#: dim splits a run keeps, of at most so many shards (their shards read and, once asked,
#: 4 arrays: at most 2 KB each, 8 MB in all)
MAX_SPLITS = 4096
MAX_SPLIT_SHARDS = 64


class LayoutMemo:
    """Layouts by (sharding, shape, split, device count), least recently used out first,
    bounded by the devices they hold: a layout of a million devices is ~70 MB of arrays, so a
    count of entries would not bound memory."""

    def __init__(self, max_devices: int):
        from collections import OrderedDict

        self._data: OrderedDict[tuple, Layout] = OrderedDict()
        self._devices = 0
        self.max_devices = max_devices

    def get(self, key: tuple) -> Layout | None:
        hit = self._data.get(key)
        if hit is not None:
            self._data.move_to_end(key)
        return hit

    def put(self, key: tuple, lay: Layout) -> None:
        if lay.num_devices > self.max_devices:
            return
        self._data[key] = lay
        self._devices += lay.num_devices
        while self._devices > self.max_devices:
            _, old = self._data.popitem(last=False)
            self._devices -= old.num_devices

    def clear(self) -> None:
        self._data.clear()
        self._devices = 0


def _check_shape(shape: Any) -> tuple[int, ...]:
    try:
        dims = tuple(shape)
    except TypeError:
        raise MeshdiagError(f"tensor shape must be a sequence of sizes, got {shape!r}") from None
    if len(dims) > MAX_RANK:
        raise MeshdiagError(f"tensor rank {len(dims)} exceeds the limit of {MAX_RANK}")
    out = []
    for d in dims:
        try:
            if isinstance(d, bool):
                raise TypeError
            d = operator.index(d)  # ints and numpy integers, not floats
        except TypeError:
            raise MeshdiagError(f"tensor dimension {d!r} is not an integer") from None
        if d < 0:
            raise MeshdiagError(f"tensor dimension {d} is negative")
        if d >= MAX_DIM:  # the rows are int64: refused, not overflowed (an untiled layout
            # splits no dim, so `check_split` never sees it)
            raise LimitError(f"tensor dimension {d} is too large (limit {MAX_DIM - 1})")
        out.append(int(d))
    return tuple(out)


def _compute(
    sharding: HloSharding,
    shape: tuple[int, ...],
    split: str,
    num_devices: int | None,
    memos: RunMemos | None = None,
) -> Layout:
    kind = sharding.kind
    if kind == "tuple":
        raise MeshdiagError(
            f"a tuple sharding has {len(sharding.elements)} elements; lay out one element"
        )
    if kind == "tiled":
        return _tiled(sharding, shape, split, num_devices, memos)
    if kind == "maximal":
        dev = sharding.device if sharding.device is not None else 0
        n = num_devices if num_devices is not None else dev + 1
        if not 0 <= dev < n:
            raise MeshdiagError(f"maximal sharding names device {dev}, outside the {n} devices")
        return _whole(sharding, shape, split, n, only=dev)
    n = num_devices if num_devices is not None else 1
    notes: tuple[str, ...] = ()
    if kind == "manual":
        notes = ("manual: each device holds its own local tensor of this shape",)
    elif kind == "unknown":
        notes = ("unknown: the partitioner has not chosen a layout; shown as whole per device",)
    elif kind == "unreduced":
        notes = ("unreduced: each device holds partial sums of the whole tensor",)
    return _whole(sharding, shape, split, n, notes=notes)


def _whole(
    sharding: HloSharding,
    shape: tuple[int, ...],
    split: str,
    n: int,
    *,
    only: int | None = None,
    notes: tuple[str, ...] = (),
) -> Layout:
    """Every device (or just `only`) holds the whole tensor."""
    return Layout(
        sharding=sharding,
        shape=shape,
        split=split,
        num_devices=n,
        kind=sharding.kind,
        tiles=(1,) * len(shape),
        partial=sharding.kind == "unreduced",
        manual=sharding.kind in ("manual", "unknown"),
        notes=notes,
        only=only,
    )


def _whole_arrays(lay: Layout) -> DeviceArrays:
    """An untiled layout's rows: the whole tensor on every device (or just `lay.only`)."""
    import numpy as np

    n, shape, rank, only = lay.num_devices, lay.shape, lay.rank, lay.only
    present = np.ones(n, dtype=bool) if only is None else np.arange(n) == only
    full = np.broadcast_to(np.asarray(shape, dtype=np.int64), (n, rank))
    zeros = np.zeros((n, rank), dtype=np.int64)
    stops = np.where(present[:, None], full, zeros)
    # replicated data is one group; manual/unknown/unreduced data differs per device
    if lay.kind in ("replicated", "maximal"):
        groups = np.where(present, 0, -1)
    else:
        groups = np.arange(n, dtype=np.int64)
    tile_index = np.where(present[:, None], zeros, zeros - 1)
    return _frozen(zeros, stops, present, stops.copy(), tile_index, groups.astype(np.int64))


@dataclass(frozen=True, eq=False)
class _Tiling:
    """What a tiled sharding's layout is whatever the tensor's dims (for one rank and device
    count), shared by every layout made from it (`layout`'s `memos`: a big file draws the
    same few shardings on shapes that never repeat): its devices, what they hold
    (partial sums, manual data) and, made when first asked, its tile order (`derived`)
    and the per-device arrays (`grid`)."""

    sharding: HloSharding
    rank: int
    n: int
    partial: bool
    manual: bool
    notes: tuple[str, ...]
    #: the sharding names every device
    every_member: bool
    #: the devices of the tile assignment in row-major order (None for a big one: `grid`)
    devices: tuple[int, ...] | None = None
    #: what renderers work out from these alone, once (`Layout.tile_order`)
    derived: dict = field(default_factory=dict)

    @cached_property
    def grid(self) -> _TilingGrid:
        return _tiling_grid(self.sharding, self.rank, self.n)

    @cached_property
    def tiles(self) -> tuple[int, ...]:
        """Tiles along each tensor dim (`Layout.tiles` of every layout of the tiling); kept
        (a big file's pictures ask each time, on shapes that never repeat)."""
        tile = self.sharding.tile
        assert tile is not None
        return tuple(tile.dims[: self.rank])

    def shared(self, name: str) -> dict:
        """The dict named `name` of what renderers work out from the tiling alone
        (`derived`; `Layout.by_tiling`)."""
        d = self.derived.get(name)
        if d is None:
            d = self.derived[name] = {}
        return d

    def listed_order(self) -> TileOrder | None:
        """The devices holding tiles, by tile (`Layout.tile_order`), worked out once from
        the devices listed; None for a tiling too big to list them whose order no layout
        has made yet (from its arrays)."""
        order = self.derived.get("order")
        if order is None and self.devices is not None:
            order = self.derived["order"] = TileOrder.grouped(
                self.devices, self.tile_devices, self.tiles
            )
        return order

    @property
    def tile_devices(self) -> int:
        """Devices per tile: the product of the subgroup dims (the tile assignment's data
        dims lead, so a tile's devices are consecutive in row-major order)."""
        tile = self.sharding.tile
        assert tile is not None
        return math.prod(tile.dims[self.rank :])


class _TilingGrid(NamedTuple):
    """A tiling's arrays (read-only): the device at each position of the tile assignment
    (row-major), each position's coordinate along every tile dim, each device's tile
    index, its replica group key and the groups when every device holds data; up to
    MAX_GATHER_DEVICES, where each device's range along each dim is in the dims' split
    ranges laid end to end (`_gathered`) and which devices the sharding names."""

    arr: np.ndarray
    coords: tuple[np.ndarray, ...]
    tile_index: np.ndarray
    key_pos: np.ndarray
    groups: np.ndarray
    gather: np.ndarray | None
    member: np.ndarray | None


#: tilings of up to so many devices are checked and ordered in Python (no numpy: a big
#: file's pictures need none), their devices listed so too (`TileAssignment.devices`)
MAX_LISTED_TILING = LISTED_IOTA_DEVICES


def _tiling(sharding: HloSharding, rank: int, num_devices: int | None) -> _Tiling:
    tile = sharding.tile
    assert tile is not None
    data_rank = sharding.data_rank
    if data_rank is None or data_rank < 0:
        raise MeshdiagError(
            f"sharding has {tile.rank} tile dims but {sharding.num_subgroup_dims} subgroup dims"
        )
    if data_rank != rank:
        raise MeshdiagError(f"sharding tiles rank {data_rank}, tensor has rank {rank}")
    count = tile.num_devices
    devices = None
    if count <= MAX_LISTED_TILING:
        devices = tile.devices()
        n = _checked_devices(devices, num_devices)
    else:
        n = _checked_array(tile.array().reshape(-1), num_devices)
    kinds = sharding.subgroup_kinds()
    partial = "unreduced" in kinds
    manual = "manual" in kinds
    notes = []
    if partial:
        notes.append("unreduced subgroups: devices in a tile hold partial sums")
    if manual:
        notes.append("manual subgroups: devices in a tile hold their own local data")
    # (the devices named are distinct and within 0..n-1: all of them when as many)
    return _Tiling(sharding, rank, n, partial, manual, tuple(notes), count == n, devices)


def _checked_devices(devices: tuple[int, ...], num_devices: int | None) -> int:
    """The device count of a tile assignment naming `devices` (`num_devices`, else one more
    than the highest), after checking each is within it and named once (`_checked_array`
    in Python, the same errors)."""
    count = len(devices)
    max_id = max(devices) if count else -1
    n = num_devices if num_devices is not None else max(count, max_id + 1)
    if max_id >= n or (count and min(devices) < 0):
        bad = next(d for d in devices if d >= n or d < 0)
        raise MeshdiagError(
            f"tile assignment names device {bad}, outside the {n} devices (0..{n - 1})"
        )
    if len(set(devices)) < count:
        seen: set[int] = set()
        twice = min(d for d in devices if d in seen or seen.add(d))  # type: ignore[func-returns-value]
        raise MeshdiagError(f"tile assignment names device {twice} more than once")
    return n


def _checked_array(arr: np.ndarray, num_devices: int | None) -> int:
    import numpy as np

    count = arr.size
    max_id = int(arr.max()) if count else -1
    n = num_devices if num_devices is not None else max(count, max_id + 1)
    if max_id >= n or (count and int(arr.min()) < 0):
        bad = int(arr[(arr >= n) | (arr < 0)][0])
        raise MeshdiagError(
            f"tile assignment names device {bad}, outside the {n} devices (0..{n - 1})"
        )
    seen = np.bincount(arr, minlength=n)
    if count and seen.max() > 1:
        raise MeshdiagError(
            f"tile assignment names device {int(np.argmax(seen > 1))} more than once"
        )
    return n


def _tiling_grid(sharding: HloSharding, rank: int, n: int) -> _TilingGrid:
    import numpy as np

    tile = sharding.tile
    assert tile is not None
    arr = tile.array().reshape(-1)
    count = arr.size
    coords = np.unravel_index(np.arange(count), tile.dims)
    tile_index = np.full((n, rank), -1, dtype=np.int64)
    for d in range(rank):  # kept for `chunk`-absent devices too: renderers show their tile
        tile_index[arr, d] = coords[d]
    # replica groups: same tile and same coordinate along non-replicated subgroup dims
    kinds = sharding.subgroup_kinds()
    keep = list(range(rank)) + [rank + j for j, k in enumerate(kinds) if k != "replicated"]
    if keep:
        key_pos = np.ravel_multi_index(
            tuple(coords[j] for j in keep), tuple(tile.dims[j] for j in keep)
        )
    else:
        key_pos = np.zeros(count, dtype=np.int64)
    gather = member = None
    if n <= MAX_GATHER_DEVICES:
        member = np.zeros(n, dtype=bool)  # the devices the sharding names
        member[arr] = True
        offsets = np.cumsum((0, *tile.dims[: rank - 1]), dtype=np.int64) if rank else 0
        end = sum(tile.dims[:rank])
        gather = np.where(member[:, None], tile_index + offsets, end)
    g = _TilingGrid(
        arr, coords, tile_index, key_pos, _groups(n, arr, key_pos, None), gather, member
    )
    for a in (g.arr, g.tile_index, g.key_pos, g.groups, *g.coords, gather, member):
        if a is not None:
            a.flags.writeable = False
    return g


def _groups(n: int, arr: np.ndarray, key_pos: np.ndarray, absent: np.ndarray | None):
    """Each device's replica group (`_dense_groups` of its key; -1 where it holds nothing)."""
    import numpy as np

    key = np.full(n, -1, dtype=np.int64)
    key[arr] = key_pos
    if absent is not None:
        key[absent] = -1
    return _dense_groups(key)


def _tiled(
    sharding: HloSharding,
    shape: tuple[int, ...],
    split: str,
    num_devices: int | None,
    memos: RunMemos | None = None,
) -> Layout:
    rank = len(shape)
    t = tiling_of(sharding, rank, num_devices, memos)
    splits = memos.table("layouts.splits", MAX_SPLITS) if memos is not None else None
    tile = sharding.tile
    assert tile is not None
    ranges = tuple(_split(shape[d], tile.dims[d], split, d, splits) for d in range(rank))
    return Layout(
        sharding=sharding,
        shape=shape,
        split=split,
        num_devices=t.n,
        kind="tiled",
        tiles=tuple(tile.dims[:rank]),
        partial=t.partial,
        manual=t.manual,
        notes=t.notes,
        tiling=t,
        ranges=ranges,
    )


class TiledSpec(NamedTuple):
    """A tiled layout before it is made: its tiling, the tensor's shape and the split rule
    (`layout(tiling.sharding, shape, split=split, num_devices=...)` makes it). A picture
    of whole tiles is drawn from these alone (`report.whole.whole_text`)."""

    tiling: _Tiling
    shape: tuple[int, ...]
    split: str


def tiling_of(
    sharding: HloSharding, rank: int, num_devices: int | None, memos: RunMemos | None = None
) -> _Tiling:
    """What every layout of the tiled `sharding` over tensors of `rank` on `num_devices`
    shares (`_Tiling`), kept in the run's `memos` up to MAX_TILING_DEVICES devices; a
    MeshdiagError where `layout` would raise one for it (a rank or device count the
    sharding does not fit)."""
    key = (sharding, rank, num_devices)
    tilings = memos.table("layouts.tilings", MAX_TILINGS) if memos is not None else None
    t = tilings.get(key) if tilings is not None else None
    if t is None:
        t = _tiling(sharding, rank, num_devices)
        if tilings is not None and t.n <= MAX_TILING_DEVICES:
            tilings.put(key, t)
    return t


def whole_spec(
    sharding: HloSharding,
    shape: tuple[int, ...],
    split: str,
    num_devices: int | None,
    memos: RunMemos | None = None,
) -> TiledSpec | None:
    """The layout `layout(sharding, shape, split=split, num_devices=num_devices)` makes,
    named by a tiling and the shape (`TiledSpec`) where every dim splits evenly into it (so
    that any rule's shards are whole tiles): a tiled sharding's own tiling, or a replicated
    matrix's (`replicated_tiling`). None for any other layout, one `layout` refuses, or a
    tiling of more than MAX_TILING_DEVICES devices (not kept for the run: `layout` works it
    out once)."""
    if not shape or len(shape) > MAX_RANK:  # (a scalar's picture is its layout's)
        return None
    kind, n = sharding.kind, num_devices
    try:
        check_rule(split)
        if n is not None:
            n = check_device_count(n, "layout")
        if kind == "tiled":
            if max(sharding.num_devices or 0, n or 0) > MAX_TILING_DEVICES:
                return None
            t = tiling_of(sharding, len(shape), n, memos)
        elif kind == "replicated" and len(shape) == 2:  # (other ranks' pictures are planned)
            n = 1 if n is None else n  # (as `_compute`)
            if n > MAX_TILING_DEVICES:
                return None
            t = replicated_tiling(2, n, memos)
        else:
            return None
    except MeshdiagError:
        return None
    for d, k in zip(shape, t.tiles, strict=True):  # (ints within `layout`'s limits)
        if d.__class__ is not int or not 0 < d < MAX_DIM or d % k:
            return None
    return TiledSpec(t, shape, split)


def replicated_tiling(rank: int, n: int, memos: RunMemos | None = None) -> _Tiling:
    """The tiling a replicated layout of `rank` on `n` devices has the devices of: one tile,
    the whole tensor, held by each device (that of `{devices=[1,...,1,n]<=[n]
    last_tile_dim_replicate}`), kept in `memos` up to MAX_TILING_DEVICES devices: a picture
    of the replicated layout is the picture of a layout of this tiling
    (`report.whole.whole_text`)."""
    known = memos.table("layouts.replicated", MAX_TILINGS) if memos is not None else None
    t = known.get((rank, n)) if known is not None else None
    if t is None:
        from meshdiag.model.tiles import TileAssignment

        one = HloSharding.tiled(TileAssignment.iota((1,) * rank + (n,)), replicate_on_last=True)
        t = tiling_of(one, rank, n, memos)
        if known is not None and n <= MAX_TILING_DEVICES:
            known.put((rank, n), t)
    return t


def _tiled_arrays(lay: Layout) -> DeviceArrays:
    """A tiled layout's rows, from its tiling and its dims' splits."""
    import numpy as np

    assert lay.tiling is not None
    t, ranges, rank, n = lay.tiling.grid, lay.ranges, lay.rank, lay.num_devices
    arr, coords = t.arr, t.coords
    if t.gather is not None:
        starts, stops, buffers, present = _gathered(t, list(ranges))
    else:
        # the coordinates of every position of the assignment array, gathered per dim from
        # the split's ranges and scattered to device rows (one [count] temporary at a time:
        # a million devices must not cost a dozen [count, rank] copies)
        starts = np.zeros((n, rank), dtype=np.int64)
        stops = np.zeros((n, rank), dtype=np.int64)
        buffers = np.zeros((n, rank), dtype=np.int64)
        dim_present = None
        for d, s in enumerate(ranges):  # per dim (rank ≤ 64), vectorised over devices
            idx = coords[d]
            starts[arr, d] = s.starts[idx]
            stops[arr, d] = s.stops[idx]
            buffers[arr, d] = s.buffers[idx]
            if not s.present.all():
                held = s.present[idx]
                dim_present = held if dim_present is None else dim_present & held
        present = np.zeros(n, dtype=bool)
        # `chunk`: positions past the last chunk along a dim hold nothing
        present[arr] = True if dim_present is None else dim_present
    groups = t.groups
    if present is not t.member:
        absent = ~present
        if absent.any():
            starts[absent] = 0
            stops[absent] = 0
            buffers[absent] = 0
            groups = _groups(n, arr, t.key_pos, absent)
    return _frozen(starts, stops, present, buffers, t.tile_index, groups)


def _gathered(
    t: _TilingGrid, ranges: list[DimSplit]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(starts, stops, buffers, present) of a small tiling's devices, each array taken
    from the dims' ranges laid end to end in one step (`_TilingGrid.gather`), rather than one
    numpy call per dim and array: a 2-D layout of 8 devices took 48 us, most of it in the
    calls' own cost. Devices the sharding does not name read the 0 at the end; `present`
    is the tiling's own `member` unless `chunk` leaves some device without data."""
    import numpy as np

    gather = t.gather
    assert gather is not None and t.member is not None
    zero = np.zeros(1, dtype=np.int64)

    def take(field: str) -> np.ndarray:
        return np.concatenate([getattr(s, field) for s in ranges] + [zero])[gather]

    present = t.member
    if not all(s.present.all() for s in ranges):  # `chunk`: past the last chunk, nothing
        held = np.concatenate([s.present for s in ranges] + [zero.astype(bool)])[gather]
        present = held.all(axis=1) & t.member
    return take("starts"), take("stops"), take("buffers"), present


def _split(n: int, k: int, rule: str, dim: int, splits: Table | None) -> DimSplit:
    """`split_dim`, remembered in `splits` for splits of at most MAX_SPLIT_SHARDS shards:
    a run's dims repeat across shapes that do not, and a split keeps the shards read of it
    (`DimSplit.part`) and its arrays once made."""
    if splits is None or k > MAX_SPLIT_SHARDS:
        return split_dim(n, k, rule, dim=dim)
    key = (n, k, rule)
    s = splits.get(key)
    if s is None:
        s = splits.put(key, split_dim(n, k, rule, dim=dim))
    return s


def _dense_groups(key: np.ndarray) -> np.ndarray:
    """Renumber keys (-1 = none) to 0..G-1 in order of each key's lowest device."""
    import numpy as np

    out = np.full(key.shape, -1, dtype=np.int64)
    valid = key >= 0
    if not valid.any():
        return out
    vals = key[valid]
    if len(vals) < 2 or bool(np.all(vals[1:] > vals[:-1])):  # every device its own group
        out[valid] = np.arange(len(vals), dtype=np.int64)
        return out
    # (a sort, not np.unique: numpy 2.4's unique hashes and is 10x slower on a million keys)
    order = np.argsort(vals, kind="stable")
    ordered = vals[order]
    new = np.concatenate(([True], ordered[1:] != ordered[:-1]))
    first = order[new]  # lowest position (= lowest device) of each key, by key
    rank_of = np.empty(len(first), dtype=np.int64)
    rank_of[np.argsort(first, kind="stable")] = np.arange(len(first), dtype=np.int64)
    inverse = np.empty(len(vals), dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    out[valid] = rank_of[inverse]
    return out


def _frozen(*arrays: np.ndarray) -> DeviceArrays:
    """`DeviceArrays` of `arrays`, contiguous and read-only."""
    import numpy as np

    out = []
    for a in arrays:
        a = np.ascontiguousarray(a)
        a.flags.writeable = False
        out.append(a)
    return DeviceArrays(*out)


# -- uneven dims ---------------------------------------------------------------------------


@dataclass(frozen=True)
class UnevenDim:
    """How one tensor dim splits into shards, and which devices are short, empty or padded.

    Device tuples are sorted device ids. `absent_devices` hold no buffer at all (`chunk` past
    the last chunk); `empty_devices` have a zero-length range along this dim (absent or not);
    `short_devices` have a non-empty range shorter than the full tile `tile`; `padded_devices`
    have a buffer longer than their valid range along this dim.
    """

    dim: int
    size: int
    shards: int
    split: str
    tile: int  # ceil(size / shards)
    sizes: tuple[int, ...]  # valid extent of shard 0..shards-1
    buffers: tuple[int, ...]  # buffer extent of shard 0..shards-1 (0 = no buffer)
    short_devices: tuple[int, ...]
    empty_devices: tuple[int, ...]
    absent_devices: tuple[int, ...]
    padded_devices: tuple[int, ...]

    @property
    def divisible(self) -> bool:
        return self.size % self.shards == 0


def uneven_report(lay: Layout, *, only_uneven: bool = True) -> list[UnevenDim]:
    """Per tensor dim (only dims not divisible by their shard count unless `only_uneven` is
    False): shard sizes and the devices that are short, empty, absent or padded along it."""
    import numpy as np

    out = []
    dev = np.arange(lay.num_devices)
    for d, (size, k) in enumerate(zip(lay.shape, lay.tiles, strict=True)):
        if only_uneven and size % k == 0:
            continue
        s = split_dim(size, k, lay.split, dim=d)
        c = -(-size // k)
        ext = lay.stops[:, d] - lay.starts[:, d]
        p = lay.present
        out.append(
            UnevenDim(
                dim=d,
                size=size,
                shards=k,
                split=lay.split,
                tile=c,
                sizes=tuple((s.stops - s.starts).tolist()),
                buffers=tuple(np.where(s.present, s.buffers, 0).tolist()),
                short_devices=tuple(dev[p & (ext > 0) & (ext < c)].tolist()),
                empty_devices=tuple(dev[~p | (ext == 0)].tolist()),
                absent_devices=tuple(dev[~p].tolist()),
                padded_devices=tuple(dev[p & (lay.buffers[:, d] > ext)].tolist()),
            )
        )
    return out
