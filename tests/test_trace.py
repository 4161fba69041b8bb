"""`meshdiag trace PATH --value NAME`: one value followed through a pass sequence.

Real every-pass dumps are made with JAX on CPU (one program, `uneven16`: a sharding
constraint on a replicated argument, and an output whose sharding only propagation sets);
JAX's own `devices_indices_map` is the oracle for the layouts reported. A hand-made MLIR pass
dump (`tests/data/trace_passes.mlir`, IR Dump Before/After sections with `loc(...)` names)
covers propagation, an axis moving between dims and a permuted mesh.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixture_modules import load

from meshdiag.cli.app import main

ROOT = Path(__file__).resolve().parent.parent
PASSES = ROOT / "tests" / "data" / "trace_passes.mlir"


def _generator():
    return load("generate")


@pytest.fixture(scope="session")
def uneven16(tmp_path_factory) -> Path:
    """A real every-pass dump of one program (16 CPU devices, about 12 s)."""
    gen = _generator()
    return gen.make_every_pass_dumps(tmp_path_factory.mktemp("trace-dumps"), ["uneven16"])[
        "uneven16"
    ]


def trace(capsys, *args) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(["trace", *map(str, args)])
    out, err = capsys.readouterr()
    return e.value.code, out, err


def trace_json(capsys, *args) -> dict:
    code, out, err = trace(capsys, *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def jax_slices(mesh_shape, axis_names, spec, shape, order=None) -> list:
    """JAX's placement: per device id, [start, stop] per dim."""
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    n = int(np.prod(mesh_shape))
    devs = np.array(jax.devices()[:n])[list(order or range(n))].reshape(mesh_shape)
    ns = NamedSharding(Mesh(devs, axis_names), PartitionSpec(*spec))
    out: list = [None] * n
    for d, idx in ns.devices_indices_map(shape).items():
        out[d.id] = [
            [s.start or 0, shape[i] if s.stop is None else s.stop] for i, s in enumerate(idx)
        ]
    return out


# -- real every-pass dumps ----------------------------------------------------------------


def test_stages_are_in_pass_order(capsys, uneven16):
    doc = trace_json(capsys, uneven16, "--value", "arg:1")
    names = [s["stage"] for s in doc["stages"]]
    assert names[0] == "module.mlir (lowered)" and names[1] == "before_optimizations"
    assert names[-1] == "cpu_after_optimizations"
    numbered = [int(n[:4]) for n in names if n[:4].isdigit()]
    assert numbered == sorted(numbered) and len(numbered) > 20
    shardy = [i for i, n in enumerate(names) if n.startswith("shardy/")]
    assert [names[i] for i in shardy] == sorted(names[i] for i in shardy)
    # the Shardy pipeline runs inside the shardy-xla pass: just before the file written after it
    after = names[shardy[-1] + 1]
    assert ".after_shardy-xla." in after
    assert names[shardy[0] - 1].startswith("0002.")
    assert [s["index"] for s in doc["stages"]] == list(range(len(names)))


def test_propagation_sets_the_output_sharding(capsys, uneven16):
    doc = trace_json(capsys, uneven16, "--value", "result:0")
    first = doc["stages"][doc["first_change"]]
    assert first["stage"] == "shardy/02.after_propagation"
    assert first["change"] == "changed" and first["how"].startswith("sharding added")
    assert all(s["status"] == "unsharded" for s in doc["stages"][: doc["first_change"]])
    assert first["gspmd"] == "{devices=[1,4,4]<=[4,4]T(1,0) last_tile_dim_replicate}"
    assert first["mesh"] == "x=4,y=4" and first["shape"] == [7, 8]
    # JAX places P(None, 'y') on the 4x4 mesh exactly so
    assert first["slices"] == jax_slices((4, 4), ("x", "y"), (None, "y"), (7, 8))
    # the partitioned stages write per-device shapes: said, and not called a change
    part = [s for s in doc["stages"] if s["local_shape"] is not None]
    assert part and all(s["local_shape"] == [7, 2] and s["shape"] == [7, 8] for s in part)
    assert all(s["change"] == "same" for s in part)
    assert all("per-device shape 7x2 after SPMD partitioning" in s["how"] for s in part)
    assert [s["index"] for s in doc["stages"] if s["change"] == "changed"] == [doc["first_change"]]


