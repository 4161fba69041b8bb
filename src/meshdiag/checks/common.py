"""Helpers shared by the mesh checks (MD101–MD104, MD107, MD108): the mesh a module runs on,
plain PartitionSpecs on a mesh and their exported device order, and short text forms.

A *plain spec* gives each tensor dim a tuple of whole mesh axes (major to minor), each axis
used at most once, unused axes replicated — what `P(None, 'model')` means in JAX and torch_xla.
Its GSPMD form follows XLA's Shardy export (`convertToHloSharding`): tile dims are the
per-dim axis products plus one replication dim, and the device array is the mesh's device
array transposed to (axes of dim 0, axes of dim 1, ..., unused axes in mesh order).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import MeshdiagError
from ..sharding import HloSharding, NamedSharding
from ..tiles import TileAssignment

if TYPE_CHECKING:
    import numpy as np

    from ..ir.model import MeshDecl, ModuleReport, Value
    from ..mesh import Mesh
    from .context import CheckContext

PlainSpec = tuple[tuple[str, ...], ...]
#: stop enumerating plain specs after this many candidates (meshes with many equal axes)
MAX_SPECS = 20000


# -- where a finding goes ----------------------------------------------------------------
def where(ctx: CheckContext, module: ModuleReport, line: int | None, column: int | None) -> dict:
    return {
        "path": ctx.path,
        "line": line if line is not None else module.line,
        "column": column if column is not None else 1,
        "module": module.name,
    }


def module_label(module: ModuleReport) -> str:
    return f"module @{module.name}" if module.name else f"the module at line {module.line}"


# -- text ----------------------------------------------------------------------------------
def sdy_mesh_text(mesh: Mesh, name: str = "mesh") -> str:
    """`sdy.mesh @mesh = <["batch"=2, "model"=4]>` (with `device_ids` when not iota)."""
    axes = ", ".join(f'"{a}"={s}' for a, s in mesh.axes)
    ids = f", device_ids=[{', '.join(map(str, mesh.device_ids))}]" if mesh.device_ids else ""
    if mesh.is_maximal:
        return f"sdy.mesh @{name} = <[]{ids}>"
    return f"sdy.mesh @{name} = <[{axes}]{ids}>"


def pspec_text(spec: PlainSpec) -> str:
    """`(None, 'model')`, `(('x', 'y'), None)`."""

    def one(axes: tuple[str, ...]) -> str:
        if not axes:
            return "None"
        if len(axes) == 1:
            return repr(axes[0])
        return "(" + ", ".join(map(repr, axes)) + ")"

    inner = ", ".join(one(a) for a in spec)
    return f"({inner},)" if len(spec) == 1 else f"({inner})"


def sdy_dims_text(spec: PlainSpec) -> str:
    """`[{}, {"model"}]`."""
    return "[" + ", ".join("{" + ", ".join(f'"{a}"' for a in axes) + "}" for axes in spec) + "]"


def axis_ref_text(a) -> str:
    """`"x"` or the sub-axis `"x":(1)2`."""
    return f'"{a.name}":({a.pre}){a.size}' if a.is_sub else f'"{a.name}"'


def named_dims_text(n: NamedSharding) -> str:
    """`[{}, {"batch", "model":(1)2}]` plus `replicated={...}` / `unreduced={...}`."""
    dims = []
    for d in n.dims:
        body = ", ".join(axis_ref_text(a) for a in d.axes)
        if d.is_open:
            body = body + ", ?" if body else "?"
        dims.append("{" + body + "}" + (f"p{d.priority}" if d.priority is not None else ""))
    text = "[" + ", ".join(dims) + "]"
    for key, axes in (("replicated", n.replicated), ("unreduced", n.unreduced)):
        if axes:
            text += f", {key}={{{', '.join(axis_ref_text(a) for a in axes)}}}"
    return text


def gspmd_text(s: HloSharding) -> str:
    from ..formats.gspmd import print_gspmd

    return print_gspmd(s)


# -- the module's mesh -------------------------------------------------------------------
@dataclass(frozen=True)
class ModuleMesh:
    """The mesh a module's shardings live on: declared, or derived like XLA's import."""

    mesh: Mesh
    decl: MeshDecl | None  # the declaration, when declared
    #: derived: the values whose shardings shaped it (first is the one to point at)
    sources: tuple[Value, ...] = ()

    @property
    def derived(self) -> bool:
        return self.decl is None

    @property
    def line(self) -> int | None:
        return self.decl.line if self.decl else (self.sources[0].line if self.sources else None)

    @property
    def column(self) -> int | None:
        if self.decl:
            return self.decl.column
        return self.sources[0].column if self.sources else None

    def describe(self) -> str:
        if self.decl:
            return f"@{self.decl.name} <{self.mesh.short()}> (line {self.decl.line})"
        src = ", ".join(f"{v.name} (line {v.line})" for v in self.sources[:3])
        more = f" and {len(self.sources) - 3} more" if len(self.sources) > 3 else ""
        return f"<{self.mesh.short()}> derived from the GSPMD sharding of {src}{more}"


def declared_meshes(module: ModuleReport) -> list[MeshDecl]:
    """Parsed, non-maximal, non-empty declared meshes, in order."""
    return [d for d in module.meshes if d.mesh is not None and d.mesh.axes]


def gspmd_tiled_values(module: ModuleReport) -> list[tuple[Value, HloSharding]]:
    """GSPMD values with a tiled leaf (tuples flattened), as XLA's import collects them."""
    out = []
    for v in module.values:
        s = v.sharding
        if v.notation != "gspmd" or not isinstance(s, HloSharding):
            continue
        for leaf in s.leaves():
            if leaf.is_tiled:
                out.append((v, leaf))
    return out


