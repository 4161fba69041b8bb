"""Collectives measured: per collective its groups, axes and bytes; per module and per
op_name the totals; the JSON document `meshdiag comms --format json` prints.

`measure_module` turns a scanned module into rows sorted by bytes per device (largest
first). The axes are found on the global mesh when one is given and has the module's device
count, else on the module's own Shardy mesh, else (mesh-form groups) on the mesh the
collective prints itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal, NamedTuple

from meshdiag.comms import cost
from meshdiag.comms.axes import attribute, refs_text
from meshdiag.comms.groups import id_count, mesh_groups
from meshdiag.errors import MeshdiagError
from meshdiag.layouts.engine import layout
from meshdiag.limits import MAX_DEVICES
from meshdiag.memo import RunMemos, Table
from meshdiag.model.collective_bytes import array_bytes

if TYPE_CHECKING:
    from collections.abc import Callable

    from meshdiag.comms.model import Collective, CollectiveFile, CollectiveModule
    from meshdiag.model.mesh import Mesh
    from meshdiag.model.sharding import AxisRef

MeshSource = Literal["global", "module", "collective"]


@dataclass(frozen=True)
class Row:
    collective: Collective
    groups: tuple[tuple[int, ...], ...] | None  # device ids per group, when known
    group_size: int | None
    traffic: cost.Traffic | None  # None: not known (a reshard, an unknown type)
    exact: bool  # False: an upper bound (a Shardy collective_permute)
    #: the axes the groups run over on `mesh_source`'s mesh; None: none do (or no mesh)
    axes: tuple[AxisRef, ...] | None
    mesh_source: MeshSource | None  # which mesh `axes` refers to; None: no mesh to use
    mesh: Mesh | None = None

    @property
    def per_device(self) -> int:
        return self.traffic.per_device if self.traffic is not None else 0

    @property
    def off_mesh(self) -> bool:
        """Groups that no (sub-)axes of the mesh give."""
        return self.mesh_source is not None and self.groups is not None and self.axes is None


@dataclass
class ModuleComms:
    module: CollectiveModule
    rows: list[Row]  # sorted by bytes per device, largest first
    mesh_note: str | None = None  # why the global mesh was not used

    @property
    def per_device(self) -> int:
        return sum(r.per_device for r in self.rows)

    @property
    def total(self) -> int:
        return sum(r.traffic.total for r in self.rows if r.traffic is not None)

    def by_op_name(self) -> list[tuple[str, int, int]]:
        """(op_name, collectives, bytes per device), largest first."""
        acc: dict[str, list[int]] = {}
        for r in self.rows:
            key = r.collective.op_name or "(no op_name)"
            slot = acc.setdefault(key, [0, 0])
            slot[0] += 1
            slot[1] += r.per_device
        return sorted(((k, c, b) for k, (c, b) in acc.items()), key=lambda t: (-t[2], t[0]))


@dataclass
class FileComms:
    path: str
    modules: list[ModuleComms] = field(default_factory=list)


def measure_file(
    f: CollectiveFile,
    mesh: Mesh | None,
    memos: RunMemos | None = None,
    keep: Callable[[Collective], bool] | None = None,
) -> FileComms:
    """Every collective of `f` measured (only those `keep` keeps, when given: the modules
    left without one are left out); equal collectives are measured once per run (the run's
    `memos`; a dump repeats the same few on thousands of lines)."""
    memos = RunMemos() if memos is None else memos
    out = []
    for m in f.modules:
        if keep is not None and m.collectives:
            m = replace(m, collectives=[c for c in m.collectives if keep(c)])
        if m.collectives:
            out.append(measure_module(m, mesh, memos))
    return FileComms(f.path, out)


def measure_module(
    m: CollectiveModule, mesh: Mesh | None, memos: RunMemos | None = None
) -> ModuleComms:
    note = None
    use_global = mesh
    if mesh is not None and m.num_partitions and mesh.size != m.num_partitions:
        note = (
            f"the global mesh <{mesh.short()}> has {mesh.size} devices but the module has "
            f"{m.num_partitions}: axes are not attributed on it"
        )
        use_global = None
    measured = (RunMemos() if memos is None else memos).table("comms.measured", 4096)
    rows = [measure(c, m, use_global, measured) for c in m.collectives]
    rows.sort(key=lambda r: (-r.per_device, r.collective.line))
    return ModuleComms(m, rows, note)


def module_mesh(m: CollectiveModule) -> Mesh | None:
    """The module's one Shardy mesh (the first when it declares several)."""
    for mesh in m.meshes.values():
        if not mesh.is_maximal and not mesh.is_empty:
            return mesh
    return None