def test_constraint_propagates_to_an_op_followed_by_op_name(capsys, uneven16):
    """`%tanh.1` carries no sharding where it is named: it is followed by its op_name, lost
    in the Shardy files (which print no locations), and sharded from shardy-xla on."""
    doc = trace_json(capsys, uneven16, "--value", "%tanh.1")
    assert doc["identity"]["loc"] == "jit(uneven16)/tanh"
    by_name = {s["stage"]: s for s in doc["stages"]}
    assert by_name["before_optimizations"]["status"] == "unsharded"
    assert all(s["status"] == "lost" for n, s in by_name.items() if n.startswith("shardy/"))
    first = doc["stages"][doc["first_change"]]
    assert ".after_shardy-xla." in first["stage"]
    assert first["gspmd"] == "{devices=[4,4]<=[16]}"
    # JAX refuses 7x10 over 4x4; XLA pads to ceil tiles: JAX's 8x12 tiles, clipped to 7x10
    padded = jax_slices((4, 4), ("x", "y"), ("x", "y"), (8, 12))
    clipped = [
        [[min(a, n), min(b, n)] for (a, b), n in zip(d, (7, 10), strict=True)] for d in padded
    ]
    assert first["slices"] == clipped
    later = doc["stages"][doc["first_change"] + 1 :]
    assert not [s for s in later if s["change"] == "changed"]
    tiles = [s for s in later if s["local_shape"] is not None]
    assert tiles and all(s["local_shape"] == [2, 3] for s in tiles)  # 7x10 over 4x4, padded
    # the same op by its op_name, as inspect's metadata shows it
    assert (
        trace_json(capsys, uneven16, "--value", "jit(uneven16)/tanh")["first_change"]
        == (doc["first_change"])
    )


def test_an_argument_is_followed_across_renames(capsys, uneven16):
    """`%param` is the partitioned module's name of parameter 0 (`%a.1` before): one value."""
    doc = trace_json(capsys, uneven16, "--value", "%param")
    assert doc["identity"]["arg"] == 0 and doc["first_change"] is None
    assert all(s["status"] == "sharded" for s in doc["stages"])
    names = {s["name"] for s in doc["stages"]}
    assert {"%a.1", "%a.0", "%arg0", "%param"} <= names


def test_text_output_names_the_first_change_and_draws_it(capsys, uneven16):
    code, out, _ = trace(capsys, uneven16, "--value", "result:0")
    assert code == 0
    assert "CHANGED (first change): sharding added" in out
    assert "first change: stage" in out and "shardy/02.after_propagation" in out
    assert "[0:7, 0:2]" in out  # the picture of the layout at the first change
    assert "more stages, the same" in out
    _, full, _ = trace(capsys, uneven16, "--value", "result:0", "--all")
    assert "more stages, the same" not in full and full.count("\n") > out.count("\n")


def test_a_value_in_no_stage_is_exit_2_with_close_names(capsys, uneven16):
    code, out, err = trace(capsys, uneven16, "--value", "%tanhh.1")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "no value '%tanhh.1'" in err and "%tanh" in err


# -- a hand-made MLIR pass dump -----------------------------------------------------------


def test_propagation_in_a_pass_dump(capsys):
    doc = trace_json(capsys, PASSES, "--value", "arg:2")
    assert [s["change"] for s in doc["stages"]] == ["first", "changed", "same", "changed"]
    assert doc["first_change"] == 1
    first = doc["stages"][1]
    assert first["stage"].startswith("IR Dump After AggressivePropagationPass")
    assert first["how"].startswith("replicated→tiled")
    assert first["slices"] == jax_slices((2, 4), ("batch", "model"), ("model",), (64,))


def test_a_permuted_mesh_is_a_device_order_change(capsys):
    doc = trace_json(capsys, PASSES, "--value", "arg:2")
    last = doc["stages"][3]
    assert "device order (same tiling)" in last["how"]
    assert "mesh <batch=2,model=4>→<model=4,batch=2>" in last["how"]
    # JAX: P('model') on Mesh(devices.reshape(4, 2), ('model', 'batch'))
    assert last["slices"] == jax_slices((4, 2), ("model", "batch"), ("model",), (64,))
    assert last["differing_devices"] == [1, 2, 3, 4, 5, 6]


def test_an_axis_moving_between_dims(capsys):
    doc = trace_json(capsys, PASSES, "--value", "%arg0")
    moved = doc["stages"][2]
    assert moved["change"] == "changed"
    assert 'axis "batch" moved from dim 0 to dim 1' in moved["how"]


def test_ops_are_followed_by_loc_across_ssa_renames(capsys):
    doc = trace_json(capsys, PASSES, "--value", 'loc("dot.3")')
    assert [s["name"] for s in doc["stages"]] == [None, "%0", "%1", "%1"]
    assert doc["stages"][0]["status"] == "unsharded"
    assert doc["first_change"] == 1 and doc["stages"][2]["change"] == "same"
    # an argument's loc name finds the argument
    doc = trace_json(capsys, PASSES, "--value", "p1.1")
    assert doc["identity"]["arg"] == 1


