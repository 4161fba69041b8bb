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

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshdiag.layouts.engine import _dense_groups, layout
from meshdiag.limits import MAX_DEVICES, MAX_SIMULATED_DEVICES
from meshdiag.notation.detect import parse_sharding
from meshdiag.notation.devicelist import compress_devices, device_runs
from meshdiag.report.grid import TileIndex, table_rows

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
    end = b'], "device_ids": "logical", "device_assignment": null, "findings": []}\n'
    assert out.endswith(end)


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


def test_inspect_html_draws_every_layout_bounded(tmp_path, distinct_dump):
    """The page draws each of the eight million-device layouts (64 × 64 tiles at most), after
    the text report in the same process."""
    result, _ = run_measured(tmp_path, "inspect", str(distinct_dump), "--html", "p.html")
    assert result["rc"] == 0, result
    assert_bounded(result)
    page = (tmp_path / "p.html").read_text()
    assert page.count("<svg ") == 8 and page.count('<tr class="layout">') == 8
    assert page.count('<rect class="tile') <= 8 * 64 * 64
    assert "more tiles not drawn" in page


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


# -- the fast paths agree with the straightforward ones --------------------------------------


def _runs_reference(ids) -> list[tuple[int, int, int]]:
    """Greedy runs, one id at a time (what device_runs computes with block jumps)."""
    xs = sorted(set(ids))
    runs, i = [], 0
    while i < len(xs):
        if i + 1 == len(xs):
            runs.append((xs[i], xs[i], 1))
            break
        step, j = xs[i + 1] - xs[i], i + 1
        while j + 1 < len(xs) and xs[j + 1] - xs[j] == step:
            j += 1
        if (step == 1 and j - i + 1 >= 3) or j - i + 1 >= 4:
            runs.append((xs[i], xs[j], step))
            i = j + 1
        else:
            runs.append((xs[i], xs[i], 1))
            i += 1
    return runs


_ids = st.one_of(
    st.lists(st.integers(0, 60), max_size=40),
    # long lists take the numpy path: strided blocks with noise
    st.builds(
        lambda start, step, n, extra: [start + step * k for k in range(n)] + extra,
        st.integers(0, 50),
        st.integers(1, 4),
        st.integers(4000, 9000),
        st.lists(st.integers(0, 40000), max_size=30),
    ),
)


@settings(max_examples=60, deadline=None)
@given(_ids, st.sampled_from([None, 5, 12, 60]))
def test_device_runs_and_compression_match_the_reference(ids, max_chars):
    assert device_runs(ids) == _runs_reference(ids)
    text = compress_devices(ids, max_chars=max_chars)
    assert compress_devices(np.asarray(ids, dtype=np.int64), max_chars=max_chars) == text
    if max_chars is not None:
        assert len(text) <= max(max_chars, len(f"…(+{len(set(ids))})"))


def _dense_groups_reference(key):
    out = np.full(key.shape, -1, dtype=np.int64)
    valid = key >= 0
    if valid.any():
        uniq, first, inverse = np.unique(key[valid], return_index=True, return_inverse=True)
        rank_of = np.empty(len(uniq), dtype=np.int64)
        rank_of[np.argsort(first, kind="stable")] = np.arange(len(uniq))
        out[valid] = rank_of[inverse.reshape(-1)]
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-1, 12), max_size=50))
def test_dense_groups_match_the_unique_based_reference(keys):
    key = np.asarray(keys, dtype=np.int64)
    assert _dense_groups(key).tolist() == _dense_groups_reference(key).tolist()


_LAYOUTS = [
    ("{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}", (32, 32), "xla", None),
    ("{devices=[8,1]<=[8]}", (7, 3), "chunk", None),
    ("{devices=[4,1]<=[4]}", (5, 3), "xla", None),
    ("{devices=[2,3,2]<=[12]}", (3, 0, 5), "xla", None),
    ("{devices=[3,3,2,2]<=[36]}", (6, 6, 4, 4), "array-split", None),
    ("{replicated}", (), "xla", 4),
    ("{maximal device=3}", (4, 5), "xla", 6),
    ("{manual}", (2,), "xla", 3),
    ("{devices=[16,1]<=[16]}", (5000, 3), "chunk", None),
]


@pytest.mark.parametrize("small", [True, False])
@pytest.mark.parametrize("text,shape,split,n", _LAYOUTS)
def test_streamed_json_and_tile_index_match_the_direct_ones(
    text, shape, split, n, small, monkeypatch
):
    """`small`: `TileIndex` reads a few tiles from lists and finds them by a dict, many
    from the arrays by binary search (their devices and each dim's shards too)."""
    import io
    import itertools

    from meshdiag.layouts import engine
    from meshdiag.report import grid

    if not small:
        monkeypatch.setattr(grid, "SMALL_INDEX", 0)
        monkeypatch.setattr(engine, "LISTED_ORDER_DEVICES", 0)

    lay = layout(parse_sharding(text), shape, split=split, num_devices=n)
    buf = io.StringIO()
    lay.write_json(buf, "g", {"findings": []})
    assert buf.getvalue() == json.dumps(lay.to_json("g") | {"findings": []})
    # every tile, built on demand, is the tile its devices' rows describe
    index = TileIndex(lay)
    tiles = list(index)
    members = lay.present if lay.rank == 0 else lay.tile_index[:, 0] >= 0
    assert sorted(d for t in tiles for d in t.devices) == np.flatnonzero(members).tolist()
    by_index = {t.index: t for t in tiles}
    for i in itertools.islice(itertools.product(*map(range, lay.tiles)), 4096):
        assert index.get(i) == by_index[i]  # a layout holds every tile: found by its index
    for t in tiles:
        assert index.get(t.index) == t
        d = t.devices[0]
        if lay.rank:
            assert t.index == tuple(lay.tile_index[d].tolist())
        if t.slices is not None:
            assert t.slices == tuple(
                zip(lay.starts[d].tolist(), lay.stops[d].tolist(), strict=True)
            )
    rows, elided = table_rows(lay, 4)
    assert elided == max(0, len(tiles) - 4)
