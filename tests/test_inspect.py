"""`meshdiag inspect`: the JSON contract, text output, exit codes, stdin."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from meshdiag.cli.app import main
from meshdiag.inputs.mesh_input import parse_mesh
from meshdiag.pipeline.inspect import inspect_paths

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SEED = str(FIXTURES / "seed" / "distorted_mesh.mlir")


def run(args, capsys, stdin: bytes | None = None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    with pytest.raises(SystemExit) as e:
        main(args)
    out, err = capsys.readouterr()
    return e.value.code, out, err


def test_json_contract_on_the_seed(capsys):
    code, out, _ = run(
        ["inspect", SEED, "--format", "json", "--layouts", "--mesh", "batch=2,model=4"], capsys
    )
    assert code == 0  # findings do not change inspect's exit code
    doc = json.loads(out)
    assert doc["version"] == 1
    (f,) = doc["files"]
    assert f["path"] == SEED
    before, after = f["modules"]
    assert before["name"] == "ReplicateShardedData.6" and before["line"] == 2
    assert before["section"] == "IR Dump Before AnalyzeMeshPass (analyze-mesh)"
    assert before["partitioned"] is False
    (mesh,) = before["meshes"]
    assert mesh["name"] == "mesh" and mesh["line"] == 3
    assert mesh["axes"] == [["_axis_0", 4], ["_axis_1", 2]]
    assert mesh["device_ids"] == list(range(8))
    arg0 = before["values"][0]
    assert {k: arg0[k] for k in ("name", "line", "shape", "local_shape", "mesh", "gspmd")} == {
        "name": "%arg0",
        "line": 4,
        "shape": [32, 32],
        "local_shape": None,
        "mesh": "mesh",
        "gspmd": "{devices=[1,4,2]<=[8] last_tile_dim_replicate}",
    }
    assert arg0["sharding"] == '#sdy.sharding<@mesh, [{}, {"_axis_0"}]>'
    devs = arg0["devices"]
    assert [d["device"] for d in devs] == list(range(8))
    assert devs[3] == {
        "device": 3,
        "slices": [[0, 32], [8, 16]],
        "shard_shape": [32, 8],
        "buffer_shape": [32, 8],
        "empty": False,
    }
    assert before["diagnostics"][0]["message"] == "Mesh is not valid"
    assert after["section"] == "IR Dump After AnalyzeMeshPass Failed (analyze-mesh)"
    for fd in doc["findings"]:
        assert set(fd) == {"code", "name", "severity", "path", "line", "column", "message", "fix"}
    # the same document from the library
    lib = inspect_paths([SEED], layouts=True, mesh=None)
    assert lib["files"][0]["modules"][0]["values"][0]["devices"] == devs


def test_library_streams_findings_for_every_file(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text('func.func @f(%arg0: tensor<4xf32> {mhlo.sharding = "{devices=[2"}) {\n')
    doc = inspect_paths([str(bad), SEED])
    assert [f["path"] for f in doc["files"]] == [str(bad), SEED]
    md001 = [f for f in doc["findings"] if f["code"] == "MD001"]
    assert md001 and md001[0]["path"] == str(bad) and md001[0]["line"] == 1
    assert doc["files"][0]["modules"][0]["values"][0]["gspmd"] is None


def test_partitioned_module_has_local_shapes_and_no_layout(capsys):
    path = str(FIXTURES / "jax" / "mlp_compiled.hlo.txt")
    code, out, _ = run(["inspect", path, "-f", "json", "--layouts"], capsys)
    assert code == 0
    (m,) = json.loads(out)["files"][0]["modules"]
    assert m["partitioned"] is True and m["num_partitions"] == 8
    p0 = next(v for v in m["values"] if v["name"] == "%param")
    assert p0["shape"] is None and p0["local_shape"] == [8, 32] and p0["devices"] is None


def test_text_output(capsys):
    code, out, _ = run(["inspect", SEED, "--quiet"], capsys)
    assert code == 0
    assert "ReplicateShardedData.6" in out
    assert "IR Dump Before AnalyzeMeshPass (analyze-mesh)" in out
    assert "_axis_0=4,_axis_1=2" in out and "Mesh is not valid" in out
    assert '#sdy.sharding<@mesh, [{}, {"_axis_0"}]>' in out
    assert "{devices=[1,4,2]<=[8] last_tile_dim_replicate}" in out


def test_stdin(capsys, monkeypatch):
    data = (FIXTURES / "jax" / "mlp_gspmd.mlir").read_bytes()
    code, out, _ = run(["inspect", "-", "-f", "json"], capsys, stdin=data, monkeypatch=monkeypatch)
    assert code == 0
    (f,) = json.loads(out)["files"]
    assert f["path"] == "<stdin>" and len(f["modules"][0]["values"]) == 3


@pytest.mark.parametrize(
    "args",
    [
        ["inspect", SEED, "--format", "yaml"],
        ["inspect", SEED, "--split", "sideways"],
        ["inspect", SEED, "--no-such-option"],
        ["inspect"],
    ],
)
def test_usage_errors_exit_2(args, capsys):
    code, _, _ = run(args, capsys)
    assert code == 2


#: uneven and empty shards, and devices a sharding does not name (absent from its layout)
UNEVEN = """module @m attributes {mhlo.num_partitions = 8 : i32} {
  func.func @main(%arg0: tensor<3x5xf32> {mhlo.sharding = "{devices=[4,1]<=[4]}"}, %arg1: \
tensor<7x2xf32> {mhlo.sharding = "{devices=[4,1,2]<=[8] last_tile_dim_replicate}"}, %arg2: \
tensor<f32> {mhlo.sharding = "{replicated}"}) -> tensor<3x5xf32> {
    return %arg0 : tensor<3x5xf32>
  }
}
"""


def test_layouts_json_as_written_is_the_librarys_dicts(capsys, tmp_path):
    """`inspect --layouts -f json` formats each value's devices from its layout's arrays
    (`Layout.devices_json_text`); the library builds them as dicts (`DeviceShard.to_json`):
    the same JSON, value for value, over every fixture and a file of uneven, empty and
    absent shards, with and without a global mesh, under two split rules. (Each value's
    devices JSON is kept per layout for the values after it: every-pass fixtures repeat
    them.)"""
    (tmp_path / "uneven.mlir").write_text(UNEVEN)
    dumps = sorted(
        str(p) for p in FIXTURES.rglob("*") if p.is_file() and p.suffix in (".mlir", ".txt")
    ) + [str(tmp_path / "uneven.mlir")]
    for mesh, split in ((None, "xla"), ("batch=2,model=4", "array-split")):
        extra = ["--split", split] + (["--mesh", mesh] if mesh else [])
        code, out, _ = run(
            ["inspect", *dumps, "-j", "1", "-f", "json", "--layouts", *extra], capsys
        )
        assert code in (0, 1)
        written = json.loads(out)["files"]
        lib = inspect_paths(
            dumps, layouts=True, mesh=parse_mesh(mesh) if mesh else None, split=split
        )
        assert written == lib["files"]
        devices = [
            d
            for f in written
            for m in f["modules"]
            for v in m["values"]
            for d in v["devices"] or ()
        ]
        assert any(d["empty"] and d["slices"] for d in devices)  # an empty shard
        assert any(d["slices"] is None for d in devices)  # a device the sharding leaves out
        assert any(d["slices"] == [] for d in devices)  # a scalar's