def test_lost_track_when_several_values_fit(capsys, tmp_path):
    """A later stage with two dot_generals at loc("dot.3"): neither is picked."""
    sections = PASSES.read_text().split("\n\n\n")
    sections[2] = sections[2].replace(
        "    %2 = stablehlo.broadcast_in_dim",
        "    %9 = stablehlo.dot_general %0, %arg1, contracting_dims = [1] x [0] "
        '{sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {"model"}]>]>} : '
        "(tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32> loc(#loc3)\n"
        "    %2 = stablehlo.broadcast_in_dim",
    )
    path = tmp_path / "two.mlir"
    path.write_text("\n\n\n".join(sections))
    doc = trace_json(capsys, path, "--value", 'loc("dot.3")')
    lost = doc["stages"][2]
    assert lost["status"] == "lost" and "2 values fit (%1, %9)" in lost["matched_by"]
    assert lost["change"] == "unknown" and doc["first_change"] == 1
    # the next stage is compared with the last one the value was found in
    assert doc["stages"][3]["compared_with"] == 1
    # a name that fits two values where it is first found is refused, not guessed
    code, _, err = trace(capsys, path, "--value", "%arg1", "--module", "Sync")
    assert code == 0
    code, _, err = trace(capsys, path, "--value", 'loc("dot.3")', "--module", "nope")
    assert code == 2 and "no program matches" in err


