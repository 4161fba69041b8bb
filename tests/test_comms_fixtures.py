"""The collective scan on the real dumps `fixtures/generate_comms.py` made with JAX on CPU:
every kind appears, bytes follow the hand formulas, per-device shapes are XLA's own (JAX's
shard shapes of the same program), XLA's mesh-form groups equal its explicit groups for the
same axis, and Shardy's collectives measure what XLA's do."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixture_modules import load

from meshdiag.comms.axes import refs_text
from meshdiag.comms.report import measure_file
from meshdiag.comms.scan import scan_path
from meshdiag.inputs.mesh_input import parse_mesh

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
XLA = FIXTURES / "comms" / "xla"
SHARDY = FIXTURES / "comms" / "shardy" / "reshard"
MESH = parse_mesh("batch=2,model=4")


def rows(path: Path) -> dict:
    f = scan_path(str(path))
    assert f.problems == []
    (m,) = measure_file(f, MESH).modules
    return {r.collective.name: r for r in m.rows}


def test_every_kind_appears():
    kinds = {r.collective.kind for p in XLA.glob("*.txt") for r in rows(p).values()}
    assert {
        "all-gather",
        "all-reduce",
        "reduce-scatter",
        "all-to-all",
        "collective-permute",
    } <= kinds
    sdy = {r.collective.op for r in rows(SHARDY / "02.after_reshard_to_collectives.mlir").values()}
    assert sdy == {
        "sdy.all_gather",
        "sdy.all_slice",
        "sdy.all_to_all",
        "sdy.collective_permute",
        "sdy.all_reduce",
    }
    before = rows(SHARDY / "01.after_insert_explicit_reshards.mlir")
    assert {r.collective.op for r in before.values()} == {"sdy.reshard", "sdy.all_reduce"}


def test_shard_map_bytes_by_hand():
    """x: f32[16,32] on P('batch','model') is f32[8,8] per device (256 B); y: bf16[64,8]
    is [32,2] per device, promoted to f32 by XLA for the reduction."""
    r = rows(XLA / "shard_map.after_optimizations.txt")
    local = 8 * 8 * 4
    expect = {  # name: (kind, axes, group size, bytes per device)
        "%psum.14": ("all-reduce", "model", 4, 2 * 3 * local // 4),
        "%psum.15": ("all-reduce", "batch,model", 8, 2 * 7 * local // 8),
        "%all_gather.3": ("all-gather", "batch", 2, (2 * local) // 2),  # result [16,8]
        "%reduce_scatter.8": ("reduce-scatter", "model", 4, 3 * (8 * 2 * 4)),  # result [8,2]
        "%all-to-all": ("all-to-all", "model", 4, 3 * local // 4),
    }
    for name, (kind, axes, n, nbytes) in expect.items():
        got = r[name]
        assert (got.collective.kind, refs_text(got.axes), got.group_size, got.per_device) == (
            kind,
            axes,
            n,
            nbytes,
        ), name
    cp = r["%ppermute.3"]  # a ring over model: every device sends and receives its block
    assert (cp.traffic.sent, cp.traffic.received, cp.traffic.total) == (local, local, 8 * local)


def test_reshard_bytes_by_hand():
    r = rows(XLA / "reshard.after_optimizations.txt")
    assert r["%all-gather"].per_device == 8 * 32 * 4 * 3 // 4  # gathered over model
    assert r["%all-reduce"].per_device == 16 * 64 * 4 * 2 * 3 // 4  # contraction over model
    assert r["%all-gather.1"].per_device == 128 * 128 * 4 * 3 // 4
    assert r["%all-gather.2"].per_device == 256 * 128 * 4 // 2  # then over batch
    assert r["%all-gather.2"].collective.gathered == 8  # the tensor is now whole
    cp = r["%collective-permute"]  # 6 of its 8 pairs move f32[1,2,32]
    assert cp.traffic.total == 6 * 1 * 2 * 32 * 4
    assert [x.per_device for x in r.values()] == sorted(
        (x.per_device for x in r.values()), reverse=True
    )
    # the source line JAX recorded for the op (stack frame tables): the generator's line
    src = r["%all-gather.2"].collective.source
    assert src is not None and src.split(" ")[0].endswith(
        "generate_comms.py:" + _line_of("big * 3")
    )


def _line_of(text: str) -> str:
    lines = (FIXTURES / "generate_comms.py").read_text().splitlines()
    return str(next(i for i, line in enumerate(lines, 1) if text in line))


def test_mesh_form_groups_equal_explicit_groups():
    """XLA prints SPMD collectives' groups in mesh form and shard_map's explicitly: the same
    axis must give the same device groups."""
    spmd = rows(XLA / "reshard.after_optimizations.txt")
    explicit = rows(XLA / "shard_map.after_optimizations.txt")
    assert spmd["%all-reduce"].collective.groups.form == "mesh"
    assert "device_ids=" in spmd["%all-reduce"].collective.groups.text
    assert explicit["%psum.14"].collective.groups.form == "list"
    model = set(map(frozenset, explicit["%psum.14"].groups))
    batch = set(map(frozenset, explicit["%all_gather.3"].groups))
    for name in ("%all-reduce", "%all-gather", "%all-to-all.2", "%all-to-all.3"):
        assert set(map(frozenset, spmd[name].groups)) == model, name
    assert set(map(frozenset, spmd["%all-gather.2"].groups)) == batch


def test_shardy_measures_what_xla_does():
    """Shardy's collectives carry global types; their local shapes (from out_sharding) are the
    per-device shapes XLA's partitioned HLO has for the same reshards."""
    sdy = rows(SHARDY / "02.after_reshard_to_collectives.mlir")
    hlo = rows(XLA / "reshard.after_optimizations.txt")
    assert sdy["%4"].collective.results[0][0] == hlo["%all-gather"].collective.results[0][0]
    assert sdy["%4"].per_device == hlo["%all-gather"].per_device
    assert sdy["%6"].per_device == hlo["%all-reduce"].per_device
    assert refs_text(sdy["%6"].axes) == refs_text(hlo["%all-reduce"].axes) == "model"
    # the full gather of `big`: one 8-way gather in Shardy, two steps (4 then 2) in XLA
    assert sdy["%20"].collective.gathered == 8 == hlo["%all-gather.2"].collective.gathered


