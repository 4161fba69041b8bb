"""simulate-copy: the seed scenario (tt-metal PR #18833), TTNN golden cases, symbolic mode,
bad input, MD105/MD106. Expected values come from the reference notes (ttnn_uneven.md §1.6,
§6) and from first principles (arange data: every element says where it came from)."""

from __future__ import annotations

import io
import json
import math
import time

import numpy as np
import pytest

from meshdiag.checks.context import CheckContext
from meshdiag.checks.md105_uneven_shard import check_module, uneven_findings
from meshdiag.checks.registry import get_rule, module_checks
from meshdiag.cli.app import main
from meshdiag.errors import MeshdiagError
from meshdiag.ir.model import ModuleReport, Value
from meshdiag.model.mesh import mesh_from_shape
from meshdiag.model.targets import preset_mesh as preset
from meshdiag.notation.gspmd import parse_gspmd
from meshdiag.simulate.copy import simulate_copy
from meshdiag.simulate.regions import region_sum

SEED = (1, 7, 32, 32)
T3K = preset("t3k")
LINE8 = mesh_from_shape((1, 8))


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def ranges(sim, device: int):
    d = sim.device(device)
    return None if d.written is None else [list(r) for r in d.written]


# -- the seed scenario -------------------------------------------------------------------------


@pytest.mark.parametrize("mesh", [LINE8, T3K], ids=["1x8", "t3k"])
def test_seed_by_value_reads_back_device_7_stale(mesh):
    sim = simulate_copy(mesh, SEED, "shard:1", dest="uniform:1,1,32,32", write="by-value")
    assert [d.stale for d in sim.devices] == [False] * 7 + [True]
    assert sim.device(7).written is None and sim.device(7).dest_shape == (1, 1, 32, 32)
    assert sim.readback.shape == (1, 8, 32, 32)
    assert not sim.readback.matches_source
    assert sim.readback.stale_devices == (7,)
    codes = [f.code for f in sim.findings]
    assert codes == ["MD106", "MD105"]
    md106 = sim.findings[0]
    assert md106.severity == "error" and "device 7" in md106.message
    assert "device 7: no buffer (or shape (1,0,32,32))" in md106.fix
    assert "by reference" in md106.fix
    # the data: the first 7 slices are the source, the 8th is the NaN sentinel
    rb = sim.readback_data
    np.testing.assert_array_equal(rb[:, :7], sim.source)
    assert np.isnan(rb[:, 7]).all()
    # the piece report says where the wrong elements came from
    (piece,) = sim.readback.differing
    assert piece.device == 7 and piece.kind == "stale"
    assert piece.region == ((0, 1), (7, 8), (0, 32), (0, 32))


@pytest.mark.parametrize("mesh", [LINE8, T3K], ids=["1x8", "t3k"])
def test_seed_by_reference_reads_back_the_source(mesh):
    sim = simulate_copy(mesh, SEED, "shard:1", dest="uniform:1,1,32,32", write="by-reference")
    assert not any(d.stale for d in sim.devices)
    assert sim.device(7).dest_shape is None
    assert sim.readback.shape == SEED and sim.readback.matches_source
    np.testing.assert_array_equal(sim.readback_data, sim.source)
    assert [f.code for f in sim.findings] == ["MD105"]  # still uneven, no longer wrong


def test_seed_t3k_places_chunks_row_major():
    sim = simulate_copy(T3K, SEED, "shard:1", dest="uniform:1,1,32,32", write="by-value")
    # device 7 sits at (1,3): ShardTensorToMesh fills (0,0),(0,1),...,(1,2)
    assert sim.device(7).coord == (1, 3)
    for i in range(7):
        assert ranges(sim, i) == [[0, 1], [i, i + 1], [0, 32], [0, 32]]
        np.testing.assert_array_equal(
            sim.buffers[i].reshape(1, 1, 32, 32), sim.source[:, i : i + 1]
        )


def test_stale_previous_fills_a_recognisable_pattern():
    sim = simulate_copy(
        LINE8, SEED, "shard:1", dest="uniform:1,1,32,32", write="by-value", stale="previous"
    )
    tail = sim.readback_data[0, 7].reshape(-1)
    assert (tail < 0).all()
    # the previous tensor counts -1, -2, ... over the device buffers in id order
    assert tail[0] == -(7 * 1024 + 1) and tail[-1] == -(8 * 1024)


