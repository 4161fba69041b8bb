"""Simulate a host→device copy on a mesh: mapper → allocate → copy → read back.

The four steps follow TTNN (reference notes ttnn_uneven.md §1–§2, §6):

1. **Map.** The source `arange(prod(shape)).reshape(shape)` (float32, so every element is
   recognisable) is split by the mapper. TTNN mappers split each sharded dim with the split rule
   (`chunk` = torch.chunk by default) over a *distribution shape* — `(N,)` for replicate/shard:D,
   the mesh shape or an override for 2-D/N-D mappers — and place cell i of that shape on a device:
   SUBMESH keeps coordinates when the distribution fits inside the mesh, ROW_MAJOR otherwise
   sends the i-th populated cell to the i-th device in row-major order (`get_remap_fn`).
   `chunk` can give fewer chunks than devices: trailing devices get nothing. `--ttnn-era` adds the
   validation of that era (`Shard shape mismatch`, `ND sharding requires ...`). Compiler notations
   (GSPMD/Shardy/PartitionSpec) are placed with `meshdiag.layouts.engine.layout`.
2. **Allocate** the destination: `fresh` (each device's spec = the shard it will receive, no
   buffer where it receives none), `uniform:SHAPE` (TTNN's `allocate_tensor_on_mesh`: the same
   spec on every device) or per-device shapes. Buffers start stale: NaN (`sentinel`) or a
   previous tensor (`previous`: -1, -2, ... running over devices in id order).
3. **Copy.** Each shard's elements go to the start of its device's buffer (a flat allocation; a
   shard larger than its buffer is refused, as TTNN refuses it). `by-reference` then replaces the
   destination's specs with the written devices' shard specs (current TTNN `copy_to_device`);
   `by-value` leaves the destination's specs as allocated (PR #18833's bug).
4. **Read back** every device the destination's specs list, each buffer reinterpreted as its
   spec, and compose (`concat:D`, `concat2d:R,C`, `first`, `tiles`; default: the mapper's
   inverse). Devices listed but never written return stale memory as data.

Everything is decided on index ranges first (that is the symbolic mode: regions, stale devices,
read-back shape and findings for a tensor of any size); data mode then moves the elements with
numpy slicing and `np.copyto` into preallocated buffers. `matches_source` is derived from the
ranges; in data mode the arrays are kept so callers can verify it element by element.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from meshdiag.errors import LimitError, MeshdiagError
from meshdiag.limits import MAX_DIM, MAX_MATERIALISED_ELEMENTS, MAX_RANK
from meshdiag.model.splits import check_rule, split_dim
from meshdiag.notation.ttnn import (
    Composer,
    Dest,
    TtnnMapper,
    parse_composer,
    parse_dest,
    parse_mapper,
    parse_per_device_specs,
    resolve_dim,
)

if TYPE_CHECKING:
    import numpy as np

    from meshdiag.layouts.engine import Layout
    from meshdiag.model.findings import Finding
    from meshdiag.model.mesh import Mesh

JSON_VERSION = 1
ERAS = ("current", "2025-05", "2025-03", "2024")
WRITES = ("by-reference", "by-value")
STALES = ("sentinel", "previous")

Ranges = tuple[tuple[int, int], ...]
Shape = tuple[int, ...]


# -- results -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeviceCopy:
    """One device after the copy."""

    device: int
    position: int  # row-major index in the mesh
    coord: tuple[int, ...]
    #: source region copied to this device (half-open per dim); None when nothing was written
    written: Ranges | None
    #: destination spec before the copy / after it (None = no buffer / not part of the tensor)
    allocated: Shape | None
    dest_shape: Shape | None
    #: read-back includes this device's buffer although nothing was written to it
    stale: bool
    #: written, but the destination spec differs from the shard (read back reinterpreted)
    mismatched: bool
    #: for a device without data: the zero-size spec it should have (`(1,0,32,32)`), if any
    empty_shape: Shape | None
    #: first/last written value as it sits in the buffer (data mode) or as the source holds
    #: it (symbolic); checksum: the exact sum of the source values written there
    first: float | None = None
    last: float | None = None
    checksum: float | None = None

    @property
    def shard_shape(self) -> Shape | None:
        return None if self.written is None else tuple(b - a for a, b in self.written)

    def to_json(self) -> dict:
        return {
            "device": self.device,
            "coord": list(self.coord),
            "dest_shape": list(self.dest_shape) if self.dest_shape is not None else None,
            "written": [list(r) for r in self.written] if self.written is not None else None,
            "stale": self.stale,
        }


PieceKind = Literal["data", "stale", "reinterpreted"]


@dataclass(frozen=True)
class Piece:
    """One device buffer's place in the read-back tensor."""

    device: int
    region: Ranges  # in read-back coordinates
    kind: PieceKind
    source: Ranges | None  # the source region written to that device
    matches: bool


