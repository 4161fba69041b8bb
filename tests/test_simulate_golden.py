"""Differential tests: simulate-copy's per-device regions against torch.chunk (committed golden
vectors made by tests/golden/make_torch_golden.py with real torch 2.13.0) and numpy.array_split
(live)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from meshdiag.errors import MeshdiagError
from meshdiag.model.mesh import mesh_from_shape
from meshdiag.simulate.copy import simulate_copy

GOLDEN = Path(__file__).parent / "golden" / "torch_chunk.json"
REGENERATE = (
    "regenerate with: python -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install "
    "torch==2.13.0 numpy && /tmp/torchvenv/bin/python tests/golden/make_torch_golden.py"
)


def load_golden() -> dict:
    doc = json.loads(GOLDEN.read_text())
    body = json.dumps(doc["cases"], sort_keys=True)
    assert hashlib.sha256(body.encode()).hexdigest() == doc["sha256"], (
        f"{GOLDEN} was edited by hand; {REGENERATE}"
    )
    return doc


DOC = load_golden()


def test_golden_made_by_real_torch():
    assert DOC["torch_version"].startswith("2.13.0")
    assert len(DOC["cases"]) >= 200
    # the set covers fewer-chunks-than-devices, unequal last chunks and both mapper kinds
    assert any(c["mapper"].startswith("shard2d") for c in DOC["cases"])
    assert any(
        c["mapper"].startswith("shard:") and len(c["pieces"]) < c["mesh"][0] * c["mesh"][1]
        for c in DOC["cases"]
    )


@pytest.mark.parametrize(
    "case", DOC["cases"], ids=lambda c: f"{c['mesh']}-{c['shape']}-{c['mapper']}"
)
def test_written_regions_equal_torch_chunk(case):
    mesh = mesh_from_shape(tuple(case["mesh"]))
    shape = tuple(case["shape"])
    pieces = case["pieces"]
    n = mesh.size
    mapper = case["mapper"]
    # the 2024 Python mappers are torch.chunk itself, unequal shards and all
    if mapper.startswith("shard2d") and len(pieces) != n and "none" != mapper.split(",")[1]:
        with pytest.raises(MeshdiagError, match="ShardTensor2dMesh: Sharding failed"):
            simulate_copy(mesh, shape, mapper, era="2024")
        return
    # a 2-D mapper that leaves devices empty (2024 only) cannot be read back by an N-D
    # composer ("ND composition requires ..."); read one device back instead
    partial_2d = mapper.startswith("shard2d") and len(pieces) != n
    sim = simulate_copy(mesh, shape, mapper, era="2024", compose="first" if partial_2d else None)
    # chunk i goes to the i-th device in row-major mesh order; the rest get nothing
    by_pos = sorted(sim.devices, key=lambda d: d.position)
    for i, d in enumerate(by_pos):
        want = pieces[i] if i < len(pieces) else None
        got = None if d.written is None else [list(r) for r in d.written]
        assert got == want, f"device {d.device} at {d.coord}"
        if want is not None:  # the bytes too, not only the ranges
            w = tuple(b - a for a, b in want)
            src = sim.source[tuple(slice(a, b) for a, b in want)]
            np.testing.assert_array_equal(sim.buffers[d.device][: src.size].reshape(w), src)
    assert sim.readback.stale_devices == ()
    if not partial_2d:
        assert sim.readback.matches_source
        np.testing.assert_array_equal(sim.readback_data, sim.source)


def test_array_split_equals_numpy():
    rng = np.random.default_rng(1234)
    for _ in range(150):
        mesh = mesh_from_shape(tuple(int(x) for x in rng.integers(1, 6, size=2)))
        rank = int(rng.integers(1, 4))
        shape = tuple(int(x) for x in rng.integers(1, 25, size=rank))
        dim = int(rng.integers(rank))
        sim = simulate_copy(mesh, shape, f"shard:{dim}", split="array-split", era="2025-03")
        want = np.array_split(sim.source, mesh.size, axis=dim)
        for d, piece in zip(sorted(sim.devices, key=lambda d: d.position), want, strict=True):
            assert d.shard_shape == piece.shape
            got = sim.buffers[d.device][: piece.size].reshape(piece.shape) if piece.size else piece
            np.testing.assert_array_equal(got, piece)
        np.testing.assert_array_equal(sim.readback_data, sim.source)
