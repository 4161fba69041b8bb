"""MD101/MD102 never fire on what a plain spec on the global mesh really gives (JAX is the
oracle), MD102 fires exactly when no plain spec gives a sharding, and the real dumps in
fixtures/ are clean on their true global mesh."""

from __future__ import annotations

import itertools
import json
import math
import random
from pathlib import Path

import jax
import numpy as np
import pytest
from jax._src.lib import xla_client as xc
from jax.sharding import Mesh as JaxMesh
from jax.sharding import NamedSharding as JaxNamedSharding
from jax.sharding import PartitionSpec as P

from meshdiag.checks import md101_mesh_mismatch, md102_off_mesh_sharding
from meshdiag.checks.common import module_meshes
from meshdiag.checks.context import CheckContext
from meshdiag.ir.model import ModuleReport, Value
from meshdiag.memo import RunMemos
from meshdiag.model.mesh import Mesh
from meshdiag.model.sharding import HloSharding
from meshdiag.model.tiles import TileAssignment
from meshdiag.notation.gspmd import print_gspmd

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SIZES = (1, 2, 2, 3, 4, 4, 8)


def random_mesh(rng: random.Random) -> Mesh:
    while True:
        k = rng.randint(1, 4)
        shape = [rng.choice(SIZES) for _ in range(k)]
        if 2 <= math.prod(shape) <= len(jax.devices()):
            return Mesh(tuple((f"a{i}", s) for i, s in enumerate(shape)))


def random_spec(rng: random.Random, mesh: Mesh, rank: int) -> tuple[tuple[str, ...], ...]:
    dims: list[list[str]] = [[] for _ in range(rank)]
    names = list(mesh.names)
    rng.shuffle(names)  # random order of axes inside a dim
    for a in names:
        d = rng.randint(-1, rank - 1)
        if d >= 0:
            dims[d].append(a)
    return tuple(tuple(d) for d in dims)


def jax_mesh(mesh: Mesh) -> JaxMesh:
    devs = np.array(jax.devices()[: mesh.size]).reshape(mesh.shape)
    return JaxMesh(devs, mesh.names)


def jax_hlo(mesh: Mesh, spec, rank: int):
    entries = [None if not d else d[0] if len(d) == 1 else d for d in spec]
    return JaxNamedSharding(jax_mesh(mesh), P(*entries))._to_xla_hlo_sharding(rank)


def from_jax(h) -> HloSharding:
    """meshdiag's HloSharding built from the XLA object's accessors (not its text)."""
    if h.is_replicated():
        return HloSharding.replicated()
    assert not h.subgroup_types(), "plain specs have no manual/unreduced subgroups"
    tile = TileAssignment.from_devices(h.tile_assignment_dimensions(), h.tile_assignment_devices())
    if h.is_tile_assignment_iota():
        tile = tile.as_iota()
        assert tile is not None
    return HloSharding.tiled(tile, replicate_on_last=h.replicate_on_last_tile_dim())


def gspmd_module(s: HloSharding, rank: int) -> ModuleReport:
    text = print_gspmd(s)
    v = Value("%arg0", 2, 10, text, "gspmd", kind="arg", shape=(64,) * rank, sharding=s, hlo=s)
    return ModuleReport("m", 1, values=[v])


def findings(module: ModuleReport, mesh: Mesh) -> list[str]:
    ctx = CheckContext("case", mesh)
    out = md101_mesh_mismatch.check(module, ctx) + md102_off_mesh_sharding.check(module, ctx)
    return [f"{f.code}: {f.message}" for f in out]


def cases(n: int, seed: int):
    rng = random.Random(seed)
    for _ in range(n):
        mesh = random_mesh(rng)
        rank = rng.randint(1, 3)
        yield mesh, random_spec(rng, mesh, rank), rank


@pytest.mark.parametrize("chunk", range(5))
def test_plain_specs_from_jax_never_fire(chunk):
    checked = 0
    for mesh, spec, rank in cases(120, seed=1000 + chunk):
        h = jax_hlo(mesh, spec, rank)
        mine = from_jax(h)
        assert print_gspmd(mine) == str(h)  # the object we check is the one JAX made
        module = gspmd_module(mine, rank)
        got = findings(module, mesh)
        assert got == [], (mesh.short(), spec, str(h), got)
        # MD101 really compared a derived mesh (no silent "cannot derive")
        assert bool(module_meshes(module, RunMemos())) is not h.is_replicated()
        checked += 1
    assert checked == 120


def all_plain_hlos(mesh: Mesh, rank: int) -> list:
    """JAX's HloSharding for every plain spec of this rank on the mesh (axes in any order)."""
    out = []
    names = mesh.names
    for assign in itertools.product(range(-1, rank), repeat=len(names)):
        per_dim = [[a for a, d in zip(names, assign, strict=True) if d == i] for i in range(rank)]
        for orders in itertools.product(*(itertools.permutations(d) for d in per_dim)):
            out.append(jax_hlo(mesh, orders, rank))
    return out


def test_iota_device_order_fires_exactly_when_no_plain_spec_matches():
    seen_fire = seen_quiet = 0
    cache: dict[tuple, list] = {}
    for mesh, spec, rank in cases(150, seed=42):
        if len(mesh.names) > 3:
            continue  # keep the exhaustive JAX enumeration small
        h = jax_hlo(mesh, spec, rank)
        if h.is_replicated():
            continue
        dims = h.tile_assignment_dimensions()
        rep = " last_tile_dim_replicate" if h.replicate_on_last_tile_dim() else ""
        iota = xc.HloSharding.from_string(
            f"{{devices=[{','.join(map(str, dims))}]<=[{math.prod(dims)}]{rep}}}"
        )
        key = (mesh.axes, rank)
        if key not in cache:
            cache[key] = all_plain_hlos(mesh, rank)
        plain = any(iota == other for other in cache[key])
        mine = from_jax(iota)
        got = [f for f in findings(gspmd_module(mine, rank), mesh) if f.startswith("MD102")]
        assert bool(got) is (not plain), (mesh.short(), str(iota), got)
        seen_fire += bool(got)
        seen_quiet += not got
    assert seen_fire > 10 and seen_quiet > 10  # both outcomes are exercised


def manifest() -> dict[str, str]:
    path = FIXTURES / "MANIFEST.json"
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    return {k: v["mesh"] for k, v in data.items() if v.get("mesh")}


REAL = sorted(k for k in manifest() if not k.startswith("seed/distorted") and not k.endswith(".o"))


# comms/shardy/reshard/02.after_reshard_to_collectives.mlir holds the sub-axis layout Shardy's
# own reshard-to-collectives gives a collective_permute ([{"model":(1)2}, {"model":(2)2,
# "batch"}]): a layout of the global mesh, so neither MD101 nor MD102 may fire on it.
@pytest.mark.parametrize("rel", REAL)
def test_real_dumps_are_clean_on_their_global_mesh(rel):
    from meshdiag.inputs.mesh_input import parse_mesh
    from meshdiag.ir.scan import scan_path

    mesh = parse_mesh(manifest()[rel])
    report = scan_path(str(FIXTURES / rel))
    ctx = CheckContext(rel, mesh)
    for module in report.modules:
        got = md101_mesh_mismatch.check(module, ctx) + md102_off_mesh_sharding.check(module, ctx)
        assert got == [], [f"{f.code} line {f.line}: {f.message}" for f in got]


def test_real_dumps_were_found():
    assert len(REAL) >= 10 or not manifest()