def module_meshes(module: ModuleReport) -> list[ModuleMesh]:
    """Declared meshes; when there are none, the mesh XLA's import derives from the GSPMD
    shardings (empty when there is nothing to derive from or no common factorisation)."""
    decls = declared_meshes(module)
    if decls:
        return [ModuleMesh(d.mesh, d) for d in decls]  # type: ignore[arg-type]
    tiled = gspmd_tiled_values(module)
    if not tiled:
        return []
    from ..derive import derive_mesh

    try:
        derived = derive_mesh([s for _, s in tiled])
    except MeshdiagError:
        return []  # not factorisable: MD102/MD108 report the sharding itself
    if derived.mesh is None or not derived.mesh.axes:
        return []
    return [ModuleMesh(derived.mesh, None, _sources(tiled, derived))]


def _sources(tiled: list[tuple[Value, HloSharding]], derived) -> tuple[Value, ...]:
    """Values behind the derived mesh: those `derive_mesh` names, else every tiled one."""
    picked: list[Value] = []
    for src in getattr(derived, "sources", None) or ():
        if isinstance(src, int) and 0 <= src < len(tiled):
            v = tiled[src][0]
        else:
            v = next((v for v, s in tiled if s is src or s == src), None)
        if v is not None and v not in picked:
            picked.append(v)
    if not picked:
        for v, _ in tiled:
            if v not in picked:
                picked.append(v)
    return tuple(picked)


# -- comparing meshes --------------------------------------------------------------------
def same_mesh(a: Mesh, b: Mesh) -> bool:
    """Same shape and device order once size-1 axes are dropped (axis names do not matter)."""
    a1, b1 = a.without_size1_axes(), b.without_size1_axes()
    return a1.shape == b1.shape and a1.ids == b1.ids


def merges_adjacent_axes(derived: Mesh, global_mesh: Mesh) -> bool:
    """Each derived axis is the product of a run of consecutive global axes, in order, and
    the global device order is iota (XLA's import never derives device ids).

    Such a mesh is what a correct sharding on the global mesh imports as: iota
    canonicalisation merges axes that stay adjacent (`(('batch','model'),)` prints `<=[8]`).
    """
    if global_mesh.device_ids is not None or derived.device_ids is not None:
        return False
    g = [s for s in global_mesh.shape if s != 1]
    i = 0
    for size in (s for s in derived.shape if s != 1):
        prod = 1
        while prod < size and i < len(g):
            prod *= g[i]
            i += 1
        if prod != size:
            return False
    return i == len(g)


# -- plain specs -------------------------------------------------------------------------
def device_tiles(s: HloSharding) -> np.ndarray | None:
    """For each device 0..N-1, the linear index of the data tile it holds.

    None unless `s` is tiled with only replicated subgroups and its devices are exactly
    0..N-1 (anything else is not comparable to a plain spec; MD108 reports bad device lists).
    """
    import numpy as np

    if not s.is_tiled or s.tile is None:
        return None
    if any(k != "replicated" for k in s.subgroup_kinds()):
        return None
    a = s.tile.array()
    n = a.size
    flat = a.reshape(-1)
    if flat.min() < 0 or flat.max() >= n:
        return None
    r = s.data_rank or 0
    tiles_per = math.prod(s.data_dims) if r else 1
    tile_of_pos = np.arange(n, dtype=np.int64) // (n // tiles_per)
    out = np.full(n, -1, dtype=np.int64)
    out[flat] = tile_of_pos
    if (out < 0).any():  # a repeated device
        return None
    return out


