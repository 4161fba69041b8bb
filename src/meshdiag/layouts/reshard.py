"""`reshard` as a library: two shardings in any notation → plan → cost.

    from meshdiag.layouts.reshard import reshard
    cost = reshard("P('x', None)", "P(None, None)", shape=(16, 32), mesh=parse_mesh("x=2,y=4"))
    cost.max_bytes   # 1024: each device receives the half it lacks, f32

The planner proposes a sequence per setting (slicing free target axes early or only in
place; swapping equal axes between dims or not) and the one that moves the fewest bytes per
device is reported.

Both shardings are brought onto the one mesh as named shardings (a GSPMD string through
meshdiag's import, `derive.hlo_to_named`); a sharding whose device order no axes of the mesh
give cannot be planned in mesh terms and is refused with the meshes it does fit.
"""

from __future__ import annotations

from meshdiag.errors import MeshdiagError
from meshdiag.layouts.reshard_cost import ReshardCost, cost_plan
from meshdiag.layouts.reshard_plan import plan_candidates
from meshdiag.memo import RunMemos
from meshdiag.model.collective_bytes import dtype_bytes
from meshdiag.model.derive import hlo_to_named, meshes_fitting, xla_normal_form
from meshdiag.model.mesh import Mesh
from meshdiag.model.sharding import HloSharding, NamedSharding
from meshdiag.notation.detect import parse_sharding, to_hlo


def _same_mesh(a: Mesh, b: Mesh) -> bool:
    return a.axes == b.axes and a.ids == b.ids


def on_mesh(s: HloSharding | NamedSharding, mesh: Mesh, what: str) -> NamedSharding:
    """`s` as a named sharding on `mesh` (same device assignment), or a MeshdiagError."""
    if isinstance(s, NamedSharding) and s.mesh is not None and _same_mesh(s.mesh, mesh):
        return s
    h = xla_normal_form(to_hlo(s, mesh))
    if h.kind == "replicated":
        return NamedSharding(mesh, (), mesh_ref=mesh.name, whole="replicated")
    if h.kind != "tiled":
        raise MeshdiagError(
            f"{what} is a {h.kind} sharding; reshard plans tiled and replicated ones"
        )
    if h.tile is not None and h.tile.num_devices != mesh.size:
        raise MeshdiagError(
            f"{what} spans {h.tile.num_devices} devices but mesh {mesh.short()} has {mesh.size}"
        )
    named = hlo_to_named(h, mesh)
    if named is None:
        fits = ", ".join(m.shape_text() for m in meshes_fitting(h, max_results=4))
        raise MeshdiagError(
            f"{what}'s device order is not given by any axes of mesh {mesh.short()}, so it "
            "cannot be planned in mesh terms" + (f"; it fits the meshes {fits}" if fits else "")
        )
    return named


def resolve_mesh(a, b, mesh: Mesh | None) -> Mesh:
    """--mesh, else the Shardy mesh the shardings name (the same one)."""
    if mesh is not None:
        return mesh
    own = [s.mesh for s in (a, b) if isinstance(s, NamedSharding) and s.mesh is not None]
    if own and all(_same_mesh(own[0], m) for m in own):
        return own[0]
    raise MeshdiagError("reshard needs the mesh both shardings live on; pass --mesh")


def reshard(
    source: str,
    target: str,
    *,
    shape: tuple[int, ...],
    mesh: Mesh | None,
    dtype: str = "f32",
) -> ReshardCost:
    itemsize = dtype_bytes(dtype)
    a = parse_sharding(source, mesh=mesh, rank=len(shape))
    b = parse_sharding(target, mesh=mesh, rank=len(shape))
    m = resolve_mesh(a, b, mesh)
    if m.is_maximal or not m.axes:
        raise MeshdiagError(f"mesh {m.short()} has no axes to reshard over")
    na = on_mesh(a, m, "FROM")
    nb = on_mesh(b, m, "TO")
    memos = RunMemos()  # the candidates share their source and target layouts
    costs = [cost_plan(p, shape, itemsize, memos) for p in plan_candidates(na, nb, m, shape)]
    # the planner's settings give up to four sequences; the one moving the fewest bytes wins
    return min(costs, key=lambda c: (c.max_bytes, c.total_bytes, len(c.steps)))
