"""Helpers shared by the mesh checks (MD101–MD104, MD107, MD108): the mesh a module runs on,
plain PartitionSpecs on a mesh and their exported device order, and short text forms.

A *plain spec* gives each tensor dim a tuple of whole mesh axes (major to minor), each axis
used at most once, unused axes replicated — what `P(None, 'model')` means in JAX and torch_xla.
Its GSPMD form follows XLA's Shardy export (`convertToHloSharding`): tile dims are the
per-dim axis products plus one replication dim, and the device array is the mesh's device
array transposed to (axes of dim 0, axes of dim 1, ..., unused axes in mesh order).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from meshdiag.errors import MeshdiagError
from meshdiag.ir.model import Value
from meshdiag.memo import RunMemos
from meshdiag.model.derive import (
    derive_mesh,
    hlo_to_named,
    plain_spec,
    plain_specs_with_same_tiling,
)
from meshdiag.model.named_to_tiled import named_to_hlo
from meshdiag.model.sharding import AxisRef, DimSharding, HloSharding, NamedSharding
from meshdiag.model.tiles import TileAssignment
from meshdiag.notation.gspmd import print_gspmd
from meshdiag.notation.pspec import print_pspec_entry
from meshdiag.notation.shardy import print_mesh_attr

if TYPE_CHECKING:
    from meshdiag.checks.context import CheckContext
    from meshdiag.ir.model import MeshDecl, ModuleReport, Value
    from meshdiag.model.mesh import Mesh

PlainSpec = tuple[tuple[str, ...], ...]


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

    return f"sdy.mesh @{name} = {print_mesh_attr(mesh)}"


def pspec_text(spec: PlainSpec) -> str:
    """`(None, 'model')`, `(('x', 'y'), None)`."""

    inner = ", ".join(map(print_pspec_entry, spec))
    return f"({inner},)" if len(spec) == 1 else f"({inner})"


def sdy_dims_text(spec: PlainSpec) -> str:
    """`[{}, {"model"}]`."""
    return "[" + ", ".join("{" + ", ".join(f'"{a}"' for a in axes) + "}" for axes in spec) + "]"


# -- the module's mesh -------------------------------------------------------------------
@dataclass(frozen=True)
class ModuleMesh:
    """The mesh a module's shardings live on: declared, or derived like XLA's import."""

    mesh: Mesh
    decl: MeshDecl | None  # the declaration, when declared
    #: derived: the module it was derived from (its `sources` are found there when asked)
    module: ModuleReport | None = field(default=None, compare=False, repr=False)
    memos: RunMemos | None = field(default=None, compare=False, repr=False)

    @cached_property
    def sources(self) -> tuple[Value, ...]:
        """Derived: the values whose shardings shaped it (first is the one to point at)."""
        if self.decl is not None or self.module is None:
            return ()
        tiled = gspmd_tiled_values(self.module)
        return _sources(tiled, _derive([s for _, s in tiled], self.memos or RunMemos()))

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
    """GSPMD values with a tiled leaf (tuples flattened), as XLA's import collects them
    (each distinct value once)."""
    out = []
    for group in module.value_groups():
        v = group.value
        s = v.sharding
        if v.notation != "gspmd" or not isinstance(s, HloSharding):
            continue
        for leaf in s.leaves():
            if leaf.is_tiled:
                out.append((v, leaf))
    return out


def module_meshes(module: ModuleReport, memos: RunMemos) -> list[ModuleMesh]:
    """Declared meshes; when there are none, the mesh XLA's import derives from the GSPMD
    shardings (empty when there is nothing to derive from or no common factorisation).
    MD101, MD103 and MD104 each ask for the same module in turn: the last answer is kept."""
    last = memos.identity("checks.module_meshes", limit=1)
    state = (len(module.meshes), len(module.items))  # checks never change a module
    hit = last.get(module)
    if hit is not None and hit[0] == state:
        return list(hit[1])
    result = _module_meshes(module, memos)
    last.put(module, (state, result))
    return list(result)


def _module_meshes(module: ModuleReport, memos: RunMemos) -> list[ModuleMesh]:
    decls = declared_meshes(module)
    if decls:
        return [ModuleMesh(d.mesh, d) for d in decls]  # type: ignore[arg-type]
    # the distinct tiled shardings are enough for the mesh (refining by one twice changes
    # nothing); which values shaped it is only looked up when a finding shows them
    shardings = tiled_shardings(module, memos)
    if not shardings:
        return []
    derived = _derive(shardings, memos)
    if derived is None or not derived.mesh.axes:
        return []
    return [ModuleMesh(derived.mesh, None, module, memos)]


def tiled_shardings(module: ModuleReport, memos: RunMemos) -> list[HloSharding]:
    """The distinct tiled leaves of the module's GSPMD shardings, in order of first use.
    Memoised by the module's column entries in order (pass dumps print the same annotated
    lines module after module)."""
    if module.has_own_values():  # no content key
        return _tiled_shardings(module.items, memos)
    items, key = module.entries()
    by_items = memos.content("checks.tiled_shardings")
    hit = by_items.get(key)
    if hit is not None:
        return hit[1]
    found = _tiled_shardings(items, memos)
    by_items.put(key, len(items), (items, found))  # holds the items: their ids stay theirs
    return found


def _tiled_shardings(items: tuple, memos: RunMemos) -> list[HloSharding]:

    seen: dict[HloSharding, None] = {}
    known = memos.identity("checks.tiled_leaves")  # a column entry's tiled GSPMD leaves
    for item in items:
        leaves = known.get(item)
        if leaves is None:
            values = (item,) if item.__class__ is Value else item.protos  # type: ignore[attr-defined]
            leaves = tuple(
                leaf
                for v in values
                if v.notation == "gspmd" and isinstance(v.sharding, HloSharding)
                for leaf in v.sharding.leaves()
                if leaf.is_tiled
            )
            if item.__class__ is not Value:  # a one-off Value is not worth keeping
                known.put(item, leaves)
        for leaf in leaves:
            seen.setdefault(leaf, None)
    return list(seen)


def _derive(shardings: list[HloSharding], memos: RunMemos):
    """`derive_mesh(shardings)`, None where it raises (not factorisable: MD102/MD108 report
    the sharding itself); memoised by the shardings (pass dumps repeat one module many times)."""
    derived_by = memos.table("checks.derived", limit=256)
    key = tuple(shardings)
    if key in derived_by:
        return derived_by.get(key)

    try:
        derived = derive_mesh(shardings)
    except MeshdiagError:
        derived = None
    return derived_by.put(key, derived)


def _sources(tiled: list[tuple[Value, HloSharding]], derived) -> tuple[Value, ...]:
    """Values behind the derived mesh: those `derive_mesh` names, else every tiled one."""
    picked: list[Value] = []
    # `v not in picked` over thousands of values compares whole Values: bucket them by the
    # fields equal Values must share, and compare (==, as before) only within a bucket
    buckets: dict[tuple, list[Value]] = {}

    def pick(v: Value) -> None:
        same = buckets.setdefault((v.name, v.line, v.column, v.text), [])
        if v not in same:
            same.append(v)
            picked.append(v)

    for src in getattr(derived, "sources", None) or ():
        if isinstance(src, int) and 0 <= src < len(tiled):
            v = tiled[src][0]
        else:
            v = next((v for v, s in tiled if s is src or s == src), None)
        if v is not None:
            pick(v)
    if not picked:
        for v, _ in tiled:
            pick(v)
    return tuple(picked)


# -- comparing meshes --------------------------------------------------------------------
def same_mesh(a: Mesh, b: Mesh) -> bool:
    """Same shape and device order once size-1 axes are dropped (axis names do not matter)."""
    a1, b1 = a.without_size1_axes(), b.without_size1_axes()
    return a1.shape == b1.shape and a1.ids == b1.ids


def refines_global(derived: Mesh, global_mesh: Mesh, memos: RunMemos) -> bool:
    """Is every axis of `derived` one global axis, a sub-axis of one, or whole global axes
    merged — decided from the devices: the derived mesh's device array, read as a tiling
    (one tensor dim per axis), must be a named sharding on the global mesh in which each dim
    is one (sub-)axis or whole axes only.

    Such a mesh is what XLA's import derives from correct shardings on the global mesh: iota
    canonicalisation merges whole adjacent axes (`('batch','model')` prints `<=[8]`), and a
    sharding the compiler itself gave sub-axes (`[{"x","y":(1)2},{"y":(2)2}]` after a
    reshape) splits them (2x2x2 on x=2,y=4). A derived axis that joins a whole axis with
    part of another (the seed's 4x2 on batch=2,model=4: batch times model:(1)2) or a device
    order no (sub-)axis assignment gives is not.
    """
    # every module of a dump asks about the same few meshes (they hash by axes and ids)
    return memos.table("checks.refines_global", 1024).call(_refines_global, derived, global_mesh)


def _refines_global(derived: Mesh, g: Mesh) -> bool:

    d, g1 = derived.without_size1_axes(), g.without_size1_axes()
    if d.size != g1.size:
        return False
    if not d.axes or not g1.axes:
        return d.size == 1
    tile = TileAssignment.from_devices(list(d.shape), list(d.ids))
    try:
        named = hlo_to_named(HloSharding.tiled(tile), g1)
    except MeshdiagError:
        return False
    if named is None or named.whole is not None:
        return False
    for dim in named.dims:
        refs = dim.axes
        if len(refs) > 1 and any(r.is_sub for r in refs):
            return False
    return True


# -- plain specs -------------------------------------------------------------------------
def spec_of(ns: NamedSharding) -> PlainSpec:
    """The per-dim axis names of a plain named sharding."""
    return tuple(tuple(a.name for a in d.axes) for d in ns.dims)


def plain_spec_hlo(spec: PlainSpec, mesh: Mesh) -> HloSharding:
    """The GSPMD sharding XLA's export gives a plain spec on `mesh`."""

    dims = tuple(DimSharding(tuple(AxisRef(a) for a in axes)) for axes in spec)
    return named_to_hlo(NamedSharding(mesh, dims, mesh_ref=mesh.name), mesh)


@dataclass(frozen=True)
class SpecMatch:
    """How a tiled sharding relates to the plain specs on a mesh."""

    exact: PlainSpec | None  # a plain spec with exactly this device assignment
    #: plain specs with the same tiling but another device order (mesh order first)
    same_tiling: tuple[PlainSpec, ...]


def match_plain_spec(s: HloSharding, mesh: Mesh, memos: RunMemos) -> SpecMatch | None:
    """Is `s` what a plain spec on `mesh` gives? None when `s` is not comparable: not tiled,
    manual/unreduced subgroups, or a device count other than the mesh's."""
    return memos.table("checks.plain_spec", 8192).call(_match_plain_spec, s, mesh)


def _match_plain_spec(s: HloSharding, mesh: Mesh) -> SpecMatch | None:

    if not s.is_tiled or s.tile is None or s.tile.num_devices != mesh.size:
        return None
    if any(k != "replicated" for k in s.subgroup_kinds()):
        return None
    exact = plain_spec(s, mesh)
    if exact is not None:
        return SpecMatch(spec_of(exact), ())
    return SpecMatch(None, tuple(spec_of(n) for n in plain_specs_with_same_tiling(s, mesh)))


def value_hlo(v: Value) -> HloSharding | None:
    """The tiled (GSPMD) form of a value's sharding."""
    if v.hlo is not None:
        return v.hlo
    return v.sharding if isinstance(v.sharding, HloSharding) else None


def named_sharding(v: Value) -> NamedSharding | None:
    return v.sharding if isinstance(v.sharding, NamedSharding) else None


def own_spec(v: Value) -> PlainSpec | None:
    """The value's own plain spec (a named sharding with whole axes only), else None."""
    n = named_sharding(v)
    if n is None or n.whole is not None or n.replicated or n.unreduced or n.manual:
        return None
    if any(a.is_sub for d in n.dims for a in d.axes):
        return None
    return spec_of(n)


def pick_spec(m: SpecMatch, own: PlainSpec | None) -> PlainSpec | None:
    """The plain spec a fix suggests: the exact one; else, among those with the same tiling,
    the value's own axes when one of them is (a permuted device order makes several specs
    share a tiling: the fix must not rename the value's axes), else the one in mesh order."""
    if m.exact is not None:
        return m.exact
    if own is not None and own in m.same_tiling:
        return own
    return m.same_tiling[0] if m.same_tiling else None


def corrected_sharding(v: Value, global_mesh: Mesh, memos: RunMemos) -> str | None:
    """The sharding `v` should have on the global mesh, in the value's notation: the plain
    spec with its tiling (`pick_spec`)."""
    s = value_hlo(v)
    if s is None:
        return None
    m = match_plain_spec(s, global_mesh, memos)
    if m is None:
        return None
    spec = pick_spec(m, own_spec(v))
    if spec is None:
        return None

    if v.notation == "sdy":
        return f"{v.name}: <@mesh, {sdy_dims_text(spec)}> ({pspec_text(spec)})"
    return f"{v.name}: {print_gspmd(plain_spec_hlo(spec, global_mesh))} ({pspec_text(spec)})"