def groups_of(c: Collective, m: CollectiveModule) -> tuple[tuple[int, ...], ...] | None:
    """The device groups of a collective: its replica groups (HLO; `{}` or none = all the
    module's devices), or those of its axes on its mesh (Shardy)."""
    if c.dialect == "hlo":
        if c.kind == "collective-permute":
            return None
        if c.groups is not None and c.groups.groups is not None:
            return c.groups.groups
        if m.num_partitions and m.num_partitions <= MAX_DEVICES:
            return (tuple(range(m.num_partitions)),)
        # (a header claiming more devices than the limit: its groups are unknown, not a
        # list of them made; MD104 says the shardings do not fit it)
        return None
    sharding = c.out_sharding
    if c.kind in ("collective-permute", "reshard") or sharding is None or sharding.mesh is None:
        return None
    return _axis_rows(sharding.mesh, c.sdy_axes)


def _axis_rows(mesh: Mesh, refs: tuple[AxisRef, ...]) -> tuple[tuple[int, ...], ...]:
    return tuple(mesh_groups(mesh, refs))


class _What(NamedTuple):
    """What a row's figures depend on: a collective without its place, and its module's
    device count (hashable, so equal collectives are measured once)."""

    kind: str
    dialect: str
    results: tuple
    groups: object
    pairs: object
    sdy_axes: tuple
    out_sharding: object
    in_sharding: object
    global_shape: object
    sdy_a2a: tuple
    num_partitions: int | None
    #: device ids are partition ids (a channel_id, or Shardy); without one, HLO groups
    #: list replica ids, which are no mesh's devices
    partitions: bool


def measure(c: Collective, m: CollectiveModule, mesh: Mesh | None, measured: Table) -> Row:
    what = _What(
        c.kind,
        c.dialect,
        c.results,
        c.groups,
        c.pairs,
        c.sdy_axes,
        c.out_sharding,
        c.in_sharding,
        c.global_shape,
        c.sdy_a2a,
        m.num_partitions,
        c.dialect == "sdy" or c.channel_id is not None,
    )
    return Row(c, *measured.call(_measured, what, mesh, module_mesh(m)))


def _measured(c: _What, mesh: Mesh | None, own: Mesh | None) -> tuple:
    """(groups, group size, traffic, exact, axes, mesh source, mesh) of a collective."""
    groups = groups_of(c, c)  # type: ignore[arg-type]
    n = len(groups[0]) if groups else None
    traffic, exact = _traffic(c, c, groups)  # type: ignore[arg-type]
    axes, source, used = None, None, None
    if groups is not None and c.partitions:
        total = id_count(groups)
        for src, candidate in (
            ("global", mesh),
            ("module", own),
            ("collective", c.groups.mesh if c.groups is not None else None),  # type: ignore[attr-defined]
        ):
            # the global mesh judges every collective of a module of its size (groups over
            # only some of its devices are no axes of it); the others only groups they cover
            if candidate is not None and (
                candidate.size == total or (src == "global" and c.num_partitions == mesh.size)  # type: ignore[union-attr]
            ):
                axes, source, used = attribute(groups, candidate), src, candidate
                break
    return groups, n, traffic, exact, axes, source, used


def _traffic(c: Collective, m: CollectiveModule, groups) -> tuple[cost.Traffic | None, bool]:
    sizes = [array_bytes(s, d) for s, d in c.results]
    if c.kind == "all-slice":
        return cost.none(), True
    if c.kind == "reshard" or not sizes or any(b is None for b in sizes):
        return None, True
    nbytes = sum(sizes)  # type: ignore[arg-type]
    if c.kind == "collective-permute":
        if c.dialect == "hlo":
            return cost.collective_permute(nbytes, c.pairs or ()), True
        exact = _sdy_permute(c, nbytes)
        if exact is not None:
            return exact, True
        devices = c.out_sharding.mesh.size if c.out_sharding and c.out_sharding.mesh else 1
        return cost.Traffic(nbytes, nbytes, nbytes * devices), False
    if not groups:
        return None, True
    devices = id_count(groups)
    n = len(groups[0])
    if c.kind == "all-gather":
        return cost.all_gather(nbytes, n, devices), True
    if c.kind == "reduce-scatter":
        return cost.reduce_scatter(nbytes, n, devices), True
    if c.kind == "all-reduce":
        return cost.all_reduce(nbytes, n, devices), True
    if c.kind == "all-to-all" and c.dialect == "sdy" and len(c.sdy_a2a) > 1:
        mesh = c.out_sharding.mesh  # type: ignore[union-attr]
        parts = [
            cost.all_to_all(nbytes, len(mesh_groups(mesh, refs)[0]), devices)  # type: ignore[arg-type]
            for refs, _, _ in c.sdy_a2a
        ]
        return cost.Traffic(
            *(sum(getattr(p, f) for p in parts) for f in ("sent", "received", "total"))
        ), True
    return cost.all_to_all(nbytes, n, devices), True  # all-to-all, ragged (an upper bound)