@dataclass(frozen=True)
class Readback:
    shape: Shape
    matches_source: bool
    stale_devices: tuple[int, ...]
    pieces: tuple[Piece, ...]
    composer: str

    @property
    def differing(self) -> tuple[Piece, ...]:
        return tuple(p for p in self.pieces if not p.matches)

    def to_json(self) -> dict:
        return {
            "shape": list(self.shape),
            "matches_source": self.matches_source,
            "stale_devices": list(self.stale_devices),
        }


@dataclass(frozen=True)
class ShardedDim:
    """A tensor dim split `shards` ways, with the device ids at each shard index (for MD105)."""

    dim: int
    size: int
    shards: int
    ids_by_index: tuple[tuple[int, ...], ...]


@dataclass(eq=False)
class CopySimulation:
    mesh: Mesh
    shape: Shape
    mapper: str
    split: str
    dest: str
    write: str
    era: str
    stale_fill: str
    symbolic: bool
    devices: tuple[DeviceCopy, ...]  # sorted by device id
    readback: Readback
    findings: tuple[Finding, ...]
    #: data mode only: the source, each device's flat buffer, the read-back tensor
    buffers: dict[int, np.ndarray] = field(default_factory=dict, repr=False)
    readback_data: np.ndarray | None = field(default=None, repr=False)

    @property
    def source(self) -> np.ndarray | None:
        """The source tensor in data mode (`arange(prod(shape))` as float32), made on demand:
        the simulation itself gives the source's memory to the read-back once it is copied."""
        if self.symbolic:
            return None

        return _arange_f32(math.prod(self.shape)).reshape(self.shape)

    def device(self, device_id: int) -> DeviceCopy:
        for d in self.devices:
            if d.device == device_id:
                return d
        raise MeshdiagError(f"device {device_id} is not in the mesh")

    def to_json(self) -> dict:
        """The `meshdiag simulate-copy --format json` document (docs/json.md,
        `contracts/simulate_copy.py`)."""
        return {
            "version": JSON_VERSION,
            "mesh": {"shape": list(self.mesh.shape)},
            "source_shape": list(self.shape),
            "mapper": self.mapper,
            "split": self.split,
            "dest": self.dest,
            "write": self.write,
            "devices": [d.to_json() for d in self.devices],
            "readback": self.readback.to_json(),
            "findings": [f.to_json() for f in self.findings],
        }


# -- step 1: placement -------------------------------------------------------------------------


@dataclass
class _Placement:
    """Per mesh position: the source region it receives (None = nothing) and, for positions
    that receive nothing, the zero-size spec they would have had."""

    regions: list[Ranges | None]
    empty_shapes: list[Shape | None]
    sharded: list[ShardedDim]
    findings: list  # MD105, computed where the sharding is known
    default_composer: Composer
    layout: Layout | None = None


def _ttnn_shape(shape: Shape) -> str:
    return f"Shape([{', '.join(map(str, shape))}])"


def _shape_text(shape: Shape) -> str:
    return "(" + ",".join(map(str, shape)) + ")"


def _distribution(
    mesh: Mesh, placements_len: int, flat: bool, override: Shape | None, what: str
) -> tuple[Shape, bool]:
    """The distribution shape and whether it is placed SUBMESH (coordinates kept)."""
    n = mesh.size
    if flat:
        dist: Shape = (n,)
    else:
        dist = override if override is not None else mesh.shape
    if len(dist) != placements_len:
        raise MeshdiagError(
            f"The number of dimensions in the mesh shape {len(dist)} does not match the number "
            f"of placements in the config {placements_len} ({what} on mesh {mesh.shape_text()})"
        )
    if math.prod(dist) > n:
        raise MeshdiagError(
            f"The size of the supplied mesh shape {'x'.join(map(str, dist))} does not match the "
            f"device shape size {n} ({what})"
        )
    # compute_distribution_mode: no override, or an override that fits inside the mesh → SUBMESH
    submesh = (not flat and override is None) or (
        len(dist) == len(mesh.shape) and all(a <= b for a, b in zip(dist, mesh.shape, strict=True))
    )
    return dist, submesh


def _grid_positions(mesh: Mesh, dist: Shape, submesh: bool) -> np.ndarray:
    """Mesh position of every distribution cell, row-major over `dist` (ROW_MAJOR: i → i)."""
    import numpy as np

    cells = math.prod(dist)
    if not submesh:
        return np.arange(cells, dtype=np.int64)
    coords = np.unravel_index(np.arange(cells, dtype=np.int64), dist)
    return np.ravel_multi_index(coords, mesh.shape).astype(np.int64)


