"""MD101/MD102 fixes on a global mesh with permuted device ids: when several plain specs
share the value's tiling, the fix keeps the value's own axes, and the GSPMD string it gives
places every slice where JAX's layout of that spec on the same devices does (JAX is the
oracle: `NamedSharding.devices_indices_map` against `GSPMDSharding` of the fix string)."""

from __future__ import annotations

import itertools
import random
import re

import jax
import numpy as np
import pytest
from jax._src import sharding_impls
from jax._src.lib import xla_client as xc
from jax.sharding import Mesh as JaxMesh
from jax.sharding import NamedSharding as JaxNamedSharding
from jax.sharding import PartitionSpec as P

from meshdiag.checks import md101_mesh_mismatch, md102_off_mesh_sharding
from meshdiag.checks.common import pspec_text, sdy_dims_text
from meshdiag.checks.context import CheckContext
from meshdiag.ir.model import MeshDecl, ModuleReport, Value
from meshdiag.model.mesh import Mesh
from meshdiag.model.named_to_tiled import named_to_hlo
from meshdiag.model.sharding import AxisRef, DimSharding, NamedSharding

SHAPES = [(("x", 2), ("y", 2)), (("x", 2), ("y", 2), ("z", 2)), (("a", 2), ("b", 4))]


def plain_specs(names: tuple[str, ...], rank: int):
    """Every plain spec of `rank` using every axis (each dim's axes in any order)."""
    for assign in itertools.product(range(rank), repeat=len(names)):
        per_dim = [[a for a, d in zip(names, assign, strict=True) if d == i] for i in range(rank)]
        for orders in itertools.product(*(itertools.permutations(d) for d in per_dim)):
            yield tuple(tuple(d) for d in orders)


def cases(seed: int = 7, per_shape: int = 4):
    rng = random.Random(seed)
    for axes in SHAPES:
        n = int(np.prod([s for _, s in axes]))
        for _ in range(per_shape):
            ids = list(range(n))
            rng.shuffle(ids)
            yield axes, tuple(ids)


def sdy_value(mesh: Mesh, spec, shape) -> Value:
    ns = NamedSharding(
        mesh, tuple(DimSharding(tuple(AxisRef(a) for a in d)) for d in spec), mesh_ref="mesh"
    )
    text = f"#sdy.sharding<@mesh, {sdy_dims_text(spec)}>"
    h = named_to_hlo(ns, mesh)
    return Value("%arg0", 4, 20, text, "sdy", kind="arg", shape=shape, sharding=ns, hlo=h)


def jax_indices(axes, ids, spec, shape):
    devs = np.array(jax.devices())[list(ids)].reshape([s for _, s in axes])
    entries = [None if not d else d[0] if len(d) == 1 else d for d in spec]
    ns = JaxNamedSharding(JaxMesh(devs, tuple(a for a, _ in axes)), P(*entries))
    return {d.id: idx for d, idx in ns.devices_indices_map(shape).items()}


def gspmd_indices(text: str, n: int, shape):
    """Per-device slices of a GSPMD string whose numbers are device ids (JAX as the oracle)."""
    h = xc.HloSharding.from_string(text)
    s = sharding_impls.GSPMDSharding(jax.devices()[:n], h)
    return {d.id: idx for d, idx in s.devices_indices_map(shape).items()}


@pytest.mark.parametrize(("axes", "ids"), list(cases()))
def test_fix_keeps_own_axes_and_places_slices_like_jax(axes, ids):
    declared = Mesh(axes, None, "mesh")  # the dump's mesh: iota
    g = Mesh(axes, ids, "mesh")  # the global mesh: permuted devices
    shape = (16, 16)
    checked = 0
    for spec in plain_specs(declared.names, 2):
        v = sdy_value(declared, spec, shape)
        m = ModuleReport("m", 1, meshes=[MeshDecl("mesh", declared, 3, 3, "<...>")], values=[v])
        ctx = CheckContext("dump.mlir", g)
        found = md102_off_mesh_sharding.check(m, ctx)
        if not found:
            continue  # this permutation happens to keep the spec's device assignment
        (f,) = found
        assert f.fix.startswith(f"use {pspec_text(spec)} on the global mesh: "), (spec, f.fix)
        right = re.search(r": (\{devices=[^}]*\})", f.fix).group(1)
        assert gspmd_indices(right, g.size, shape) == jax_indices(axes, ids, spec, shape)
        (f101,) = md101_mesh_mismatch.check(m, ctx)
        assert f"%arg0: <@mesh, {sdy_dims_text(spec)}>" in f101.fix
        checked += 1
    assert checked > 0