@pytest.mark.parametrize(
    "args, message",
    [
        (["/nonexistent/dump", "--value", "arg:0"], "no such file or directory"),
        ([PASSES, "--value", "arg:0", "--module", "nope"], "no program matches --module"),
        ([PASSES, "--value", "  "], "--value is empty"),
        ([ROOT / "fixtures" / "jax" / "split.mlir", "--value", "%arg0"], "pick one with --module"),
        ([PASSES, "--value", "arg:0", "--format", "yaml"], "unknown --format"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, args, message):
    code, out, err = trace(capsys, *args)
    assert code == 2 and message in err and err.count("\n") == 1


# -- stage order ---------------------------------------------------------------------------


def test_tt_xla_stage_files_are_in_stage_order_then_timestamp():
    from meshdiag.trace.stages import classify, order_stages

    names = [
        "ttir_resnet_1700000004.mlir",
        "shlo_compiler_cleaned_resnet_1700000003.mlir",
        "shlo_resnet_1700000001.mlir",
        "vhlo_resnet_1700000000.mlir",
        "shlo_compiler_resnet_1700000002.mlir",
        "shlo_resnet_1700000009.mlir",  # a second compile of the same stage: after the first
    ]
    files = [classify(f"/d/irs/{n}", "/d") for n in names]
    (ordered,) = order_stages([f for f in files if f is not None]).values()
    assert [f.path.rsplit("/", 1)[1] for f in ordered] == [
        "vhlo_resnet_1700000000.mlir",
        "shlo_resnet_1700000001.mlir",
        "shlo_resnet_1700000009.mlir",
        "shlo_compiler_resnet_1700000002.mlir",
        "shlo_compiler_cleaned_resnet_1700000003.mlir",
        "ttir_resnet_1700000004.mlir",
    ]


def test_side_files_of_an_xla_dump_are_not_stages():
    from meshdiag.trace.stages import classify

    base = "/d/module_0001.jit_f"
    for side in (
        ".cpu_after_optimizations-buffer-assignment.txt",
        ".cpu_after_optimizations-memory-usage-report.txt",
        ".debug_options",
        ".ir-no-opt.ll",
    ):
        assert classify(base + side, "/d") is None
    assert classify("/d/module_0001.jit_f/compile_options.textproto", "/d") is None
    st = classify(base + ".cpu_after_optimizations.txt", "/d")
    assert st is not None and st.program == "module_0001.jit_f"


TT_XLA_SHLO = """module @SyncTensorsGraph.6 attributes {mhlo.num_partitions = 8 : i32} {
  func.func @main(%arg0: tensor<32x32xf32> {mhlo.sharding = "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"} loc("p0.1")) -> tensor<32x32xf32> {
    return %arg0 : tensor<32x32xf32>
  }
}
"""
TT_XLA_SET_MESH = """module @SyncTensorsGraph.6 attributes {mhlo.num_partitions = 8 : i32} {
  sdy.mesh @mesh = <["_axis_0"=4, "_axis_1"=2]>
  func.func @main(%arg0: tensor<32x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"_axis_0"}]>} loc("p0.1")) -> tensor<32x32xf32> {
    return %arg0 : tensor<32x32xf32>
  }
}
"""


def test_tt_xla_irs_show_the_distorted_mesh_stage(capsys, tmp_path):
    """The seed bug as tt-xla's stage files show it: the sharding P(None, 'model') on
    batch=2,model=4 becomes, at shlo_set_mesh_attr, the same tiling on another device order."""
    irs = tmp_path / "irs"
    irs.mkdir()
    (irs / "shlo_set_mesh_attr_g_1700000002.mlir").write_text(TT_XLA_SET_MESH)
    (irs / "shlo_g_1700000001.mlir").write_text(TT_XLA_SHLO)
    doc = trace_json(capsys, irs, "--value", "p0.1")
    assert [s["stage"] for s in doc["stages"]] == [
        "shlo_g_1700000001.mlir",
        "shlo_set_mesh_attr_g_1700000002.mlir",
    ]
    changed = doc["stages"][1]
    assert doc["first_change"] == 1 and "device order (same tiling)" in changed["how"]
    assert changed["gspmd"] == "{devices=[1,4,2]<=[8] last_tile_dim_replicate}"
    assert doc["stages"][0]["slices"] == jax_slices(
        (2, 4), ("batch", "model"), (None, "model"), (32, 32)
    )


HLO_PASS = """HloModule jit_f, entry_computation_layout={{(f32[8,16]{{1,0}})->(f32[8,16]{{1,0}}, f32[8,16]{{1,0}})}}, num_partitions=8

ENTRY %main.{n} (x.{n}: f32[8,16]) -> (f32[8,16], f32[8,16]) {{
  %x.{n} = f32[8,16]{{1,0}} parameter(0), sharding={{devices=[8,1]<=[8]}}, metadata={{op_name="x"}}
  %negate.{n} = f32[8,16]{{1,0}} negate(%x.{n}){neg}, metadata={{op_name="jit(f)/neg"}}
  ROOT %tuple.{n} = (f32[8,16]{{1,0}}, f32[8,16]{{1,0}}) tuple(%x.{n}, %negate.{n}), sharding={{{{devices=[8,1]<=[8]}}, {out1}}}
}}
"""


def test_results_of_a_tuple_root_and_renamed_hlo_ops(capsys, tmp_path):
    stages = [
        ("0000.p.after_a.before_b", dict(n=1, neg="", out1="{replicated}")),
        (
            "0001.p.after_b.before_c",
            dict(n=0, neg=", sharding={devices=[1,8]<=[8]}", out1="{devices=[1,8]<=[8]}"),
        ),
    ]
    for name, fill in stages:
        (tmp_path / f"module_0000.jit_f.{name}.txt").write_text(HLO_PASS.format(**fill))
    doc = trace_json(capsys, tmp_path, "--value", "result:1")
    assert [s["status"] for s in doc["stages"]] == ["sharded", "sharded"]
    assert doc["stages"][0]["gspmd"] == "{replicated}"
    assert doc["first_change"] == 1 and doc["stages"][1]["how"].startswith("replicated→tiled")
    assert doc["stages"][1]["slices"] == jax_slices((8,), ("i",), (None, "i"), (8, 16))
    # the op is named %negate.1 first and %negate.0 after: followed by its op_name
    doc = trace_json(capsys, tmp_path, "--value", "%negate.1")
    assert [s["status"] for s in doc["stages"]] == ["unsharded", "sharded"]
    assert doc["stages"][1]["name"] == "%negate.0"


def _mutations(data: bytes, seed: int) -> bytes:
    import random

    rng = random.Random(seed)
    kind = seed % 4
    if kind == 0:
        return data[: rng.randrange(1, len(data))]
    b = bytearray(data)
    for _ in range(rng.randrange(1, 12)):
        at = rng.randrange(len(b))
        if kind == 1:
            b[at] = rng.randrange(256)
        elif kind == 2:
            b[at:at] = rng.choice([b"{", b"}", b"(", b")", b"<", b">", b'"', b"loc(#loc", b"\n"])
        else:
            b[at : at + rng.randrange(1, 40)] = b""
    return bytes(b)


@pytest.mark.parametrize("seed", range(24))
def test_mutated_pass_dumps_never_crash(capsys, tmp_path, seed):
    """Broken dumps give a trace or a one-line error, never an internal error."""
    data = PASSES.read_bytes()
    path = tmp_path / "m.mlir"
    path.write_bytes(_mutations(data, seed))
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "a.mlir").write_bytes(_mutations(data, seed + 100))
    (tmp_path / "dir" / "b.mlir").write_bytes(data)
    for target in (path, tmp_path / "dir"):
        for value in ("arg:2", "result:0", 'loc("dot.3")', "%1", "add.5"):
            code, _, err = trace(capsys, target, "--value", value, "--format", "json")
            assert code in (0, 2), err
            assert "internal error" not in err and err.count("\n") <= 1, err


def test_module_picks_one_program_by_its_exact_name_first(capsys):
    split = ROOT / "fixtures" / "jax" / "split.mlir"
    doc = trace_json(capsys, split, "--value", "%arg0", "--module", "jit_mlp")
    assert doc["program"] == "jit_mlp"  # not also jit_mlp2
    code, _, err = trace(capsys, split, "--value", "%arg0", "--module", "mlp")
    assert code == 2 and "(jit_mlp, jit_mlp2); pick one with --module" in err


def _random_spec(rng, axes, rank):
    """A random PartitionSpec over `axes` for a tensor of `rank`: each axis on one dim or none."""
    dims: list[list[str]] = [[] for _ in range(rank)]
    for a in rng.sample(axes, len(axes)):
        d = rng.randrange(rank + 1)
        if d < rank:
            dims[d].append(a)
    return [tuple(d) if len(d) > 1 else (d[0] if d else None) for d in dims]


def _sdy(spec) -> str:
    def dim(e):
        if e is None:
            return "{}"
        names = e if isinstance(e, tuple) else (e,)
        return "{" + ", ".join(f'"{n}"' for n in names) + "}"

    return "[" + ", ".join(dim(e) for e in spec) + "]"


SECTION = """// -----// IR Dump {when} P (p) ('builtin.module' operation: @m) //----- //
module @m attributes {{mhlo.num_partitions = 8 : i32}} {{
  sdy.mesh @mesh = <["x"=2, "y"=2, "z"=2]>
  func.func @main(%arg0: tensor<8x16xf32> {{sdy.sharding = #sdy.sharding<@mesh, {spec}>}}) -> tensor<8x16xf32> {{
    return %arg0 : tensor<8x16xf32>
  }}
}}
"""


@pytest.mark.parametrize("seed", range(30))
def test_changed_exactly_when_jax_places_the_data_differently(capsys, tmp_path, seed):
    """Two sections with random specs: `changed` iff JAX's devices_indices_map differs;
    `device order` iff JAX gives the same set of slices on other devices."""
    import random

    rng = random.Random(seed)
    axes = ["x", "y", "z"]
    a, b = _random_spec(rng, axes, 2), _random_spec(rng, axes, 2)
    if seed % 5 == 0:
        b = list(a)  # some pairs are the same spec
    path = tmp_path / "p.mlir"
    path.write_text(
        SECTION.format(when="Before", spec=_sdy(a)) + SECTION.format(when="After", spec=_sdy(b))
    )
    doc = trace_json(capsys, path, "--value", "arg:0")
    ja = jax_slices((2, 2, 2), tuple(axes), a, (8, 16))
    jb = jax_slices((2, 2, 2), tuple(axes), b, (8, 16))
    assert doc["stages"][0]["slices"] == ja and doc["stages"][1]["slices"] == jb
    second = doc["stages"][1]
    assert (second["change"] == "changed") == (ja != jb), (a, b, second["how"])
    permuted = ja != jb and sorted(map(str, ja)) == sorted(map(str, jb))
    assert ("device order" in second["how"]) == permuted, (a, b, second["how"])
    assert second["differing_devices"] == [d for d in range(8) if ja[d] != jb[d]]


def test_a_tt_xla_debug_log_names_its_stages(capsys, tmp_path):
    """LOGGER_LEVEL=DEBUG prints each stage's module after `MLIR Module <stage>:`."""
    end = "------------------ END OF MLIR MODULE ------------------\n"
    log = tmp_path / "run.log"
    log.write_text(
        "2025-01-01 12:00:00.000 | DEBUG | compiling\nMLIR Module shlo:\n"
        + TT_XLA_SHLO
        + end
        + "2025-01-01 12:00:01.000 | DEBUG | next\nMLIR Module shlo_set_mesh_attr:\n"
        + TT_XLA_SET_MESH
        + end
    )
    doc = trace_json(capsys, log, "--value", "arg:0")
    assert [s["stage"] for s in doc["stages"]] == [
        "MLIR Module shlo",
        "MLIR Module shlo_set_mesh_attr",
    ]
    assert doc["first_change"] == 1 and "device order" in doc["stages"][1]["how"]