@pytest.mark.parametrize("mesh", ["1x8", "t3k"])
@pytest.mark.parametrize("write", ["by-value", "by-reference"])
def test_seed_cli_json(capsys, mesh, write):
    rc, out, err = run_cli(
        capsys, "simulate-copy", "--mesh", mesh, "--shape", "1,7,32,32", "--mapper", "shard:1",
        "--dest", "uniform:1,1,32,32", "--write", write, "--format", "json",
    )  # fmt: skip
    assert rc == 0, err
    doc = json.loads(out)
    assert list(doc) == [
        "version", "mesh", "source_shape", "mapper", "split", "dest", "write", "devices",
        "readback", "findings",
    ]  # fmt: skip
    assert doc["version"] == 1 and doc["mesh"] == {"shape": [1, 8] if mesh == "1x8" else [2, 4]}
    assert doc["source_shape"] == [1, 7, 32, 32] and doc["mapper"] == "shard:1"
    assert doc["split"] == "chunk" and doc["dest"] == "uniform:1,1,32,32" and doc["write"] == write
    devs = doc["devices"]
    assert [d["device"] for d in devs] == list(range(8))
    assert all(list(d) == ["device", "coord", "dest_shape", "written", "stale"] for d in devs)
    assert devs[7]["coord"] == ([0, 7] if mesh == "1x8" else [1, 3])
    assert devs[7]["written"] is None
    assert devs[3]["written"] == [[0, 1], [3, 4], [0, 32], [0, 32]]
    assert list(doc["readback"]) == ["shape", "matches_source", "stale_devices"]
    if write == "by-value":
        assert devs[7] | {"coord": None} == {
            "device": 7, "coord": None, "dest_shape": [1, 1, 32, 32], "written": None, "stale": True,
        }  # fmt: skip
        assert doc["readback"] == {
            "shape": [1, 8, 32, 32], "matches_source": False, "stale_devices": [7],
        }  # fmt: skip
        assert doc["findings"][0]["code"] == "MD106"
    else:
        assert devs[7]["dest_shape"] is None and not devs[7]["stale"]
        assert doc["readback"] == {
            "shape": [1, 7, 32, 32], "matches_source": True, "stale_devices": [],
        }  # fmt: skip
        assert [f["code"] for f in doc["findings"]] == ["MD105"]


def test_text_rendering_shows_stale_device_and_provenance():
    from rich.console import Console

    from meshdiag.report.simulate_text import SimulationPicture, cell_lines, readback_lines

    sim = simulate_copy(T3K, SEED, "shard:1", dest="uniform:1,1,32,32", write="by-value")
    assert cell_lines(sim.device(7), SEED)[:3] == [
        "(1,3) dev 7", "spec (1,1,32,32)", "STALE: never written, read back",
    ]  # fmt: skip
    assert cell_lines(sim.device(1), SEED)[2:] == ["wrote [:,1,:,:]", "1024..2047 sum 1572352"]
    lines = readback_lines(sim)
    assert "(1,8,32,32)" in lines[0] and "DIFFERS" in lines[0]
    assert lines[1] == "  [:,7,:,:] came from device 7's stale buffer (never written)"
    buf = io.StringIO()
    Console(width=160, file=buf, color_system=None).print(SimulationPicture(sim))
    text = buf.getvalue()
    assert "STALE" in text and "MD106" in text and "fix:" in text


# -- TTNN golden cases (ttnn_uneven.md §6, T3K unless stated) ---------------------------------


def shard_shapes(sim):
    return {d.device: d.shard_shape for d in sim.devices}


def test_g1_even_shard_no_findings():
    sim = simulate_copy(T3K, (1, 8, 32, 32), "shard:1", dest="uniform:1,1,32,32", write="by-value")
    assert set(shard_shapes(sim).values()) == {(1, 1, 32, 32)}
    assert sim.findings == () and sim.readback.matches_source


def test_g3_twelve_over_eight_leaves_two_devices_empty():
    sim = simulate_copy(T3K, (1, 12, 32, 32), "shard:1")
    shapes = shard_shapes(sim)
    assert [shapes[i] for i in range(6)] == [(1, 2, 32, 32)] * 6
    assert shapes[6] is None and shapes[7] is None
    assert [sim.device(i).coord for i in (6, 7)] == [(1, 2), (1, 3)]
    (f,) = sim.findings
    assert f.code == "MD105" and "devices 6,7 hold nothing" in f.message
    assert sim.readback.matches_source