def _era_check(
    mapper: TtnnMapper,
    shape: Shape,
    era: str,
    dist: Shape,
    pl: tuple[int | None, ...],
    splits: dict[int, object],
    cell_shapes: list[Shape],
) -> None:
    """TTNN's validation of the mapped shards, as of `era` (notes §1.5)."""
    shard_axes = [a for a, p in enumerate(pl) if p is not None]
    if len(dist) > 1 and shard_axes:
        counts = {a: int(splits[a].present.sum()) for a in shard_axes}  # type: ignore[attr-defined]
        chunks = math.prod(counts.values())
        wanted = math.prod(dist[a] for a in shard_axes)
        if chunks != wanted:
            detail = ", ".join(
                f"dimension {pl[a]} of size {shape[pl[a]]} gives {counts[a]} chunks for "  # type: ignore[index]
                f"{dist[a]} devices"
                for a in shard_axes
                if counts[a] != dist[a]
            )
            if era == "current":
                msg = (
                    f"ND sharding requires the number of chunks {chunks} to match the mesh "
                    f"dimension size {wanted}"
                )
            elif era == "2024" and len(dist) == 2:
                shards = math.prod(counts.get(a, dist[a]) for a in range(2))
                msg = None
                if pl[1] is not None:  # the 2024 Python only checked when columns were sharded
                    msg = (
                        "ShardTensor2dMesh: Sharding failed. Number of shards should match the "
                        f"product of the mesh dimensions. Got {shards} shards but expected "
                        f"{dist[0] * dist[1]} ({dist[0]} rows * {dist[1]} cols)."
                    )
            else:
                shards = math.prod(counts.get(a, dist[a]) for a in range(len(dist)))
                msg = (
                    "ShardTensorTo2dMesh: Sharding failed. Number of shards should match the "
                    f"product of the mesh dimensions. Size: {shards}, rows: {dist[0]}, "
                    f"cols: {math.prod(dist[1:])}"
                )
            if msg is not None:
                raise MeshdiagError(
                    f"TTNN ({era}) rejects mapper '{mapper.text}' on shape "
                    f"{_shape_text(shape)}: {msg} ({detail}); pad the dimension to a multiple "
                    "of its mesh axis or shard it over fewer devices"
                )
    if not cell_shapes or era in ("2025-03", "2024"):
        return
    first = cell_shapes[0]
    other = next((s for s in cell_shapes if s != first), None)
    if other is None:
        return
    uneven = [
        (p, shape[p], dist[a]) for a, p in enumerate(pl) if p is not None and shape[p] % dist[a]
    ]
    detail = "; ".join(
        f"dimension {d} of size {n} over {k} devices gives chunks "
        + ",".join(str(int(x)) for x in _sizes(splits[a]))  # type: ignore[arg-type]
        for a, (d, n, k) in zip(
            (a for a, p in enumerate(pl) if p is not None), uneven, strict=False
        )
    )
    msg = (
        f"Shard shape mismatch: expected {_ttnn_shape(first)} but got {_ttnn_shape(other)}"
        if era == "current"
        else "All tensor shards must have the same tensor spec"
    )
    raise MeshdiagError(
        f"TTNN ({era}) rejects mapper '{mapper.text}' on shape {_shape_text(shape)}: {msg}"
        + (f" ({detail})" if detail else "")
        + "; use --ttnn-era 2025-03 to simulate that era's per-device specs, or pad the "
        "dimension to a multiple of its device count"
    )


def _sizes(s) -> list[int]:
    return [int(b - a) for a, b, p in zip(s.starts, s.stops, s.present, strict=True) if p]


