"""`meshdiag layout` reports MD105 for uneven dims, naming the devices left short or empty."""

import json
import subprocess
import sys


def layout_json(*args: str) -> dict:
    r = subprocess.run(
        [sys.executable, "-m", "meshdiag", "layout", *args, "--format", "json"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_uneven_chunk_split_names_empty_devices():
    doc = layout_json(
        "P(None, 'model')", "--mesh", "batch=2,model=4", "--shape", "4,3", "--split", "chunk"
    )
    (f,) = doc["findings"]
    assert f["code"] == "MD105" and f["severity"] == "warning"
    assert "devices 3,7 hold nothing" in f["message"]
    empty = [d["device"] for d in doc["devices"] if d["empty"]]
    assert empty == [3, 7]


def test_divisible_shape_has_no_findings():
    doc = layout_json("P(None, 'model')", "--mesh", "batch=2,model=4", "--shape", "4,8")
    assert doc["findings"] == []


def test_target_checks_the_mesh_in_layout_and_simulate_copy():
    doc = layout_json("P('x')", "--mesh", "x=4,y=2", "--shape", "8", "--target", "tt-mlir")
    assert [f["code"] for f in doc["findings"]] == ["MD103"]
    assert "2x4" in doc["findings"][0]["fix"]
    r = subprocess.run(
        [sys.executable, "-m", "meshdiag", "simulate-copy", "--mesh", "2x2", "--shape", "8",
         "--mapper", "shard:0", "--target", "t3k", "--format", "json"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert [f["code"] for f in json.loads(r.stdout)["findings"]] == ["MD104"]