def test_g4_nine_over_eight_by_era():
    with pytest.raises(MeshdiagError, match=r"Shard shape mismatch: expected Shape\(\[1, 2, 32, 32\]\) but got Shape\(\[1, 1, 32, 32\]\)"):  # fmt: skip
        simulate_copy(T3K, (1, 9, 32, 32), "shard:1")
    with pytest.raises(MeshdiagError, match="All tensor shards must have the same tensor spec"):
        simulate_copy(T3K, (1, 9, 32, 32), "shard:1", era="2025-05")
    sim = simulate_copy(T3K, (1, 9, 32, 32), "shard:1", era="2025-03")
    shapes = shard_shapes(sim)
    assert [shapes[i] for i in range(5)] == [(1, 2, 32, 32)] * 4 + [(1, 1, 32, 32)]
    assert sim.device(4).coord == (1, 0)
    assert all(shapes[i] is None for i in (5, 6, 7))
    (f,) = sim.findings
    assert (
        "device 4 holds a short chunk of 1" in f.message and "devices 5-7 hold nothing" in f.message
    )
    assert sim.readback.matches_source


def test_spec_mismatch_names_the_chunks_of_the_uneven_dimension():
    """Two sharded dims, the first even: the message gives the uneven dim's own chunks
    (10 over 4 is 3,3,3,1), not those of the dim before it."""
    with pytest.raises(
        MeshdiagError, match=r"dimension 2 of size 10 over 4 devices gives chunks 3,3,3,1\)"
    ):
        simulate_copy(T3K, (1, 8, 10, 32), "placements:S1,S2")


def test_g5_thirteen_over_eight():
    with pytest.raises(MeshdiagError, match="Shard shape mismatch"):
        simulate_copy(T3K, (1, 13, 32, 32), "shard:1")
    sim = simulate_copy(T3K, (1, 13, 32, 32), "shard:1", era="2025-03")
    shapes = shard_shapes(sim)
    assert [shapes[i][1] for i in range(7)] == [2] * 6 + [1]
    assert shapes[7] is None and sim.device(7).coord == (1, 3)


def test_g6_nd_chunk_count_error():
    with pytest.raises(
        MeshdiagError,
        match="ND sharding requires the number of chunks 6 to match the mesh dimension size 8",
    ):
        simulate_copy(T3K, (1, 2, 3, 3), "placements:S1,S2")
    with pytest.raises(MeshdiagError, match="ShardTensorTo2dMesh: Sharding failed"):
        simulate_copy(T3K, (1, 2, 3, 3), "placements:S1,S2", era="2025-03")
    with pytest.raises(MeshdiagError, match=r"Got 6 shards but expected 8 \(2 rows \* 4 cols\)"):
        simulate_copy(T3K, (1, 2, 3, 3), "shard2d:1,2", era="2024")


def test_g7_submesh_2x3_on_t3k():
    sim = simulate_copy(T3K, (7, 3, 32, 32), "shard2d:none,1@2x3")
    by_coord = {d.coord: d for d in sim.devices}
    for r in range(2):
        for c in range(3):
            assert by_coord[(r, c)].written == ((0, 7), (c, c + 1), (0, 32), (0, 32))
        assert by_coord[(r, 3)].written is None
    assert sim.findings == ()  # empty by submesh, not uneven
    assert sim.readback.composer == "concat2d:none,1@2x3"
    assert sim.readback.shape == (7, 3, 32, 32) and sim.readback.matches_source
    np.testing.assert_array_equal(sim.readback_data, sim.source)


def test_g8_replicate():
    sim = simulate_copy(T3K, (1, 1, 32, 32), "replicate")
    assert all(d.written == ((0, 1), (0, 1), (0, 32), (0, 32)) for d in sim.devices)
    assert sim.readback.composer == "first" and sim.readback.matches_source


def test_g9_g10_width_sharding_on_1x8():
    sim = simulate_copy(LINE8, (1, 1, 32, 48), "shard2d:none,3")
    assert {d.shard_shape for d in sim.devices} == {(1, 1, 32, 6)}
    sim = simulate_copy(LINE8, (1, 1, 32, 256), "shard2d:none,3")
    assert {d.shard_shape for d in sim.devices} == {(1, 1, 32, 32)}
    assert sim.findings == ()


def test_g11_n300_replicate_and_shard():
    sim = simulate_copy(preset("n300"), (1, 1, 32, 64), "placements:R,S3")
    assert sim.device(0).written[3] == (0, 32) and sim.device(1).written[3] == (32, 64)
    assert sim.readback.matches_source


@pytest.mark.parametrize(("n", "k", "sizes"), [(13, 6, [3, 3, 3, 3, 1]), (10, 3, [4, 4, 2])])
def test_g12_g13_partition_chunks(n, k, sizes):
    sim = simulate_copy(mesh_from_shape((k,)), (n,), "shard:0", era="2025-03")
    got = [d.shard_shape[0] for d in sim.devices if d.written is not None]
    assert got == sizes
    np.testing.assert_array_equal(sim.readback_data, np.arange(n, dtype=np.float32))