def _ttnn_placement(mesh: Mesh, shape: Shape, m: TtnnMapper, split: str, era: str) -> _Placement:
    import numpy as np

    rank = len(shape)
    pl = tuple(
        None if p is None else resolve_dim(p, rank, f"mapper '{m.text}'") for p in m.placements
    )
    used = [p for p in pl if p is not None]
    if len(set(used)) != len(used):
        dup = next(p for p in used if used.count(p) > 1)
        raise MeshdiagError(
            f"mapper '{m.text}' shards tensor dimension {dup} along two mesh axes "
            "(TTNN: dims must be unique)"
        )
    dist, submesh = _distribution(mesh, len(pl), m.flat, m.override, f"mapper '{m.text}'")
    cells = math.prod(dist)
    coords = np.stack(np.unravel_index(np.arange(cells, dtype=np.int64), dist), axis=1)
    starts = np.zeros((cells, rank), dtype=np.int64)
    stops = np.tile(np.asarray(shape, dtype=np.int64), (cells, 1))
    bufs = stops.copy()
    present = np.ones(cells, dtype=bool)
    splits: dict[int, object] = {}
    for a, d in enumerate(pl):
        if d is None:
            continue
        if era == "current" and split == "chunk" and shape[d] == 0:
            raise MeshdiagError(
                f"TTNN (current) rejects mapper '{m.text}': No chunks were produced "
                f"(dimension {d} has size 0)"
            )
        s = split_dim(shape[d], dist[a], split, dim=d)
        splits[a] = s
        idx = coords[:, a]
        starts[:, d] = s.starts[idx]
        stops[:, d] = s.stops[idx]
        bufs[:, d] = s.buffers[idx]
        present &= s.present[idx]
    # TTNN's spec of each populated shard: the data shape (the padded buffer under `xla`)
    cell_specs = [tuple(r) for r in bufs[present].tolist()]
    _era_check(m, shape, era, dist, pl, splits, cell_specs)

    # place cells on mesh positions (get_remap_fn); unpopulated cells keep a position only so
    # findings can name the device that receives nothing
    if submesh:
        pos_of_cell = _grid_positions(mesh, dist, True)
    else:
        order = np.concatenate([np.flatnonzero(present), np.flatnonzero(~present)])
        pos_of_cell = np.empty(cells, dtype=np.int64)
        pos_of_cell[order] = np.arange(cells, dtype=np.int64)
    n = mesh.size
    regions: list[Ranges | None] = [None] * n
    empty_shapes: list[Shape | None] = [None] * n
    st, sp, pr, pc = starts.tolist(), stops.tolist(), present.tolist(), pos_of_cell.tolist()
    for c in range(cells):
        if pr[c]:
            regions[pc[c]] = tuple(zip(st[c], sp[c], strict=True))
        else:
            empty_shapes[pc[c]] = tuple(b - a for a, b in zip(st[c], sp[c], strict=True))
    ids = mesh.ids
    sharded = []
    for a, d in enumerate(pl):
        if d is None:
            continue
        by_index = tuple(
            tuple(ids[p] for p in pos_of_cell[coords[:, a] == i].tolist()) for i in range(dist[a])
        )
        sharded.append(ShardedDim(d, shape[d], dist[a], by_index))
    if m.kind == "replicate":
        comp = Composer("first", (None,), None, True, "first")
    elif m.kind == "shard":
        comp = Composer("concat", pl, None, True, f"concat:{pl[0]}")
    else:
        dims_text = ",".join("none" if p is None else str(p) for p in pl)
        ov = "@" + "x".join(map(str, m.override)) if m.override else ""
        comp = Composer("concat2d", pl, m.override, False, f"concat2d:{dims_text}{ov}")
    from meshdiag.checks.md105_uneven_shard import sharded_dim_findings

    findings = [f for sd in sharded for f in sharded_dim_findings(sd, split, where={})]
    return _Placement(regions, empty_shapes, sharded, findings, comp)


def _compiler_placement(mesh: Mesh, shape: Shape, text: str, split: str) -> _Placement:
    import numpy as np

    from meshdiag.checks.md105_uneven_shard import uneven_findings
    from meshdiag.layouts.engine import layout
    from meshdiag.notation.detect import parse_sharding

    lay = layout(parse_sharding(text, mesh=mesh, rank=len(shape)), shape, split=split, mesh=mesh)
    if lay.kind in ("manual", "unknown", "unreduced") or lay.partial or lay.manual:
        raise MeshdiagError(
            f"simulate-copy cannot place a {lay.kind} sharding '{text}': it does not say which "
            "slice of the tensor each device holds"
        )
    pos_of_id = {d: p for p, d in enumerate(mesh.ids)}
    n = mesh.size
    regions: list[Ranges | None] = [None] * n
    empty_shapes: list[Shape | None] = [None] * n
    starts, stops = lay.starts.tolist(), lay.stops.tolist()
    present, tiles = lay.present.tolist(), lay.tile_index.tolist()
    splits = [split_dim(shape[d], lay.tiles[d], split, dim=d) for d in range(len(shape))]
    for dev in range(lay.num_devices):
        if dev not in pos_of_id:
            raise MeshdiagError(f"sharding '{text}' names device {dev}, not in the mesh")
        p = pos_of_id[dev]
        if present[dev]:
            regions[p] = tuple(zip(starts[dev], stops[dev], strict=True))
        elif tiles[dev] and tiles[dev][0] >= 0:  # `chunk`: a tile past the last chunk
            empty_shapes[p] = tuple(
                int(splits[d].stops[t] - splits[d].starts[t]) for d, t in enumerate(tiles[dev])
            )
    del np
    findings = uneven_findings(lay.sharding, shape, split, where={}) if lay.kind == "tiled" else []
    return _Placement(
        regions, empty_shapes, [], findings, Composer("tiles", (None,), None, True, "tiles"), lay
    )


# -- step 4: composition (on shapes) -----------------------------------------------------------


