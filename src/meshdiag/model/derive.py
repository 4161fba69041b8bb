"""Tiled (GSPMD) shardings → meshes and named shardings.

Two jobs:

* What XLA's StableHLO → Shardy import does with a module's GSPMD shardings
  (`stablehlo_import.cc`: `findMeshAxesAndIds`, `convertToSdySharding`; `tile_assignment.cc`:
  `ExtractCommonFactorSequence`, `GetOrderedSubDimsFromIotaTileAssignment`,
  `AnalyzeTileAssignment`): the derived `_axis_N` mesh and each sharding's import on it.
* Expressing a tiled sharding on a *given* mesh (the global one): any named sharding with the
  same device assignment (sub-axes when needed), a plain PartitionSpec, the plain specs with
  the same tiling, and every iota mesh on which the sharding is a plain spec.

Device numbers in GSPMD text are logical ids: the device at mesh position p is `mesh.ids[p]`.
Everything works on device arrays with numpy (one pass per factor), never on permutations.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import product
from typing import TYPE_CHECKING

from meshdiag.errors import MeshdiagError
from meshdiag.model.mesh import Mesh
from meshdiag.model.normalize import group_subgroup_dims, normal_form
from meshdiag.model.sharding import AxisRef, DimSharding, HloSharding, NamedSharding
from meshdiag.model.tiles import TileAssignment, iota_form_of, iota_form_of_array

if TYPE_CHECKING:
    import numpy as np


class NotFactorisable(MeshdiagError):
    """XLA's Shardy import would CHECK-fail: the tile assignment has no mesh factorisation."""


@dataclass(frozen=True)
class DerivedMesh:
    """The mesh XLA's import builds for a module, and where it came from."""

    mesh: Mesh
    #: indices (into the shardings given to `derive_mesh`) of the shardings that shaped it
    sources: tuple[int, ...]
    #: device ids of maximal shardings (each gets a `@maximal_mesh_<id>`), sorted, unique
    maximal: tuple[int, ...] = ()


@dataclass(frozen=True)
class SubDim:
    """XLA's `SubDimInfo`: one local mesh axis as a factor of a tile dim and a reshape dim."""

    tile_dim: int
    #: index of this factor within its tile dim, minor to major
    sub_index: int
    reshape_dim: int
    size: int


# -- XLA's factorisation primitives -------------------------------------------------------