# -- other behaviour -----------------------------------------------------------------------


def test_spec_larger_than_shard_is_reinterpreted():
    sim = simulate_copy(
        T3K, (1, 9, 32, 32), "shard:1", era="2025-03", dest="uniform:1,2,32,32", write="by-value"
    )
    assert sim.device(4).mismatched and not sim.device(4).stale
    assert sim.readback.shape == (1, 16, 32, 32)
    assert sim.readback.stale_devices == (5, 6, 7)
    md106 = [f for f in sim.findings if f.code == "MD106"]
    assert len(md106) == 2 and "device 4: spec (1,2,32,32), shard (1,1,32,32)" in md106[1].message
    rb = sim.readback_data
    np.testing.assert_array_equal(rb[:, :9], sim.source)  # device 4's one row lands at row 8
    assert np.isnan(rb[:, 9:]).all()


def test_shard_larger_than_buffer_is_refused():
    with pytest.raises(MeshdiagError, match="does not fit the destination buffer"):
        simulate_copy(T3K, (1, 16, 32, 32), "shard:1", dest="uniform:1,1,32,32")


def test_per_device_specs_file(tmp_path):
    specs = [[1, 1, 32, 32]] * 7 + [None]
    p = tmp_path / "specs.json"
    p.write_text(json.dumps(specs))
    sim = simulate_copy(T3K, SEED, "shard:1", dest=f"per-device:{p}", write="by-value")
    assert sim.readback.matches_source and not any(d.stale for d in sim.devices)
    t = tmp_path / "specs.toml"
    t.write_text("devices = [" + ", ".join(["[1,1,32,32]"] * 8) + "]\n")
    sim = simulate_copy(T3K, SEED, "shard:1", dest=f"per-device:{t}", write="by-value")
    assert sim.readback.stale_devices == (7,)
    with pytest.raises(MeshdiagError, match="list 7 devices; the mesh has 8"):
        p.write_text(json.dumps(specs[:7]))
        simulate_copy(T3K, SEED, "shard:1", dest=f"per-device:{p}")


def test_compiler_notation_mapper():
    gspmd = "{devices=[1,8,1,1]<=[8]}"
    sim = simulate_copy(LINE8, SEED, gspmd)  # xla split: device 7 holds an empty tile
    assert sim.split == "xla" and sim.device(7).written == ((0, 1), (7, 7), (0, 32), (0, 32))
    assert sim.readback.composer == "tiles" and sim.readback.matches_source
    sim = simulate_copy(
        LINE8, SEED, gspmd, split="chunk", dest="uniform:1,1,32,32", write="by-value"
    )
    assert sim.readback.shape == (1, 8, 32, 32) and sim.readback.stale_devices == (7,)
    # a transposed assignment: tile j on device 2j mod 7 ... read back by tile, not by device
    sim = simulate_copy(T3K, (8, 4), "{devices=[4,2]<=[2,4]T(1,0)}")
    assert sim.device(1).written == ((2, 4), (0, 2))
    assert sim.readback.matches_source


def test_symbolic_mode_is_instant_for_huge_tensors():
    big = (100_000_000_000, 100_000_000_000)
    t0 = time.perf_counter()
    sim = simulate_copy(T3K, big, "shard:0")
    assert time.perf_counter() - t0 < 1.0
    assert sim.symbolic and sim.source is None and sim.readback.matches_source
    assert sim.device(7).written == ((87_500_000_000, 100_000_000_000), (0, 100_000_000_000))
    sim = simulate_copy(T3K, (7, 10**11), "shard:0", dest=f"uniform:1,{10**11}", write="by-value")
    assert sim.symbolic and sim.readback.shape == (8, 10**11)
    assert sim.readback.stale_devices == (7,) and sim.findings[0].code == "MD106"


def test_symbolic_and_data_modes_agree():
    rng = np.random.default_rng(7)
    for _ in range(30):
        mesh = mesh_from_shape(tuple(int(x) for x in rng.integers(1, 5, size=2)))
        shape = tuple(int(x) for x in rng.integers(1, 12, size=int(rng.integers(1, 4))))
        mapper = f"shard:{int(rng.integers(len(shape)))}"
        kw = dict(era="2025-03", write=str(rng.choice(["by-value", "by-reference"])))
        data = simulate_copy(mesh, shape, mapper, **kw)
        sym = simulate_copy(mesh, shape, mapper, symbolic=True, **kw)
        assert data.to_json() == sym.to_json()
        for a, b in zip(data.devices, sym.devices, strict=True):
            assert (a.first, a.last, a.checksum) == (b.first, b.last, b.checksum)
            if a.written is not None:
                src = data.source[tuple(slice(x, y) for x, y in a.written)]
                assert a.checksum == float(src.sum(dtype=np.float64))
        assert data.readback.matches_source == (
            data.readback_data.shape == data.source.shape
            and np.array_equal(data.readback_data, data.source)
        )