def _concat(
    cells: list[tuple[tuple[int, ...], Shape, int | None]],
    dims: tuple[int, ...],
    rank: int,
    comp: str,
    ids: tuple[int, ...],
) -> tuple[Shape, list[tuple[int | None, Ranges]]]:
    """N-D concatenation (xtensor `concat_ndim`): grid axis a joins along tensor dim dims[a].

    `cells` are (grid index, piece shape, mesh position or None for a zero-size gap). Extents
    along dims[a] must depend only on the index along a; other dims must agree everywhere.
    """

    def who(pos: int | None) -> str:
        return "a missing tile" if pos is None else f"device {ids[pos]}'s buffer"

    ext: list[dict[int, tuple[int, int | None]]] = [{} for _ in dims]
    common: dict[int, tuple[int, int | None]] = {}
    for g, shp, pos in cells:
        if len(shp) != rank:
            raise MeshdiagError(
                f"cannot compose with '{comp}': {who(pos)} has rank {len(shp)}, the tensor {rank}"
            )
        for a, d in enumerate(dims):
            prev = ext[a].setdefault(g[a], (shp[d], pos))
            if prev[0] != shp[d]:
                raise MeshdiagError(
                    f"cannot compose with '{comp}': {who(pos)} is {shp[d]} long in dimension {d} "
                    f"but {who(prev[1])} at the same mesh index is {prev[0]}"
                )
        for d in range(rank):
            if d in dims:
                continue
            prev = common.setdefault(d, (shp[d], pos))
            if prev[0] != shp[d]:
                raise MeshdiagError(
                    f"cannot compose with '{comp}': all buffers must have the same shape outside "
                    f"the concatenated dims, but {who(pos)} has {shp[d]} in dimension {d} and "
                    f"{who(prev[1])} has {prev[0]}"
                )
    offsets: list[dict[int, int]] = []
    totals: list[int] = []
    for a in range(len(dims)):
        off, run = {}, 0
        for i in sorted(ext[a]):
            off[i] = run
            run += ext[a][i][0]
        offsets.append(off)
        totals.append(run)
    out = tuple(
        totals[dims.index(d)] if d in dims else common.get(d, (0, None))[0] for d in range(rank)
    )
    placed: list[tuple[int | None, Ranges]] = []
    for g, shp, pos in cells:
        region = []
        for d in range(rank):
            if d in dims:
                a = dims.index(d)
                lo = offsets[a][g[a]]
                region.append((lo, lo + shp[d]))
            else:
                region.append((0, shp[d]))
        placed.append((pos, tuple(region)))
    return out, placed


def _compose(
    mesh: Mesh,
    shape: Shape,
    comp: Composer,
    specs: list[Shape | None],
    placement: _Placement,
) -> tuple[Shape, list[tuple[int | None, Ranges]]]:
    """Read-back shape and where each listed device's buffer lands in it."""
    import numpy as np

    rank = len(shape)
    ids = mesh.ids
    if comp.kind == "tiles":
        lay = placement.layout
        if lay is None:
            raise MeshdiagError(
                "the 'tiles' composer needs a compiler sharding (GSPMD, Shardy or PartitionSpec) "
                "as the mapper; use concat:D or concat2d:R,C for TTNN mappers"
            )
        pos_of_id = {d: p for p, d in enumerate(ids)}
        owner: dict[tuple[int, ...], int] = {}
        for dev, t in enumerate(lay.tile_index.tolist()):
            p = pos_of_id[dev]
            if specs[p] is not None and t and t[0] >= 0:
                owner.setdefault(tuple(t), p)
        splits = [split_dim(shape[d], lay.tiles[d], lay.split, dim=d) for d in range(rank)]
        cells = []
        for g in np.ndindex(*lay.tiles):
            ext = tuple(int(splits[d].stops[i] - splits[d].starts[i]) for d, i in enumerate(g))
            if g in owner:
                cells.append((g, specs[owner[g]], owner[g]))
            elif math.prod(ext) == 0:
                cells.append((g, ext, None))  # an empty tile: nothing to read
            else:
                raise MeshdiagError(
                    f"cannot assemble the read-back: no device with a buffer holds tile "
                    f"{list(g)} (source {_region_text(_tile_region(splits, g))})"
                )
        return _concat(cells, tuple(range(rank)), rank, comp.text, ids)

    dims = tuple(
        None if d is None else resolve_dim(d, rank, f"composer '{comp.text}'") for d in comp.dims
    )
    used = [d for d in dims if d is not None]
    if len(set(used)) != len(used):
        raise MeshdiagError(
            f"composer '{comp.text}' concatenates one dimension twice: dims must be unique"
        )
    dist, submesh = _distribution(
        mesh, len(dims), comp.flat, comp.override, f"composer '{comp.text}'"
    )
    pos = _grid_positions(mesh, dist, submesh).reshape(dist)
    listed = np.array([s is not None for s in specs], dtype=bool)
    if len(dims) == 1:  # 1-D: join however many shards exist, in order (MeshToTensor 1D)
        order = [p for p in pos.reshape(-1).tolist() if listed[p]]
        if not order:
            raise MeshdiagError("nothing to read back: no device holds a buffer of the tensor")
        if dims[0] is None:
            order = order[:1]
            return _concat([((0,), specs[order[0]], order[0])], (), rank, comp.text, ids)
        cells = [((i,), specs[p], p) for i, p in enumerate(order)]
        return _concat(cells, (dims[0],), rank, comp.text, ids)
    # N-D: keep index 0 along `none` axes (meshdiag extension), concatenate the rest
    keep = tuple(a for a, d in enumerate(dims) if d is not None)
    sel = tuple(slice(None) if d is not None else 0 for d in dims)
    sub = pos[sel]
    need = sub.reshape(-1)
    have = int(listed[need].sum())
    if have != need.size:
        if not keep or len(keep) == len(dims):
            total = int(listed[pos.reshape(-1)].sum())
            raise MeshdiagError(
                f"ND composition requires the number of tensors {total} to match the mesh shape "
                f"{'x'.join(map(str, dist))} (composer '{comp.text}'); read back with a 1-D "
                "composer (concat:D) or fix the destination's specs"
            )
        raise MeshdiagError(
            f"composer '{comp.text}' reads {need.size} devices but only {have} hold a buffer"
        )
    if not keep:
        p = int(sub)
        return _concat([((0,), specs[p], p)], (), rank, comp.text, ids)
    cells = [(g, specs[int(sub[g])], int(sub[g])) for g in np.ndindex(*sub.shape)]
    return _concat(cells, tuple(d for d in dims if d is not None), rank, comp.text, ids)


