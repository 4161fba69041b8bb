"""Tiny inputs on the largest allowed mesh: every command finishes in seconds with bounded
memory, or refuses before the work with a one-line error.

A 250-byte dump can declare a mesh of MAX_DEVICES (1024 x 1024) devices. Each command runs in
a subprocess started by a small wrapper process, which reports the command's wall time and
peak resident memory (`getrusage(RUSAGE_CHILDREN).ru_maxrss` of the wrapper: only the command
is its child). The bounds are generous enough for a loaded 2-core CI machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from meshdiag.limits import MAX_DEVICES, MAX_SIMULATED_DEVICES

SECONDS = 20.0
MAX_RSS_MB = 500
SIDE = 1024
assert SIDE * SIDE == MAX_DEVICES  # the largest allowed mesh (the default limit)

_WRAPPER = textwrap.dedent(
    """
    import json, resource, subprocess, sys, time
    out = open(sys.argv[1], "wb")
    t = time.monotonic()
    p = subprocess.run(sys.argv[2:], stdout=out, stderr=subprocess.PIPE)
    took = time.monotonic() - t
    rss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
    print(json.dumps({"rc": p.returncode, "seconds": took, "rss_mb": rss_kb / 1024,
                      "stderr": p.stderr.decode("utf-8", "replace")}))
    """
)


def run_measured(tmp_path, *args: str) -> tuple[dict, bytes]:
    """(rc, seconds, rss_mb, stderr) of `meshdiag ARGS`, and its stdout."""
    out = tmp_path / "stdout"
    wrapper = subprocess.run(
        [sys.executable, "-c", _WRAPPER, str(out), sys.executable, "-m", "meshdiag", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    )
    return json.loads(wrapper.stdout), out.read_bytes()


def assert_bounded(result: dict) -> None:
    assert result["seconds"] < SECONDS, result
    assert result["rss_mb"] <= MAX_RSS_MB, result


def _mlir(specs: list[str]) -> str:
    args = ", ".join(
        f"%arg{i}: tensor<1024x1024xf32> {{sdy.sharding = #sdy.sharding<@mesh, {s}>}}"
        for i, s in enumerate(specs)
    )
    return (
        "module @m {\n"
        f'  sdy.mesh @mesh = <["x"={SIDE}, "y"={SIDE}]>\n'
        f"  func.func @main({args}) -> tensor<1024x1024xf32> {{\n"
        "    return %arg0 : tensor<1024x1024xf32>\n  }\n}\n"
    )


@pytest.fixture
def tiny_dump(tmp_path):
    path = tmp_path / "tiny.mlir"
    path.write_text(_mlir(['[{"x"}, {"y"}]']))
    assert path.stat().st_size < 300
    return path


@pytest.fixture
def distinct_dump(tmp_path):
    """Eight distinct shardings on the million-device mesh (eight layouts, MD105 findings)."""
    specs = ['[{"x"}, {"y"}]', '[{"y"}, {"x"}]', '[{"x","y"}, {}]', '[{}, {"x","y"}]']
    specs += ['[{"y","x"}, {}]', '[{}, {"y","x"}]', '[{"x"}, {}]', '[{}, {"y"}]']
    path = tmp_path / "distinct.mlir"
    path.write_text(_mlir(specs))
    return path


SHARDING = f"{{devices=[{SIDE},{SIDE}]<=[{MAX_DEVICES}]}}"


def test_layout_text_is_a_truncated_table(tmp_path):
    result, out = run_measured(tmp_path, "layout", SHARDING, "--shape", "1024,1024")
    assert result["rc"] == 0, result
    assert_bounded(result)
    text = out.decode()
    assert f"{MAX_DEVICES} tiles (1024 × 1024); table instead of a grid" in text
    assert f"… {MAX_DEVICES - 64} tiles" in text  # omitted (the column wraps)
    assert "(1023,1023)" in text and "1048575" in text  # the last tile is shown
    assert len(text.splitlines()) < 100


def test_layout_json_streams_every_device(tmp_path):
    result, out = run_measured(tmp_path, "layout", SHARDING, "--shape", "1024,1024", "-f", "json")
    assert result["rc"] == 0, result
    assert_bounded(result)
    assert out.startswith(b'{"version": 1, "shape": [1024, 1024], "split": "xla", ')
    assert out.count(b'{"device": ') == MAX_DEVICES
    last = out[out.rindex(b'{"device": ') :]
    assert json.loads(last[: last.index(b"}") + 1]) == {
        "device": MAX_DEVICES - 1,
        "slices": [[1023, 1024], [1023, 1024]],
        "shard_shape": [1, 1],
        "buffer_shape": [1, 1],
        "empty": False,
    }
    assert out.endswith(b'], "findings": []}\n')


def test_layout_svg_and_html_draw_a_bounded_part(tmp_path):
    result, _ = run_measured(
        tmp_path, "layout", SHARDING, "--shape", "1024,1024", "--svg", "p.svg", "--html", "p.html"
    )
    assert result["rc"] == 0, result
    assert_bounded(result)
    svg = (tmp_path / "p.svg").read_text()
    assert svg.count('<rect class="tile') == 64 * 64
    assert f"… {MAX_DEVICES - 64 * 64} more tiles not drawn" in svg
    assert "… 960 more rows, 960 more columns not drawn" in svg
    page = (tmp_path / "p.html").read_text()
    assert page.count('<tr><td class="swatch"') == 2048
    assert f"… {MAX_DEVICES - 2048} tiles omitted …" in page


def test_inspect_text(tmp_path, tiny_dump):
    result, out = run_measured(tmp_path, "inspect", str(tiny_dump))
    assert result["rc"] == 0, result
    assert_bounded(result)
    text = out.decode()
    assert "= {devices=[1024,1024]<=[1048576]}" in text
    assert f"… {MAX_DEVICES - 32} tiles" in text


def test_inspect_text_with_distinct_layouts(tmp_path, distinct_dump):
    result, out = run_measured(tmp_path, "inspect", str(distinct_dump))
    assert result["rc"] == 0, result
    assert_bounded(result)
    assert out.decode().count("MD105") == 4


def test_inspect_json(tmp_path, tiny_dump):
    result, out = run_measured(tmp_path, "inspect", str(tiny_dump), "-f", "json")
    assert result["rc"] == 0, result
    assert_bounded(result)
    doc = json.loads(out)
    mesh = doc["files"][0]["modules"][0]["meshes"][0]
    assert mesh["axes"] == [["x", SIDE], ["y", SIDE]] and len(mesh["device_ids"]) == MAX_DEVICES


def test_inspect_layouts_json_refuses_million_device_lists(tmp_path, tiny_dump):
    result, _ = run_measured(tmp_path, "inspect", str(tiny_dump), "-f", "json", "--layouts")
    assert result["rc"] == 2, result
    assert_bounded(result)
    lines = result["stderr"].splitlines()
    assert len(lines) == 1 and "tiny.mlir: %arg0 (line 3:" in lines[0]
    assert "MESHDIAG_MAX_LISTED_DEVICES" in lines[0] and "--format json" in lines[0]


def test_lint(tmp_path, distinct_dump):
    result, out = run_measured(tmp_path, "lint", str(distinct_dump))
    assert result["rc"] == 1, result  # findings
    assert_bounded(result)
    assert out.decode().count("MD105") == 4


def test_convert_derive_mesh(tmp_path):
    result, out = run_measured(tmp_path, "convert", SHARDING, "--derive-mesh", "--to", "sdy")
    assert result["rc"] == 0, result
    assert_bounded(result)
    text = out.decode()
    assert 'sdy.mesh @mesh = <["_axis_0"=1024, "_axis_1"=1024]>' in text
    assert "axis_0=1024,axis_1=1024;" in text


def test_simulate_copy_refuses_the_million_device_mesh_before_work(tmp_path):
    result, _ = run_measured(
        tmp_path, "simulate-copy", "--mesh", "1024x1024", "--shape", "1024,1024",
        "--mapper", "shard2d:0,1",
    )  # fmt: skip
    assert result["rc"] == 2, result
    assert result["seconds"] < 5 and result["rss_mb"] <= 200, result
    lines = result["stderr"].splitlines()
    assert len(lines) == 1 and f"more than the limit of {MAX_SIMULATED_DEVICES}" in lines[0]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_simulate_copy_at_its_limit(tmp_path, fmt):
    side = 1 << (MAX_SIMULATED_DEVICES.bit_length() - 1) // 2
    assert side * side == MAX_SIMULATED_DEVICES
    result, out = run_measured(
        tmp_path, "simulate-copy", "--mesh", f"{side}x{side}", "--shape", "1024,1000",
        "--mapper", f"{{devices=[{side},{side}]<=[{side * side}]}}", "--dest", "uniform:8,8",
        "--write", "by-value", "-f", fmt,
    )  # fmt: skip
    assert result["rc"] == 0, result
    assert_bounded(result)
    if fmt == "json":
        doc = json.loads(out)
        assert len(doc["devices"]) == MAX_SIMULATED_DEVICES
        assert {f["code"] for f in doc["findings"]} >= {"MD105", "MD106"}
    else:
        assert b"MD106" in out