def test_region_sum_matches_numpy():
    shape = (3, 5, 7)
    a = np.arange(math.prod(shape)).reshape(shape)
    region = ((1, 3), (2, 5), (0, 6))
    assert region_sum(shape, region) == int(a[1:3, 2:5, 0:6].sum())


# -- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--mesh", "t3k", "--mapper", "shard:9"], "names tensor dimension 9"),
        (["--mesh", "t3k", "--mapper", "shard:1", "--dest", "uniform:banana"], "banana"),
        (["--mesh", "0x8", "--mapper", "shard:1"], "size 0"),
        (["--mesh", "t3k", "--mapper", "shard:1", "--compose", "concat:7"], "dimension 7"),
        (["--mesh", "t3k", "--mapper", "shard2d:1"], "2 tensor dims"),
        (["--mesh", "t3k", "--mapper", "shard:1", "--write", "sideways"], "write mode"),
    ],
)
def test_bad_input_is_one_line_exit_2(capsys, args, needle):
    rc, out, err = run_cli(capsys, "simulate-copy", "--shape", "1,7,32,32", *args)
    assert rc == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("meshdiag: error:"), err
    assert needle in lines[0] and "Traceback" not in err


# -- MD105 as a pure function and a module check ------------------------------------------


def test_uneven_findings_from_gspmd():
    hlo = parse_gspmd("{devices=[8,1]<=[8]}")
    (f,) = uneven_findings(hlo, (7, 4), "chunk", where={"path": "x.mlir", "line": 3})
    assert f.code == "MD105" and f.severity == "warning" and f.line == 3
    assert "device 7 holds nothing" in f.message
    (f,) = uneven_findings(hlo, (7, 4), "xla", where={})
    assert "device 7 holds only padding" in f.message
    (f,) = uneven_findings(hlo, (9, 4), "array-split", where={})
    assert "device 0 holds 2" in f.message and "devices 1-7 hold 1" in f.message
    (f,) = uneven_findings(hlo, (9, 4), "even", where={})
    assert "rejects" in f.message
    assert uneven_findings(hlo, (16, 4), "chunk", where={}) == []
    # transposed assignment: shard index 3 of dim 1 lives on devices 3 and 7... named by id
    hlo = parse_gspmd("{devices=[2,4]<=[4,2]T(1,0)}")
    (f,) = uneven_findings(hlo, (4, 3), "chunk", where={})
    assert "devices 6,7 hold nothing" in f.message


def test_md105_module_check_registered_and_fires():
    assert "MD105" in module_checks()
    rule = get_rule("MD105")
    assert rule.what and rule.why and rule.fix and rule.example
    rule = get_rule("MD106")
    assert rule.severity == "error" and rule.what and rule.why and rule.fix and rule.example
    hlo = parse_gspmd("{devices=[1,8]<=[8]}")
    mod = ModuleReport(name="m", line=1)
    mod.values = [
        Value("%arg0", 2, 20, "{devices=[1,8]<=[8]}", "gspmd", shape=(4, 7), hlo=hlo),
        Value("%arg1", 3, 20, "{devices=[1,8]<=[8]}", "gspmd", shape=(4, 16), hlo=hlo),
        Value("%arg2", 4, 20, "{devices=[1,8]<=[8]}", "gspmd", shape=None, hlo=hlo),
    ]
    out = check_module(mod, CheckContext(path="d.mlir", split="chunk"))
    assert [(f.code, f.path, f.line, f.column) for f in out] == [("MD105", "d.mlir", 2, 20)]
    assert out[0].message.startswith("%arg0: dimension 1 (size 7)")
    mod.partitioned = True
    assert check_module(mod, CheckContext(path="d.mlir")) == []


def test_block_arange_equals_numpy_arange_past_float32_exact_integers():
    from meshdiag.simulate.data import arange_f32

    for n in (0, 1, 5, (1 << 16) + 3, (1 << 25) + 12345):  # 2**24 is float32's last exact int
        np.testing.assert_array_equal(arange_f32(n), np.arange(n, dtype=np.float32))
