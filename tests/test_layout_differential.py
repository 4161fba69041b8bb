"""meshdiag.layout against the real systems.

- JAX: random meshes (≤ 64 devices, permuted device ids) × random PartitionSpecs × divisible
  shapes. XLA's HloSharding is taken from `NamedSharding._to_xla_hlo_sharding` and rebuilt
  field by field (not through meshdiag's text parser); every device's slices must equal
  `devices_indices_map`. HloSharding device d is position d of `ns._device_assignment`.
- Uneven dims: XLA's rule (ceil tiles, clipped) computed independently, `chunk` against
  torch.chunk's definition (chunks of ceil(n/k), ceil(n/c) of them), `array-split` against
  `numpy.array_split` itself.
"""

from __future__ import annotations

import itertools
import math
import random

import jax
import numpy as np
import pytest
from jax.sharding import Mesh as JaxMesh
from jax.sharding import NamedSharding as JaxNamed
from jax.sharding import PartitionSpec as P

from meshdiag.layouts.engine import layout
from meshdiag.model.sharding import HloSharding
from meshdiag.model.tiles import TileAssignment

MESH_SHAPES = [(8,), (2, 4), (4, 2), (2, 2, 2), (64,), (4, 4, 4), (2, 8, 4), (3, 5), (2, 3, 4)]
NAMES = ("a", "b", "c")
N_CASES = 1200


def _hlo_from_xla(hs, n: int) -> HloSharding:
    """meshdiag's HloSharding from xla_client.HloSharding accessors (no text parsing)."""
    if hs.is_replicated():
        return HloSharding.replicated()
    dims = tuple(hs.tile_assignment_dimensions())
    devices = tuple(hs.tile_assignment_devices())
    types = tuple(t.name.lower() for t in hs.subgroup_types())
    return HloSharding.tiled(
        TileAssignment.from_devices(dims, devices),
        replicate_on_last=hs.replicate_on_last_tile_dim(),
        subgroup_types=types,
    )


def _normalise(idx: tuple[slice, ...], shape: tuple[int, ...]) -> list[list[int]]:
    out = []
    for sl, n in zip(idx, shape, strict=True):
        start, stop, step = sl.indices(n)
        assert step == 1
        out.append([start, stop])
    return out


def _random_spec(rng: random.Random, names: tuple[str, ...], rank: int):
    """Each mesh axis goes to a random dim or stays unused; axis order within a dim random."""
    per_dim: list[list[str]] = [[] for _ in range(rank)]
    for a in rng.sample(names, len(names)):
        if rank and rng.random() < 0.7:
            per_dim[rng.randrange(rank)].append(a)
    entries = []
    for axes in per_dim:
        if not axes:
            entries.append(None)
        elif len(axes) == 1 and rng.random() < 0.5:
            entries.append(axes[0])
        else:
            entries.append(tuple(axes))
    return P(*entries), per_dim


@pytest.fixture(scope="module")
def meshes():
    rng = np.random.default_rng(1234)
    all_devices = np.array(jax.devices())
    assert len(all_devices) >= 64, "tests/conftest.py must configure 64 fake CPU devices"
    out = []
    for shape in MESH_SHAPES:
        n = math.prod(shape)
        for _ in range(2):  # two device orders per mesh shape
            devs = all_devices[rng.permutation(64)[:n]].reshape(shape)
            out.append(JaxMesh(devs, NAMES[: len(shape)]))
    return out


def test_layout_matches_jax_devices_indices_map(meshes):
    rng = random.Random(20240601)
    checked = 0
    for case in range(N_CASES):
        mesh = meshes[case % len(meshes)]
        names = tuple(mesh.axis_names)
        sizes = dict(zip(names, mesh.devices.shape, strict=True))
        rank = rng.randrange(0, 5)
        spec, per_dim = _random_spec(rng, names, rank)
        shape = tuple(
            math.prod(sizes[a] for a in axes) * rng.choice((1, 1, 2, 3, 5)) for axes in per_dim
        )
        ns = JaxNamed(mesh, spec)
        n = mesh.devices.size
        hlo = _hlo_from_xla(ns._to_xla_hlo_sharding(rank), n)
        lay = layout(hlo, shape, split="even", num_devices=n)
        expected = ns.devices_indices_map(shape)
        got = lay.to_json()["devices"]
        assert len(got) == n
        for d, jdev in enumerate(ns._device_assignment):
            want = _normalise(expected[jdev], shape)
            assert got[d]["slices"] == want, (spec, shape, mesh.devices.shape, d)
            assert got[d]["shard_shape"] == [b - a for a, b in want]
            assert got[d]["buffer_shape"] == got[d]["shard_shape"]  # divisible: no padding
        # devices with equal slices are exactly one replica group
        by_slices: dict[str, set[int]] = {}
        for d in range(n):
            by_slices.setdefault(str(got[d]["slices"]), set()).add(int(lay.groups[d]))
        assert all(len(g) == 1 for g in by_slices.values())
        assert lay.num_groups == len(by_slices)
        checked += 1
    assert checked == N_CASES