def test_off_mesh_groups_found():
    r = rows(XLA / "index_groups.after_optimizations.txt")
    (psum,) = r.values()
    assert psum.off_mesh and psum.axes is None
    assert psum.groups == ((0, 3), (1, 2), (4, 7), (5, 6))
    for p in XLA.glob("*.txt"):
        if p.name.startswith("index_groups"):
            continue
        assert not any(x.off_mesh for x in rows(p).values()), p


def _generator():
    return load("generate_comms")


@pytest.mark.parametrize("case", ["shard_map", "reshard"])
def test_result_shapes_are_jax_shard_shapes(case):
    """The per-device shapes of collectives that produce a program output equal the shard
    shape JAX gives that output (its compiled output shardings on the same mesh)."""
    import jax
    import numpy as np
    from jax.sharding import Mesh

    gen = _generator()
    c = gen.CASES[case]
    mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("batch", "model"))
    fn, specs = getattr(gen, c.fn)(mesh)
    args = [jax.ShapeDtypeStruct(s, dt, sharding=gen._ns(mesh, *spec)) for s, dt, spec in specs]
    compiled = jax.jit(fn).lower(*args).compile()
    outs = jax.eval_shape(fn, *args)
    shard = [
        tuple(sh.shard_shape(o.shape))
        for sh, o in zip(compiled.output_shardings, jax.tree.leaves(outs), strict=True)
    ]
    r = rows(XLA / f"{case}.after_optimizations.txt")
    produced = {  # collective → the output it produces (directly, or after a local convert)
        "shard_map": {"%psum.14": 0, "%all_gather.3": 1, "%reduce_scatter.8": 2, "%ppermute.3": 4},
        "reshard": {"%all-gather": 0, "%all-reduce": 1, "%all-gather.2": 4},
    }[case]
    for name, out in produced.items():
        assert r[name].collective.results[0][0] == shard[out], (name, shard[out])