def common_factor_sequence(
    a: list[int] | tuple[int, ...], b: list[int] | tuple[int, ...]
) -> list[int] | None:
    """XLA's `ExtractCommonFactorSequence`: the coarsest common refinement of two sequences.

    Elements equal to 1 are skipped. Returns None where XLA returns its failure value `{}`
    (the prefix products do not form a divisor chain); `[]` when both are all ones.
    Sequences with different products refine up to the shorter product, as in XLA.
    """
    result: list[int] = []

    def skip_ones(seq: list[int] | tuple[int, ...], i: int) -> int:
        while i < len(seq) and seq[i] == 1:
            i += 1
        return i

    i, j = skip_ones(a, 0), skip_ones(b, 0)
    stride_a = stride_b = acc = 1
    while i < len(a) or j < len(b):
        if i < len(a) and stride_a == acc:
            stride_a *= a[i]
            i += 1
        if j < len(b) and stride_b == acc:
            stride_b *= b[j]
            j += 1
        small, large = sorted((stride_a // acc, stride_b // acc))
        if small == 1 or large % small != 0:
            return None
        result.append(small)
        acc *= small
        i, j = skip_ones(a, i), skip_ones(b, j)
    return result


def _sub_dims(tile: TileAssignment) -> list[SubDim] | None:
    """XLA's `GetOrderedSubDimsFromIotaTileAssignment` (sorted by device-major order)."""
    assert tile.reshape is not None and tile.perm is not None
    dims, reshape, perm = tile.dims, tile.reshape, tile.perm
    device_shape = [reshape[p] for p in perm]
    sizes = common_factor_sequence(dims, device_shape)
    if not sizes:
        return None
    out: list[SubDim] = []
    tile_dim, tp = len(dims) - 1, len(perm) - 1
    acc_tile = acc_dev = 1
    sub = 0
    for size in reversed(sizes):
        while dims[tile_dim] == 1:
            tile_dim -= 1
        out.append(SubDim(tile_dim, sub, perm[tp], size))
        sub += 1
        acc_tile *= size
        acc_dev *= size
        if dims[tile_dim] == acc_tile:
            tile_dim -= 1
            acc_tile = 1
            sub = 0
        if device_shape[tp] == acc_dev:
            acc_dev = 1
            tp -= 1
    out.sort(key=lambda d: (d.reshape_dim, d.tile_dim))
    return out


# -- XLA's normal form of a tiled sharding ------------------------------------------------


def xla_normal_form(s: HloSharding) -> HloSharding:
    """`s` as XLA holds it (`meshdiag.model.normalize.normal_form`), except that a tiling over one
    device counts as replicated here, as `FromProto` and the mesh import treat it."""
    if s.kind == "tuple":
        return HloSharding.tuple_of([xla_normal_form(e) for e in s.elements])
    if s.kind == "tiled" and s.tile is not None and s.tile.num_devices == 1:
        return HloSharding.replicated()
    return normal_form(s)


def _analysis_tile(s: HloSharding, lenient: bool) -> TileAssignment | None:
    """The iota form XLA analyses: its own iota, or a V1 list that is exactly 0..N-1.

    XLA's `AnalyzeTileAssignment` rejects every other explicit list (even one that is an iota
    transpose); `lenient` accepts those through their iota form instead.
    """
    tile = s.tile
    assert tile is not None
    if tile.is_iota:
        return tile
    if tile.devices() == tuple(range(tile.num_devices)):
        return TileAssignment.iota(tile.dims)
    return iota_form_of(tile) if lenient else None


def _analyze(s: HloSharding, lenient: bool = False) -> list[SubDim] | None:
    tile = _analysis_tile(s, lenient)
    return None if tile is None else _sub_dims(tile)


def analyze_tile_assignment(s: HloSharding) -> list[int] | None:
    """Local mesh axis sizes of a tiled sharding, as `HloSharding::get_axis_sizes()` gives them.

    None when XLA cannot factorise the tile assignment (it CHECK-fails), e.g.
    `{devices=[2,3]<=[2,3]T(1,0)}` or explicit lists other than 0..N-1, and for non-tiled kinds.
    """
    s = xla_normal_form(s)
    if s.kind != "tiled":
        return None
    subs = _analyze(s)
    return None if subs is None else [d.size for d in subs]


# -- module mesh (findMeshAxesAndIds) -----------------------------------------------------


def _tile_text(tile: TileAssignment) -> str:
    dims = ",".join(map(str, tile.dims))
    if tile.is_iota:
        assert tile.reshape is not None and tile.perm is not None
        text = f"devices=[{dims}]<=[{','.join(map(str, tile.reshape))}]"
        if len(tile.reshape) > 1:
            text += f"T({','.join(map(str, tile.perm))})"
        return text
    devs = tile.devices()
    shown = ",".join(map(str, devs[:16])) + (",..." if len(devs) > 16 else "")
    return f"devices=[{dims}]{shown}"


def _named_leaf_mesh(leaf: HloSharding) -> Mesh | None:
    named = leaf.named
    if named is None or named.mesh is None or named.mesh.is_maximal:
        return None
    return named.mesh


def derive_mesh(shardings: Iterable[HloSharding], *, lenient: bool = False) -> DerivedMesh | None:
    """The `@mesh` XLA's StableHLO import builds from a module's GSPMD shardings.

    Tuples are flattened; replicated/manual/unknown/unreduced leaves are skipped; maximal ones
    give `@maximal_mesh_<id>`; every tiled leaf's local mesh is refined into the common
    factorisation, axes named `_axis_0, _axis_1, ...`. A V3 (named) leaf's mesh wins, as in XLA.
    None when the module has no shardings that make a mesh. Raises `NotFactorisable` where XLA
    CHECK-fails. `lenient` also accepts explicit device lists that have an iota form.
    """
    axes: list[int] | None = None
    sources: list[int] = []
    maximal: set[int] = set()
    named_mesh: tuple[int, Mesh] | None = None
    total: int | None = None
    for index, top in enumerate(shardings):
        for raw in top.leaves():
            leaf = xla_normal_form(raw)
            if leaf.kind == "maximal":
                assert leaf.device is not None
                maximal.add(leaf.device)
                continue
            nm = _named_leaf_mesh(raw)
            if nm is not None:
                if named_mesh is None:
                    named_mesh = (index, nm)
                continue
            if leaf.kind != "tiled":
                continue
            assert leaf.tile is not None
            subs = _analyze(leaf, lenient)
            if subs is None:
                raise NotFactorisable(
                    f"sharding #{index} ({_tile_text(leaf.tile)}) has no mesh factorisation: "
                    "XLA's Shardy import CHECK-fails on it"
                    + ("" if leaf.tile.is_iota else " (explicit device lists must be 0..N-1)")
                )
            local = [d.size for d in subs]
            n = leaf.tile.num_devices
            if total is not None and n != total:
                raise NotFactorisable(
                    f"sharding #{index} ({_tile_text(leaf.tile)}) spans {n} devices but earlier "
                    f"shardings span {total}: XLA's Shardy import CHECK-fails on the mix"
                )
            total = n
            if axes is None:
                axes = local
            else:
                refined = common_factor_sequence(local, axes)
                if not refined:
                    raise NotFactorisable(
                        f"sharding #{index} ({_tile_text(leaf.tile)}) has local mesh "
                        f"{'x'.join(map(str, local))}, which has no common factorisation with "
                        f"{'x'.join(map(str, axes))} from the earlier shardings: XLA's Shardy "
                        "import CHECK-fails"
                    )
                axes = refined
            if not sources or sources[-1] != index:
                sources.append(index)
    if named_mesh is not None:
        idx, nm = named_mesh
        return DerivedMesh(Mesh(nm.axes, nm.device_ids, "mesh"), (idx,), tuple(sorted(maximal)))
    if axes is None and not maximal:
        return None
    mesh = Mesh(tuple((f"_axis_{i}", size) for i, size in enumerate(axes or [])), None, "mesh")
    return DerivedMesh(mesh, tuple(sources), tuple(sorted(maximal)))


# -- import of one sharding (convertToSdySharding) ----------------------------------------


def _global_axes_for(local: list[int], mesh: Mesh, what: str) -> list[list[AxisRef]]:
    """The gcd walk: each local axis as whole global axes or sub-axes `name:(pre)size`."""
    out: list[list[AxisRef]] = []
    remaining = list(mesh.axes)
    pre = 1
    for size in local:
        refs: list[AxisRef] = []
        while size > 1:
            if not remaining:
                raise NotFactorisable(f"{what}: local mesh does not fit mesh {mesh.short()}")
            name, gsize = remaining[0]
            grem = gsize // pre
            if grem == 1:
                remaining.pop(0)
                pre = 1
                continue
            g = math.gcd(size, grem)
            if g == 1:
                raise NotFactorisable(
                    f"{what}: incompatible local and global axis sizes {size} vs {grem} "
                    f"(mesh {mesh.short()})"
                )
            refs.append(AxisRef(name) if g == grem and pre == 1 else AxisRef(name, pre, g))
            pre *= g
            size //= g
        out.append(refs)
    return out


def import_sharding(
    s: HloSharding, mesh: Mesh, *, rank: int | None = None, lenient: bool = False
) -> NamedSharding:
    """The Shardy sharding XLA's import gives `s` on `mesh` (normally the derived `_axis_N` one).

    Tiled: local axes mapped onto the mesh by the gcd walk, each tensor dim's factors major to
    minor; `last_tile_dim_replicate` stays implicit; `last_tile_dims` factors go to
    `replicated=`/`unreduced=` as XLA does. Replicated/manual/unknown: `rank` empty dims (no
    dims when `rank` is None). Maximal: rank-0 on `@maximal_mesh_<id>`.
    """
    s = xla_normal_form(s)
    if s.kind == "tuple":
        raise MeshdiagError("import_sharding takes one sharding, not a tuple; import each element")
    if s.kind == "maximal":
        assert s.device is not None
        mx = Mesh((), (s.device,), f"maximal_mesh_{s.device}")
        return NamedSharding(mx, (), mesh_ref=mx.name)
    if s.kind != "tiled":
        dims = tuple(DimSharding(is_open=s.kind == "unknown") for _ in range(rank or 0))
        return NamedSharding(mesh, dims, mesh_ref=mesh.name or "mesh")
    named_mesh = _named_leaf_mesh(s)
    if s.named is not None and named_mesh is not None:
        return _rename_axes(s.named, named_mesh, mesh)
    assert s.tile is not None
    what = f"sharding {_tile_text(s.tile)}"
    subs = _analyze(s, lenient)
    if subs is None:
        raise NotFactorisable(f"{what} has no mesh factorisation: XLA's Shardy import CHECK-fails")
    local = [d.size for d in subs]
    if math.prod(local) != mesh.size:
        raise NotFactorisable(
            f"{what} spans {math.prod(local)} devices, mesh {mesh.short()} has {mesh.size}"
        )
    global_axes = _global_axes_for(local, mesh, what)
    data_rank = s.data_rank or 0
    per_dim: list[dict[int, int]] = [{} for _ in range(data_rank)]
    for li, d in enumerate(subs):
        if d.tile_dim < data_rank:
            per_dim[d.tile_dim][d.sub_index] = li
    dims = []
    for subs_of_dim in per_dim:
        refs = [r for k in sorted(subs_of_dim, reverse=True) for r in global_axes[subs_of_dim[k]]]
        dims.append(DimSharding(tuple(refs)))
    replicated: list[AxisRef] = []
    unreduced: list[AxisRef] = []
    for li, d in enumerate(subs):
        # XLA indexes subgroup_types by the factor's sub-dim index (not the subgroup index);
        # kept as is, so only what XLA really produces is reported.
        if d.tile_dim >= data_rank and d.sub_index < len(s.subgroup_types):
            kind = s.subgroup_types[d.sub_index]
            if kind == "replicated":
                replicated.extend(global_axes[li])
            elif kind == "unreduced":
                unreduced.extend(global_axes[li])
    if rank is not None and rank != data_rank:
        raise MeshdiagError(f"{what} tiles a rank-{data_rank} tensor, not rank {rank}")
    return NamedSharding(
        mesh,
        tuple(dims),
        mesh_ref=mesh.name or "mesh",
        replicated=tuple(replicated),
        unreduced=tuple(unreduced),
    )


def _rename_axes(named: NamedSharding, src: Mesh, dst: Mesh) -> NamedSharding:
    """A V3 sharding re-pointed at `dst`, axes matched by index (as XLA's import does)."""
    from dataclasses import replace

    rename = {a: dst.names[i] for i, a in enumerate(src.names) if i < len(dst.names)}

    def refs(rs: tuple[AxisRef, ...]) -> tuple[AxisRef, ...]:
        return tuple(replace(r, name=rename[r.name]) for r in rs if r.name in rename)

    dims = tuple(replace(d, axes=refs(d.axes)) for d in named.dims)
    return replace(
        named,
        mesh=dst,
        dims=dims,
        mesh_ref=dst.name or "mesh",
        replicated=refs(named.replicated),
        unreduced=refs(named.unreduced),
        manual=refs(named.manual),
    )


# -- device assignments on a given mesh ---------------------------------------------------

_Piece = tuple[int, int, int]  # (mesh axis index, pre-size, size)


def _positions_of(s: HloSharding, mesh: Mesh) -> tuple[np.ndarray, int, tuple[str, ...]] | None:
    """s's device array in mesh positions, subgroups in XLA's order, replica groups sorted.

    Returns (array, data rank, subgroup kinds) or None when s names devices not on the mesh.
    """
    import numpy as np

    assert s.tile is not None
    arr = s.tile.array()
    if arr.size != mesh.size:
        return None
    if mesh.device_ids is None:  # iota: a device's position is its id (no tuple of ids)
        if int(arr.min()) < 0 or int(arr.max()) >= mesh.size:
            return None
        pos = arr
    else:
        ids = np.asarray(mesh.ids, dtype=np.int64)
        top = int(max(int(ids.max()), int(arr.max()))) + 1
        inv = np.full(top, -1, dtype=np.int64)
        inv[ids] = np.arange(ids.size, dtype=np.int64)
        pos = inv[arr]
        if (pos < 0).any():
            return None
    rank = s.data_rank or 0
    pos, kinds = group_subgroup_dims(pos, s.subgroup_kinds())
    if kinds and kinds[-1] == "replicated":
        pos = np.sort(pos, axis=-1)
    return pos, rank, kinds


def _split_axis(size: int, cuts: set[int]) -> list[tuple[int, int]] | None:
    """An axis cut at the given pre-sizes into (pre, size) atoms, major first; None if invalid."""
    points = sorted(c for c in cuts | {1, size} if 1 <= c <= size)
    atoms = []
    for a, b in zip(points, points[1:], strict=False):
        if b % a:
            return None
        atoms.append((a, b // a))
    return atoms


def named_positions(
    mesh: Mesh,
    dim_axes: list[tuple[AxisRef, ...]] | tuple[tuple[AxisRef, ...], ...],
    manual: tuple[AxisRef, ...] = (),
    unreduced: tuple[AxisRef, ...] = (),
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Mesh positions of a named sharding, GSPMD-shaped: the array of shape
    (tiles per dim..., [manual], [unreduced], [replicated]) with size-1 subgroups dropped and
    replica groups sorted, plus the subgroup kinds. Raises MeshdiagError on bad axis refs.
    """
    import numpy as np

    index = {a: i for i, a in enumerate(mesh.names)}
    groups = [list(d) for d in dim_axes] + [list(manual), list(unreduced)]
    cuts: dict[int, set[int]] = {i: set() for i in range(len(mesh.axes))}
    for g in groups:
        for r in g:
            if r.name not in index:
                raise MeshdiagError(f"axis {r.name!r} is not in mesh {mesh.short()}")
            i = index[r.name]
            if r.is_sub:
                assert r.pre is not None and r.size is not None
                cuts[i].update((r.pre, r.pre * r.size))
    atoms: list[tuple[int, int, int]] = []  # (axis, pre, size) in mesh order, major first
    for i, (name, size) in enumerate(mesh.axes):
        split = _split_axis(size, cuts[i])
        if split is None:
            raise MeshdiagError(f"sub-axes of {name!r} do not divide its size {size}")
        atoms.extend((i, pre, sz) for pre, sz in split)
    used: set[int] = set()
    order: list[list[int]] = []
    for g in groups:
        ids: list[int] = []
        for r in g:
            i = index[r.name]
            lo, hi = (r.pre, r.pre * r.size) if r.is_sub else (1, mesh.axes[i][1])  # type: ignore[operator]
            mine = [k for k, (ax, pre, _) in enumerate(atoms) if ax == i and lo <= pre < hi]
            if used.intersection(mine):
                raise MeshdiagError(f"axis {r.name!r} is used more than once")
            used.update(mine)
            ids.extend(mine)
        order.append(ids)
    rest = [k for k in range(len(atoms)) if k not in used]
    order.append(rest)
    sizes = [sz for _, _, sz in atoms]
    arr = np.arange(mesh.size, dtype=np.int64).reshape(sizes or [1])
    perm = [k for grp in order for k in grp]
    if atoms:
        arr = arr.transpose(perm)
    shape = [math.prod(sizes[k] for k in grp) for grp in order]
    arr = arr.reshape(shape)
    arr, kinds = group_subgroup_dims(arr, ("manual", "unreduced", "replicated"))
    if kinds and kinds[-1] == "replicated":
        arr = np.sort(arr, axis=-1)
    return arr, kinds


def _same_assignment(
    a: tuple[np.ndarray, tuple[str, ...]], b: tuple[np.ndarray, tuple[str, ...]]
) -> bool:
    import numpy as np

    return a[1] == b[1] and a[0].shape == b[0].shape and bool(np.array_equal(a[0], b[0]))


def _pieces_by_group(
    s: HloSharding, mesh: Mesh
) -> tuple[list[list[_Piece]], int, tuple[str, ...], tuple[np.ndarray, tuple[str, ...]]] | None:
    """Mesh pieces (axis, pre, size) per tile dim, major to minor, expressing s on mesh."""
    got = _positions_of(s, mesh)
    if got is None:
        return None
    pos, rank, kinds = got
    tile = iota_form_of_array(pos)
    if tile is None:
        return None
    assert tile.reshape is not None and tile.perm is not None
    groups: list[list[_Piece]] = [[] for _ in pos.shape]
    if mesh.size > 1:
        # 1. reshape dims (position order) refined by the mesh axes
        non1 = [(i, sz) for i, (_, sz) in enumerate(mesh.axes) if sz > 1]
        fine = common_factor_sequence(list(tile.reshape), [sz for _, sz in non1])
        if fine is None:
            return None
        pieces: list[list[_Piece]] = [[] for _ in tile.reshape]
        r = ax = 0
        r_acc = ax_acc = 1
        for f in fine:
            pieces[r].append((non1[ax][0], ax_acc, f))
            r_acc *= f
            ax_acc *= f
            if r_acc == tile.reshape[r]:
                r, r_acc = r + 1, 1
            if ax_acc == non1[ax][1]:
                ax, ax_acc = ax + 1, 1
        # 2. device order, refined by the tile dims
        dev = [p for rd in tile.perm for p in pieces[rd]]
        fine2 = common_factor_sequence([p[2] for p in dev], list(pos.shape))
        if fine2 is None:
            return None
        split: list[_Piece] = []
        k, used = 0, 1
        for f in fine2:
            axis, pre, size = dev[k]
            split.append((axis, pre * used, f))
            used *= f
            if used == size:
                k, used = k + 1, 1
        # 3. consecutive factors to tile dims
        t, acc = 0, 1
        for p in split:
            while pos.shape[t] == 1:
                t += 1
            groups[t].append(p)
            acc *= p[2]
            if acc == pos.shape[t]:
                t, acc = t + 1, 1
    merged = [_merge(g) for g in groups]
    return merged, rank, kinds, (pos, kinds)


def _merge(pieces: list[_Piece]) -> list[_Piece]:
    """Join adjacent pieces that are consecutive factors of one axis (major then minor)."""
    out: list[_Piece] = []
    for axis, pre, size in pieces:
        if out and out[-1][0] == axis and out[-1][1] * out[-1][2] == pre:
            a, p, s = out[-1]
            out[-1] = (a, p, s * size)
        else:
            out.append((axis, pre, size))
    return out


def _ref(mesh: Mesh, piece: _Piece) -> AxisRef:
    axis, pre, size = piece
    name, full = mesh.axes[axis]
    return AxisRef(name) if pre == 1 and size == full else AxisRef(name, pre, size)


def hlo_to_named(s: HloSharding, mesh: Mesh) -> NamedSharding | None:
    """A named sharding on `mesh` (sub-axes allowed, whole axes preferred) with exactly s's
    device assignment, or None when no named sharding on this mesh gives it.

    Replicated/manual/unreduced shardings map to the whole-tensor forms; maximal and unknown
    have no named equivalent on a mesh with axes (None).
    """
    s = xla_normal_form(s)
    if s.kind in ("replicated", "manual", "unreduced"):
        return NamedSharding(mesh, (), mesh_ref=mesh.name, whole=s.kind)  # type: ignore[arg-type]
    if s.kind != "tiled" or mesh.is_maximal or s.tile is None:
        return None
    got = _pieces_by_group(s, mesh)
    if got is None:
        return None
    groups, rank, kinds, target = got
    dims = tuple(DimSharding(tuple(_ref(mesh, p) for p in g)) for g in groups[:rank])
    extra: dict[str, tuple[AxisRef, ...]] = {"manual": (), "unreduced": ()}
    for kind, g in zip(kinds, groups[rank:], strict=True):
        if kind in extra:  # Shardy lists these in mesh order
            extra[kind] = tuple(_ref(mesh, p) for p in sorted(g))
    named = NamedSharding(
        mesh, dims, mesh_ref=mesh.name, unreduced=extra["unreduced"], manual=extra["manual"]
    )
    check = named_positions(mesh, [d.axes for d in dims], extra["manual"], extra["unreduced"])
    return named if _same_assignment(check, target) else None


def _is_plain(ns: NamedSharding) -> bool:
    refs = [r for d in ns.dims for r in d.axes] + list(ns.manual) + list(ns.unreduced)
    return not any(r.is_sub for r in refs)


def plain_spec(s: HloSharding, mesh: Mesh) -> NamedSharding | None:
    """A plain PartitionSpec (whole axes, each at most once) on `mesh` giving exactly s's
    device assignment, else None."""
    ns = hlo_to_named(s, mesh)
    if ns is None or ns.whole is not None and ns.whole != "replicated":
        return None
    return ns if _is_plain(ns) else None


#: bound on the plain specs enumerated per call
MAX_SPECS = 256


def plain_specs_with_same_tiling(
    s: HloSharding, mesh: Mesh, *, limit: int = MAX_SPECS
) -> list[NamedSharding]:
    """Plain specs on `mesh` whose tiles per dim (and replication) equal s's, device order
    ignored — the "you probably meant (None, 'model')" candidates. Axes are tried in mesh order,
    so the spec that keeps mesh order comes first. Shardings with manual/unreduced subgroups
    give none.
    """
    s = xla_normal_form(s)
    if s.kind != "tiled" or s.tile is None or s.tile.num_devices != mesh.size:
        return []
    if any(k != "replicated" for k in s.subgroup_kinds()):
        return []
    targets = list(s.data_dims)
    axes = [(name, size) for name, size in mesh.axes if size > 1]
    results: list[NamedSharding] = []

    def tuples_for(target: int, free: list[int]) -> Iterator[tuple[int, ...]]:
        if target == 1:
            yield ()
            return
        for i in free:
            size = axes[i][1]
            if target % size == 0:
                for rest in tuples_for(target // size, [j for j in free if j != i]):
                    yield (i, *rest)

    def walk(d: int, free: list[int], chosen: list[tuple[int, ...]]) -> None:
        if len(results) >= limit:
            return
        if d == len(targets):
            dims = tuple(DimSharding(tuple(AxisRef(axes[i][0]) for i in c)) for c in chosen)
            results.append(NamedSharding(mesh, dims, mesh_ref=mesh.name))
            return
        for c in tuples_for(targets[d], free):
            walk(d + 1, [j for j in free if j not in c], [*chosen, c])
            if len(results) >= limit:
                return

    walk(0, list(range(len(axes))), [])
    return results


# -- meshes a sharding fits ---------------------------------------------------------------

#: bound on candidate meshes built by `meshes_fitting`
MAX_MESH_CANDIDATES = 4096


def _ordered_factorisations(n: int) -> Iterator[tuple[int, ...]]:
    """n as ordered products of factors >= 2 (n itself first)."""
    if n == 1:
        yield ()
        return
    yield (n,)
    for f in range(2, n):
        if n % f == 0:
            for rest in _ordered_factorisations(n // f):
                yield (f, *rest)


def _axis_mesh(shape: tuple[int, ...]) -> Mesh:
    return Mesh(tuple((f"axis_{i}", sz) for i, sz in enumerate(shape or (1,))))


def meshes_fitting(s: HloSharding, max_results: int = 32) -> list[Mesh]:
    """Every iota mesh (axes `axis_0..`) on which s is a plain spec, fewest axes first.

    On a one-axis mesh the sharding becomes sub-axis pieces in position order; a mesh fits
    exactly when its axis boundaries include every piece boundary (each piece is a product of
    consecutive axes), so candidates are the ordered factorisations of each piece. Each
    candidate is checked with `plain_spec`. A tile assignment that only replicates fits every
    mesh of its size; other non-tiled shardings (no device count) give none.
    """
    count = s.tile.num_devices if s.kind == "tiled" and s.tile is not None else None
    s = xla_normal_form(s)
    if s.kind == "replicated" and count is not None:  # a tile assignment that replicates
        shapes = sorted(_ordered_factorisations(count), key=lambda sh: (len(sh), sh))
        return [_axis_mesh(sh) for sh in shapes[:max_results]]
    if s.kind != "tiled" or s.tile is None:
        return []
    n = s.tile.num_devices
    line = Mesh((("axis", n),))
    got = _pieces_by_group(s, line)
    if got is None:
        return []
    groups = got[0]
    cuts = {1, n}
    for g in groups:
        for _, pre, size in g:
            cuts.update((pre, pre * size))
    pieces = _split_axis(n, cuts)
    if pieces is None:
        return []
    per_piece = [list(_ordered_factorisations(size)) for _, size in pieces]
    shapes: list[tuple[int, ...]] = []
    for combo in product(*per_piece):
        shapes.append(tuple(f for part in combo for f in part))
        if len(shapes) >= MAX_MESH_CANDIDATES:
            break
    shapes.sort(key=lambda sh: (len(sh), sh))
    out: list[Mesh] = []
    for shape in shapes:
        mesh = _axis_mesh(shape)
        if plain_spec(s, mesh) is not None:
            out.append(mesh)
            if len(out) >= max_results:
                break
    return out