def test_jax_text_form_matches_seed_strings():
    """The two seed strings: what JAX prints for P(None, 'model') on batch=2 x model=4."""
    devs = np.array(jax.devices()[:8]).reshape(2, 4)
    ns = JaxNamed(JaxMesh(devs, ("batch", "model")), P(None, "model"))
    hs = ns._to_xla_hlo_sharding(2)
    assert str(hs) == "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"
    lay = layout(_hlo_from_xla(hs, 8), (32, 32))
    cols = {d.device: d.slices[1] for d in lay.devices()}
    assert cols == {j + 4 * b: (8 * j, 8 * j + 8) for j in range(4) for b in range(2)}


# -- uneven dims -----------------------------------------------------------------------------


def _xla_ranges(n: int, k: int) -> list[tuple[int, int]]:
    c = -(-n // k)
    return [(min(i * c, n), min((i + 1) * c, n)) for i in range(k)]


def _torch_chunk_ranges(n: int, k: int) -> list[tuple[int, int]]:
    """torch.chunk(arange(n), k): chunks of c = ceil(n/k); there are ceil(n/c) of them."""
    if n == 0:
        return [(0, 0)] * k  # torch's chunk(): k empty chunks via split_with_sizes
    c = -(-n // k)
    return [(s, min(s + c, n)) for s in range(0, n, c)]


@pytest.mark.parametrize("rule", ["xla", "chunk", "array-split"])
def test_uneven_1d_rules(rule):
    for n, k in itertools.product(range(0, 40), range(1, 17)):
        lay = layout(HloSharding.tiled(TileAssignment.iota((k,))), (n,), split=rule)
        got = lay.to_json()["devices"]
        if rule == "xla":
            c = -(-n // k)
            want = _xla_ranges(n, k)
            assert [tuple(g["slices"][0]) for g in got] == want
            assert all(g["buffer_shape"] == [c] for g in got)
            assert [g["empty"] for g in got] == [a == b for a, b in want]
        elif rule == "chunk":
            chunks = _torch_chunk_ranges(n, k)
            for i, g in enumerate(got):
                if i < len(chunks):
                    assert tuple(g["slices"][0]) == chunks[i], (n, k, i)
                    assert g["buffer_shape"] == [chunks[i][1] - chunks[i][0]]
                else:
                    assert g["slices"] is None and g["buffer_shape"] is None and g["empty"]
        else:
            parts = np.array_split(np.arange(n), k)
            for g, part in zip(got, parts, strict=True):
                a, b = g["slices"][0]
                assert list(range(a, b)) == part.tolist()
                assert g["buffer_shape"] == [len(part)]


def _slow_reference(tile: np.ndarray, data_rank: int, shape, rule: str):
    """Per-device ranges by walking the assignment array element by element."""
    out = {}
    for pos in np.ndindex(*tile.shape):
        dev = int(tile[pos])
        ranges = []
        absent = False
        for d in range(data_rank):
            n, k, i = shape[d], tile.shape[d], pos[d]
            if rule == "array-split":
                q, r = divmod(n, k)
                start = i * q + min(i, r)
                ranges.append((start, start + q + (i < r)))
            else:
                a, b = _xla_ranges(n, k)[i]
                if rule == "chunk" and i >= len(_torch_chunk_ranges(n, k)):
                    absent = True
                ranges.append((a, b))
        out[dev] = None if absent else ranges
    return out


@pytest.mark.parametrize("rule", ["xla", "chunk", "array-split"])
def test_uneven_nd_with_replication_against_slow_walk(rule):
    rng = np.random.default_rng(7)
    for _ in range(150):
        rank = int(rng.integers(1, 4))
        dims = [int(x) for x in rng.integers(1, 5, size=rank)]
        rep = int(rng.integers(1, 4))
        full = dims + ([rep] if rep > 1 else [])
        n_dev = math.prod(full)
        tile = rng.permutation(n_dev).reshape(full)
        shape = tuple(int(x) for x in rng.integers(0, 13, size=rank))
        s = HloSharding.tiled(TileAssignment.from_array(tile), replicate_on_last=rep > 1)
        lay = layout(s, shape, split=rule)
        want = _slow_reference(tile, rank, shape, rule)
        for dev in lay.devices():
            w = want[dev.device]
            assert (None if dev.slices is None else list(dev.slices)) == w, (tile, shape)


@pytest.mark.parametrize(
    "spec, shape", [(("x",), (8, 6)), (("y",), (4, 6, 2)), ((), (4, 6)), ((("x", "y"),), (8, 3))]
)
def test_a_short_partition_spec_replicates_the_trailing_dims_like_jax(spec, shape) -> None:
    """JAX accepts a PartitionSpec shorter than the array's rank (the rest replicated)."""
    from meshdiag import parse_mesh

    devs = np.array(jax.devices()[:8]).reshape(2, 4)
    ref = JaxNamed(JaxMesh(devs, ("x", "y")), P(*spec)).devices_indices_map(shape)
    text = "P(" + ", ".join(repr(s) for s in spec) + ")"
    lay = layout(text, shape, mesh=parse_mesh("x=2,y=4"))
    got = {d["device"]: d["slices"] for d in lay.to_json()["devices"]}
    assert got == {d.id: _normalise(idx, shape) for d, idx in ref.items()}