def _tile_region(splits, g) -> Ranges:
    return tuple((int(splits[d].starts[i]), int(splits[d].stops[i])) for d, i in enumerate(g))


def _region_text(region: Ranges, shape: Shape | None = None) -> str:
    """`[0,7,:,:]`: an index where one wide, `:` where the whole dim, else `a:b`."""
    parts = []
    for d, (a, b) in enumerate(region):
        if shape is not None and a == 0 and b == shape[d]:
            parts.append(":")
        elif b == a + 1:
            parts.append(str(a))
        else:
            parts.append(f"{a}:{b}")
    return "[" + ",".join(parts) + "]"


region_text = _region_text


# -- values --------------------------------------------------------------------------------------


def _strides(shape: Shape) -> list[int]:
    out, run = [], 1
    for s in reversed(shape):
        out.append(run)
        run *= s
    return out[::-1]


def _flat(shape: Shape, idx: tuple[int, ...]) -> int:
    return sum(i * s for i, s in zip(idx, _strides(shape), strict=True))


def region_sum(shape: Shape, region: Ranges) -> int:
    """Exact sum of `arange(prod(shape)).reshape(shape)[region]`, without the data."""
    lens = [b - a for a, b in region]
    total = math.prod(lens)
    if total == 0:
        return 0
    out = 0
    for st, (a, b), n in zip(_strides(shape), region, lens, strict=True):
        out += st * ((a + b - 1) * n // 2) * (total // n)
    return out


# -- the simulation --------------------------------------------------------------------------


def _check_shape(shape) -> Shape:
    try:
        dims = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise MeshdiagError(f"tensor shape must be a sequence of integers, got {shape!r}") from None
    if len(dims) > MAX_RANK:
        raise MeshdiagError(f"tensor rank {len(dims)} exceeds the limit of {MAX_RANK}")
    for d in dims:
        if d < 0:
            raise MeshdiagError(f"tensor dimension {d} is negative")
        if d >= MAX_DIM:
            raise LimitError(f"tensor dimension {d} is too large (limit {MAX_DIM - 1})")
    return dims


def _check_choice(value: str, choices: tuple[str, ...], what: str) -> str:
    if value not in choices:
        raise MeshdiagError(f"unknown {what} {value!r}; expected one of {', '.join(choices)}")
    return value


def load_dest(text: str | Dest) -> Dest:
    """`fresh` / `uniform:SHAPE` / `per-device:FILE` (reads FILE: .json or .toml)."""
    dest = parse_dest(text) if isinstance(text, str) else text
    if dest.kind == "per-device" and dest.shapes is None:
        path = dest.path or ""
        fmt = "toml" if path.lower().endswith(".toml") else "json"
        from meshdiag.fileio import read_text

        content = read_text(path, "per-device specs", limit=16 << 20)
        dest = Dest(
            "per-device",
            shapes=parse_per_device_specs(content, fmt, path),
            path=path,
            text=dest.text,
        )
    return dest


def _allocate(
    mesh: Mesh, shape: Shape, dest: Dest, regions: list[Ranges | None]
) -> list[Shape | None]:
    n = mesh.size
    rank = len(shape)
    if dest.kind == "fresh":
        return [None if r is None else tuple(b - a for a, b in r) for r in regions]
    if dest.kind == "uniform":
        assert dest.shape is not None
        if len(dest.shape) != rank:
            raise MeshdiagError(
                f"destination spec {_shape_text(dest.shape)} has rank {len(dest.shape)}, "
                f"but the tensor {_shape_text(shape)} has rank {rank}"
            )
        return [dest.shape] * n
    shapes = dest.shapes or ()
    if len(shapes) != n:
        raise MeshdiagError(
            f"per-device specs {dest.path!r} list {len(shapes)} devices; the mesh has {n}"
        )
    for i, s in enumerate(shapes):
        if s is not None and len(s) != rank:
            raise MeshdiagError(
                f"per-device specs {dest.path!r}: device {i}'s spec {_shape_text(s)} has rank "
                f"{len(s)}, the tensor {rank}"
            )
    # the file is indexed by device id; return per mesh position
    return [shapes[d] for d in mesh.ids]


def simulate_copy(
    mesh: Mesh,
    shape,
    mapper: str = "replicate",
    *,
    split: str | None = None,
    dest: str | Dest = "fresh",
    write: str = "by-reference",
    compose: str | None = None,
    stale: str = "sentinel",
    era: str = "current",
    symbolic: bool | None = None,
) -> CopySimulation:
    """Simulate mapper → allocate → copy → read back of `arange(prod(shape))` on `mesh`.

    `split` defaults to `chunk` for TTNN mappers and `xla` for compiler notations. `symbolic`:
    None decides by size (`limits.MAX_MATERIALISED_ELEMENTS`), True never materialises, False
    always does (refused when too large).
    """

    from meshdiag.limits import check_simulated_devices

    check_simulated_devices(mesh.size)
    shape = _check_shape(shape)
    write = _check_choice(write, WRITES, "write mode")
    stale = _check_choice(stale, STALES, "stale fill")
    era = _check_choice(era, ERAS, "TTNN era")
    ttnn = parse_mapper(mapper)
    split = check_rule(split if split is not None else ("chunk" if ttnn else "xla"))
    dest_spec = load_dest(dest)

    if ttnn is not None:
        placement = _ttnn_placement(mesh, shape, ttnn, split, era)
    else:
        placement = _compiler_placement(mesh, shape, mapper, split)
    comp = parse_composer(compose) if compose is not None else placement.default_composer

    n = mesh.size
    ids = mesh.ids
    regions = placement.regions
    allocated = _allocate(mesh, shape, dest_spec, regions)

    # step 3: the copy (on shapes): what lands where, what the destination's specs become
    final: list[Shape | None] = []
    for p in range(n):
        r, a = regions[p], allocated[p]
        if r is None:
            final.append(None if write == "by-reference" else a)
            continue
        w = tuple(hi - lo for lo, hi in r)
        if a is None:
            raise MeshdiagError(
                f"device {ids[p]} has no destination buffer, but the mapper sends it source "
                f"{_region_text(r, shape)}; allocate one there (--dest fresh sizes every "
                "device from its shard)"
            )
        if math.prod(w) > math.prod(a):
            raise MeshdiagError(
                f"the copy fails on device {ids[p]}: its shard {_shape_text(w)} ({math.prod(w)} "
                f"elements) does not fit the destination buffer {_shape_text(a)} "
                f"({math.prod(a)}); TTNN refuses it ('Host tensor has different shape'). "
                "Allocate the destination from the source's per-device specs (--dest fresh)"
            )
        final.append(w if write == "by-reference" else a)

    # step 4: read back (on shapes)
    out_shape, placed = _compose(mesh, shape, comp, final, placement)
    read: set[int] = set()
    pieces: list[Piece] = []
    for pos, region in placed:
        if pos is None:
            continue
        read.add(pos)
        spec = final[pos]
        assert spec is not None
        if math.prod(spec) == 0:
            continue
        r = regions[pos]
        w = None if r is None else tuple(hi - lo for lo, hi in r)
        if r is None:
            kind: PieceKind = "stale"
        elif w == spec:
            kind = "data"
        else:
            kind = "reinterpreted"
        matches = kind == "data" and region == r
        pieces.append(Piece(ids[pos], region, kind, r, matches))
    stale_devs = tuple(sorted(p.device for p in pieces if p.kind == "stale"))
    matches_source = out_shape == shape and all(p.matches for p in pieces)
    readback = Readback(out_shape, matches_source, stale_devs, tuple(pieces), comp.text)

    # decide the mode, then move the data
    src_n = math.prod(shape)
    buf_n = sum(math.prod(a) for a in allocated if a is not None)
    out_n = math.prod(out_shape)
    big = max(src_n, buf_n, out_n) > MAX_MATERIALISED_ELEMENTS
    if symbolic is False and big:
        raise LimitError(
            f"materialising this copy needs {max(src_n, buf_n, out_n)} elements in one array, "
            f"more than the limit of {MAX_MATERIALISED_ELEMENTS} (raise MESHDIAG_MAX_ELEMENTS "
            "or use symbolic mode)"
        )
    is_symbolic = bool(symbolic) or big
    data = (
        None
        if is_symbolic
        else _materialise(shape, regions, allocated, final, placed, out_shape, stale, mesh)
    )

    stale_set = set(stale_devs)
    devices: list[DeviceCopy] = []
    for p in range(n):
        r = regions[p]
        first = last = checksum = None
        if r is not None and math.prod(hi - lo for lo, hi in r) > 0:
            if data is not None:
                buf = data[0][ids[p]]
                cnt = math.prod(hi - lo for lo, hi in r)
                first, last = float(buf[0]), float(buf[cnt - 1])
            else:
                first = float(_flat(shape, tuple(lo for lo, _ in r)))
                last = float(_flat(shape, tuple(hi - 1 for _, hi in r)))
            # exact, from the region (a float64 pass over the data would cost a full read)
            checksum = float(region_sum(shape, r))
        w = None if r is None else tuple(hi - lo for lo, hi in r)
        devices.append(
            DeviceCopy(
                device=ids[p],
                position=p,
                coord=tuple(int(c) for c in _unravel(p, mesh.shape)),
                written=r,
                allocated=allocated[p],
                dest_shape=final[p],
                stale=ids[p] in stale_set,
                mismatched=r is not None and p in read and final[p] != w,
                empty_shape=placement.empty_shapes[p],
                first=first,
                last=last,
                checksum=checksum,
            )
        )
    devices.sort(key=lambda d: d.device)

    from meshdiag.checks.md106_uniform_spec import uniform_spec_findings

    findings: list[Finding] = list(placement.findings)
    findings += uniform_spec_findings(devices, readback, shape, write=write, where={})
    findings.sort(key=lambda f: f.code, reverse=True)  # errors (MD106) before warnings (MD105)
    sim = CopySimulation(
        mesh=mesh,
        shape=shape,
        mapper=mapper.strip(),
        split=split,
        dest=dest_spec.text,
        write=write,
        era=era,
        stale_fill=stale,
        symbolic=is_symbolic,
        devices=tuple(devices),
        readback=readback,
        findings=tuple(findings),
    )
    if data is not None:
        sim.buffers, sim.readback_data = data
    return sim


def _unravel(p: int, shape: Shape) -> list[int]:
    out = []
    for s in reversed(shape):
        out.append(p % s)
        p //= s
    return out[::-1]


def _arange_f32(n: int, block: int = 1 << 16) -> np.ndarray:
    """`np.arange(n, dtype=float32)`, element for element, at memory speed.

    numpy computes a float arange one multiply per element (slower than a copy); here one
    block is made and the rest are that block plus a block offset. Offsets are multiples of
    2**16, exact in float32 for any n we materialise, so each sum rounds once from the exact
    integer, as numpy's arange does.
    """
    import numpy as np

    out = np.empty(n, dtype=np.float32)
    head = out[: min(n, block)]
    head[:] = np.arange(head.size, dtype=np.float32)
    for start in range(block, n, block):
        stop = min(n, start + block)
        np.add(head[: stop - start], np.float32(start), out=out[start:stop])
    return out


def _materialise(
    shape: Shape,
    regions: list[Ranges | None],
    allocated: list[Shape | None],
    final: list[Shape | None],
    placed: list[tuple[int | None, Ranges]],
    out_shape: Shape,
    stale: str,
    mesh: Mesh,
) -> tuple[dict[int, np.ndarray], np.ndarray]:
    """Move the elements: source → device buffers → read-back, at memory speed.

    Once the buffers hold their copies the source is dead, so the read-back reuses its memory
    when it fits: one fresh tensor-sized allocation less (page faults cost as much as a copy).
    """
    import numpy as np

    ids = mesh.ids
    source = _arange_f32(math.prod(shape)).reshape(shape)
    buffers: dict[int, np.ndarray] = {}
    prev = 0  # running offset of the `previous` pattern, in device-id order
    for p in sorted(range(mesh.size), key=lambda q: ids[q]):
        a = allocated[p]
        if a is None:
            continue
        size = math.prod(a)
        buf = np.empty(size, dtype=np.float32)
        r = regions[p]
        written = 0
        if r is not None:
            w = tuple(hi - lo for lo, hi in r)
            written = math.prod(w)
            np.copyto(buf[:written].reshape(w), source[tuple(slice(lo, hi) for lo, hi in r)])
        tail = buf[written:]
        if tail.size:  # only memory nothing was written to is stale
            if stale == "sentinel":
                tail.fill(np.nan)
            else:
                tail[:] = np.arange(prev + written + 1, prev + size + 1, dtype=np.float32)
                np.negative(tail, out=tail)
        prev += size
        buffers[ids[p]] = buf
    n_out = math.prod(out_shape)
    if n_out <= source.size:
        out = source.reshape(-1)[:n_out].reshape(out_shape)
    else:
        out = np.empty(out_shape, dtype=np.float32)
    del source
    for pos, region in placed:
        if pos is None:
            continue
        spec = final[pos]
        assert spec is not None
        buf = buffers[ids[pos]]
        np.copyto(
            out[tuple(slice(lo, hi) for lo, hi in region)], buf[: math.prod(spec)].reshape(spec)
        )
    return buffers, out