def _sdy_permute(c: Collective, nbytes: int) -> cost.Traffic | None:
    """A Shardy collective_permute whose operand's sharding the dump gives: the devices whose
    slice of the global tensor changes (None when the layouts cannot be computed)."""

    src, dst, shape = c.in_sharding, c.out_sharding, c.global_shape
    if src is None or dst is None or shape is None or src.mesh is None or dst.mesh is None:
        return None
    if src.mesh.size != dst.mesh.size:
        return None
    try:
        before = layout(src, shape, mesh=src.mesh)
        after = layout(dst, shape, mesh=dst.mesh)
    except MeshdiagError:
        return None
    return cost.permute_by_layout(
        nbytes, (before.starts, before.stops), (after.starts, after.stops)
    )


# -- JSON ----------------------------------------------------------------------------------


def _shape_text(shape, dtype) -> str:
    dims = "?" if shape is None else ",".join(map(str, shape))
    return f"{dtype}[{dims}]"


def row_json(r: Row) -> dict:
    c = r.collective
    return {
        "kind": c.kind,
        "op": c.op,
        "name": c.name,
        "line": c.line,
        "column": c.column,
        "computation": c.computation,
        "async": c.is_async,
        "shapes": [_shape_text(s, d) for s, d in c.results],
        "dtype": c.dtype,
        "replica_groups": c.groups.text if c.groups is not None else None,
        "replica_groups_form": c.groups.form if c.groups is not None else None,
        "groups": [list(g) for g in r.groups] if r.groups is not None else None,
        "group_size": r.group_size,
        "source_target_pairs": [list(p) for p in c.pairs] if c.pairs is not None else None,
        "dimensions": list(c.dimensions),
        "axes": None if r.axes is None else [refs_text((a,)) for a in r.axes],
        "axes_mesh": r.mesh_source,
        "off_mesh": r.off_mesh,
        "bytes_sent": r.traffic.sent if r.traffic else None,
        "bytes_received": r.traffic.received if r.traffic else None,
        "bytes_per_device": r.traffic.per_device if r.traffic else None,
        "bytes_total": r.traffic.total if r.traffic else None,
        "exact": r.exact,
        "gathered_over": c.gathered,
        "op_name": c.op_name,
        "source": c.source,
    }


def module_json(mc: ModuleComms) -> dict:
    m = mc.module
    return {
        "name": m.name,
        "line": m.line,
        "dialect": m.dialect,
        "section": m.section,
        "num_partitions": m.num_partitions,
        "mesh_note": mc.mesh_note,
        "collectives": [row_json(r) for r in mc.rows],
        "totals": {
            "collectives": len(mc.rows),
            "bytes_per_device": mc.per_device,
            "bytes_total": mc.total,
        },
        "by_op_name": [
            {"op_name": k, "collectives": n, "bytes_per_device": b} for k, n, b in mc.by_op_name()
        ],
    }


class JsonWriter:
    """`meshdiag comms --format json`'s document (version, mesh, files, totals, findings)
    written a file at a time (`file`, then `end`), as `json.dumps(document, indent=1)`
    would write it whole: a run over thousands of files keeps none of their collectives
    (the whole document of the cold bench's dumps was 116 MB of text, and the objects it
    came from several times that)."""

    def __init__(self, write: Callable[[str], object], mesh: Mesh | None) -> None:
        self.write = write
        self.files = self.modules = self.collectives = self.per_device = self.total = 0
        head = {"axes": [list(a) for a in mesh.axes]} if mesh is not None else None
        write('{\n "version": 1,\n "mesh": ' + _nested(head, 1) + ',\n "files": [')

    def file(self, f: FileComms) -> None:
        doc = {"path": f.path, "modules": [module_json(mc) for mc in f.modules]}
        self.write(("," if self.files else "") + "\n  " + _nested(doc, 2))
        self.files += 1
        for mc in f.modules:
            self.modules += 1
            self.collectives += len(mc.rows)
            self.per_device += mc.per_device
            self.total += mc.total

    def end(self, findings: list) -> None:
        totals = {
            "modules": self.modules,
            "collectives": self.collectives,
            "bytes_per_device": self.per_device,
            "bytes_total": self.total,
        }
        found = [f.to_json() for f in findings]
        self.write(
            ("\n ]" if self.files else "]")
            + ',\n "totals": '
            + _nested(totals, 1)
            + ',\n "findings": '
            + _nested(found, 1)
            + "\n}"
        )


def _nested(obj: object, depth: int) -> str:
    """`json.dumps(obj, indent=1)` as it reads `depth` levels down a document dumped so
    (its strings hold no newline: JSON escapes them)."""
    import json

    return json.dumps(obj, indent=1).replace("\n", "\n" + " " * depth)