def plain_spec_hlo(spec: PlainSpec, mesh: Mesh) -> HloSharding:
    """The GSPMD sharding XLA's export gives a plain spec on `mesh`."""
    used = [a for axes in spec for a in axes]
    if len(set(used)) != len(used):
        raise MeshdiagError(f"spec {pspec_text(spec)} uses an axis twice")
    order = [mesh.axis_index(a) for a in used]
    rest = [i for i, a in enumerate(mesh.names) if a not in used]
    dims = [math.prod(mesh.axis_size(a) for a in axes) for axes in spec]
    rep = math.prod(mesh.shape[i] for i in rest)
    if math.prod(dims) == 1 and rep == mesh.size:
        return HloSharding.replicated()
    tile_dims = dims + ([rep] if rep > 1 else [])
    perm = order + rest
    if mesh.device_ids is None:
        tile = TileAssignment.iota(tile_dims, mesh.shape, perm)
    else:
        tile = TileAssignment.from_array(mesh.devices_array().transpose(perm).reshape(tile_dims))
    return HloSharding.tiled(tile, replicate_on_last=rep > 1)


def plain_specs_with_tiling(data_dims: tuple[int, ...], mesh: Mesh) -> Iterator[PlainSpec]:
    """Every plain spec (size-1 axes left out) whose per-dim shard counts are `data_dims`,
    in a fixed order: per dim, axes tried in mesh order."""
    axes = [(a, s) for a, s in mesh.axes if s != 1]
    count = 0

    def dim(d: int, free: tuple[int, ...], acc: list[tuple[str, ...]]) -> Iterator[PlainSpec]:
        nonlocal count
        if d == len(data_dims):
            count += 1
            if count <= MAX_SPECS:
                yield tuple(acc)
            return
        for combo in _ordered_products(data_dims[d], free, axes):
            yield from dim(
                d + 1,
                tuple(i for i in free if i not in combo),
                acc + [tuple(axes[i][0] for i in combo)],
            )

    yield from dim(0, tuple(range(len(axes))), [])


def _ordered_products(
    target: int, free: tuple[int, ...], axes: list[tuple[str, int]]
) -> Iterator[tuple[int, ...]]:
    """Ordered tuples of distinct free axis indices whose sizes multiply to `target`."""
    if target == 1:
        yield ()
        return
    for i in free:
        size = axes[i][1]
        if target % size == 0:
            rest = tuple(j for j in free if j != i)
            for tail in _ordered_products(target // size, rest, axes):
                yield (i, *tail)


@dataclass(frozen=True)
class SpecMatch:
    """How a tiled sharding relates to the plain specs on a mesh."""

    exact: PlainSpec | None  # a plain spec with exactly this device assignment
    #: plain specs with the same tiling but another device order, best match first
    same_tiling: tuple[PlainSpec, ...]


def match_plain_spec(s: HloSharding, mesh: Mesh) -> SpecMatch | None:
    """Compare `s` with every plain spec of the same tiling on `mesh` (device → tile maps).

    None when `s` is not comparable (not tiled, other subgroup kinds, device count differs
    from the mesh, bad device list).
    """
    import numpy as np

    if not s.is_tiled or s.tile is None or s.tile.num_devices != mesh.size:
        return None
    mine = device_tiles(s)
    if mine is None:
        return None
    scored: list[tuple[int, int, PlainSpec]] = []
    for k, spec in enumerate(plain_specs_with_tiling(s.data_dims, mesh)):
        theirs = device_tiles(plain_spec_hlo(spec, mesh)) if any(spec) else None
        if theirs is None:  # all-replicated spec
            theirs = np.zeros(mesh.size, dtype=np.int64)
        agree = int((theirs == mine).sum())
        if agree == mesh.size:
            return SpecMatch(spec, ())
        scored.append((-agree, k, spec))
    scored.sort()
    return SpecMatch(None, tuple(spec for _, _, spec in scored))


def value_hlo(v: Value) -> HloSharding | None:
    """The tiled (GSPMD) form of a value's sharding."""
    if v.hlo is not None:
        return v.hlo
    return v.sharding if isinstance(v.sharding, HloSharding) else None


def named_sharding(v: Value) -> NamedSharding | None:
    return v.sharding if isinstance(v.sharding, NamedSharding) else None


def corrected_sharding(v: Value, global_mesh: Mesh) -> str | None:
    """The sharding `v` should have on the global mesh: the plain spec with the same tiling
    that agrees with its device assignment on most devices, in the value's notation."""
    s = value_hlo(v)
    if s is None:
        return None
    m = match_plain_spec(s, global_mesh)
    if m is None:
        return None
    spec = m.exact or (m.same_tiling[0] if m.same_tiling else None)
    if spec is None:
        return None
    if v.notation == "sdy":
        return f"{v.name}: <@mesh, {sdy_dims_text(spec)}> ({pspec_text(spec)})"
    return f"{v.name}: {gspmd_text(plain_spec_hlo(spec, global_mesh))} ({pspec_text(spec)})"
