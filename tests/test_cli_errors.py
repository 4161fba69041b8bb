"""Every command's error paths: exit 2, one sentence on stderr (with the location when there is
one), never a traceback — unless MESHDIAG_DEBUG=1 asks for it. And the resource limits: each is
refused with a clear message before work is done, or (simulate-copy) handled symbolically.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DUMP = str(ROOT / "fixtures" / "seed" / "distorted_mesh.mlir")
MISSING = "/nonexistent/dir/dump.mlir"
GOOD = "{devices=[1,4,2]<=[8] last_tile_dim_replicate}"


def meshdiag(*args: str, env: dict | None = None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "meshdiag", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


#: (command line, text the message must contain) — each must exit 2 with one short line
BAD: list[tuple[list[str], str | None]] = [
    # layout
    (["layout", "{devices=[2,2", "-s", "4,4"], "column"),
    (["layout", "{replicated}}", "-s", "4"], "column"),
    (["layout", '#sdy.sharding<@m, [{"x"}]', "-s", "4"], "column"),
    (["layout", "P(None, 'model')", "-s", "4,4"], "mesh"),
    (["layout", GOOD, "-s", "4,4", "-m", "batch=2,,model=4"], "column"),
    (["layout", GOOD, "-s", "4,4", "-m", "batch=0"], "positive"),
    (["layout", GOOD, "-s", "4,x"], "shape"),
    (["layout", GOOD, "-s", "4,-4"], "shape"),
    (["layout", GOOD, "-s", "(4,4]"], "shape"),
    (["layout", GOOD, "-s", "32,32", "--split", "sideways"], "split"),
    (["layout", GOOD, "-s", "32,32", "--format", "yaml"], "format"),
    (["layout", GOOD, "-s", "32,32", "-m", MISSING], "does not exist"),
    (["layout", GOOD, "-s", "32,32", "--svg", "/nonexistent/dir/x.svg"], None),
    (["layout", GOOD, "-s", "7", "--split", "even"], None),
    # inspect
    (["inspect", DUMP, "--format", "xml"], "format"),
    (["inspect", DUMP, "-m", "2y4"], "column"),
    (["inspect", DUMP, "--split", "nope"], "split"),
    (["inspect", DUMP, "-m", "x=99999999999999999999999"], "large"),
    # simulate-copy
    (["simulate-copy", "-m", "1x8", "-s", "1,7,a"], "shape"),
    (["simulate-copy", "-m", "1x8", "-s", "1,7", "--mapper", "shard:9"], None),
    (["simulate-copy", "-m", "1x8", "-s", "1,7", "--mapper", "explode"], None),
    (["simulate-copy", "-m", "1x8", "-s", "1,7", "--dest", "uniform:1,x"], None),
    (["simulate-copy", "-m", "1x8", "-s", "1,7", "--dest", "per-device:" + MISSING], None),
    (["simulate-copy", "-m", "1x8", "-s", "1,7", "--write", "sideways"], None),
    (["simulate-copy", "-m", "1x8", "-s", "1,7", "--compose", "glue"], None),
    (["simulate-copy", "-m", "1x8", "-s", "1,7", "--split", "nope"], "split"),
    (["simulate-copy", "-m", "1x8", "-s", "1,7", "--ttnn-era", "1999"], None),
    (["simulate-copy", "-m", "1x8", "-s", "1,7", "--format", "csv"], "format"),
    (["simulate-copy", "-m", "<[", "-s", "1,7"], "column"),
    # convert
    (["convert", "{devices=[2,2]0,1,2}", "--to", "sdy"], None),
    (["convert", GOOD, "--to", "klingon"], None),
    (["convert", "P('x')", "--to", "gspmd"], "mesh"),
    (["convert", GOOD, "--to", "sdy", "-m", "t3k", "--format", "toml"], "format"),
    # rule
    (["rule", "MD999"], None),
    (["rule", "MD101", "--format", "pdf"], "format"),
    # lint (usage errors)
    (["lint", MISSING], "no such file"),
    (["lint", DUMP, "--output-format", "pdf"], "output-format"),
    (["lint", DUMP, "--select", "XX9"], None),
    (["lint", DUMP, "--fail-on", "catastrophe"], None),
    (["lint", DUMP, "--config", MISSING], None),
    (["lint", DUMP, "--config", DUMP, "--isolated"], None),
    (["lint", DUMP, "-m", "batch=2;model="], "column"),
    (["lint", "-", "-"], "stdin"),
]

#: unknown options and missing arguments: typer/click's usage block, still exit 2
USAGE = [
    ["layout", GOOD, "-s", "4", "--frobnicate"],
    ["layout", GOOD],
    ["inspect"],
    ["inspect", DUMP, "--bogus"],
    ["simulate-copy", "--mesh"],
    ["convert"],
    ["rule", "MD101", "extra"],
    ["lint", DUMP, "--jobs", "many"],
    ["no-such-command"],
]


def _run_all(cases: list[list[str]]) -> list[subprocess.CompletedProcess]:
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda a: meshdiag(*a), cases))


@pytest.fixture(scope="module")
def bad_results() -> list[subprocess.CompletedProcess]:
    return _run_all([args for args, _ in BAD])


def test_every_command_is_covered() -> None:
    top = meshdiag("--help").stdout
    commands = {"layout", "inspect", "simulate-copy", "lint", "convert", "rule"}
    assert all(c in top for c in commands)
    assert {args[0] for args, _ in BAD} == commands


@pytest.mark.parametrize("i", range(len(BAD)), ids=[" ".join(a)[:60] for a, _ in BAD])
def test_bad_arguments_exit_2_with_one_line(bad_results, i: int) -> None:
    args, must = BAD[i]
    proc = bad_results[i]
    err = proc.stderr.strip()
    assert proc.returncode == 2, (args, proc.returncode, proc.stdout[-500:], err)
    assert err, args
    assert "Traceback" not in err and "internal error" not in err, err
    assert len(err.splitlines()) == 1, err
    assert len(err) < 400, err
    assert err.startswith("meshdiag: error: "), err
    if must:
        assert must.lower() in err.lower(), (must, err)


@pytest.mark.parametrize("args", USAGE, ids=[" ".join(a)[:50] for a in USAGE])
def test_usage_errors_exit_2_with_a_usage_block(args: list[str]) -> None:
    proc = meshdiag(*args)
    err = proc.stderr.strip()
    assert proc.returncode == 2, (args, proc.returncode, err)
    assert err and "Traceback" not in err
    assert len(err.splitlines()) <= 6, err
    assert "Usage:" in err or "Error" in err or err.startswith("meshdiag: error:"), err


def test_locations_are_reported() -> None:
    proc = meshdiag("layout", "{devices=[2,2]<=[4] last_tile_dims={bogus}}", "-s", "4,4")
    assert proc.returncode == 2
    assert "at column 37" in proc.stderr


def test_debug_shows_the_traceback() -> None:
    proc = meshdiag("layout", "{devices=[2,2", "-s", "4,4", env={"MESHDIAG_DEBUG": "1"})
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr and "ParseError" in proc.stderr


def test_lint_exit_codes_stay_distinct(tmp_path: Path) -> None:
    ok = meshdiag("lint", DUMP, "--isolated", "-j", "1", "--exit-zero")
    assert ok.returncode == 0
    found = meshdiag("lint", DUMP, "--isolated", "-j", "1", "-m", "batch=2,model=4")
    assert found.returncode == 1 and "Traceback" not in found.stderr


# -- resource limits ---------------------------------------------------------------------------


def _fast(args: list[str], env: dict | None = None, budget: float = 10.0):
    start = time.monotonic()
    proc = meshdiag(*args, env=env)
    return proc, time.monotonic() - start


def test_huge_tile_assignment_is_refused_fast() -> None:
    proc, t = _fast(["layout", "{devices=[1000000000]<=[1000000000]}", "-s", "8"])
    assert proc.returncode == 2 and "limit of 1048576" in proc.stderr and "column" in proc.stderr
    assert t < 10
    proc, _ = _fast(["layout", "{devices=[1000000000]0,1}", "-s", "8"])
    assert proc.returncode == 2 and "limit" in proc.stderr


def test_huge_shardy_mesh_is_refused_fast() -> None:
    proc, t = _fast(["layout", "{replicated}", "-s", "8", "-m", '<["x"=1000000000000]>'])
    assert proc.returncode == 2 and "1000000000000 devices" in proc.stderr and t < 10
    sdy = '#sdy.sharding<mesh<["x"=1000000000000]>, [{"x"}]>'
    proc, _ = _fast(["layout", sdy, "-s", "8"])
    assert proc.returncode == 2 and "limit" in proc.stderr


def test_device_limit_is_configurable() -> None:
    small = {"MESHDIAG_MAX_DEVICES": "4"}
    proc, _ = _fast(["layout", "{devices=[8]<=[8]}", "-s", "8"], env=small)
    assert proc.returncode == 2 and "limit of 4" in proc.stderr
    proc, _ = _fast(["layout", "{devices=[4]<=[4]}", "-s", "8", "-f", "json"], env=small)
    assert proc.returncode == 0 and json.loads(proc.stdout)["num_devices"] == 4
    bad = {"MESHDIAG_MAX_DEVICES": "lots"}
    proc, _ = _fast(["layout", "{replicated}", "-s", "8"], env=bad)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "MESHDIAG_MAX_DEVICES" in proc.stderr


def test_huge_simulation_goes_symbolic() -> None:
    args = ["simulate-copy", "-m", "1x8", "-s", "100000000000,100000000000"]
    proc, t = _fast([*args, "--mapper", "shard:1", "-f", "json"])
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["source_shape"] == [100000000000, 100000000000]
    assert len(doc["devices"]) == 8 and all(d["written"] for d in doc["devices"])
    assert t < 15


def test_300k_axis_mesh_is_refused_fast(tmp_path: Path) -> None:
    axes = {f"a{i}": 1 for i in range(300_000)}
    f = tmp_path / "mesh.json"
    f.write_text(json.dumps({"axes": axes}))
    proc, t = _fast(["layout", "{replicated}", "-s", "8", "-m", str(f)])
    assert proc.returncode == 2 and "axes" in proc.stderr and "limit" in proc.stderr
    assert t < 10
    from meshdiag.errors import LimitError
    from meshdiag.inputs.mesh_input import parse_mesh

    start = time.monotonic()
    with pytest.raises(LimitError):
        parse_mesh(",".join(f"a{i}=1" for i in range(300_000)))
    with pytest.raises(LimitError):
        parse_mesh("<[" + ", ".join(f'"a{i}"=1' for i in range(300_000)) + "]>")
    assert time.monotonic() - start < 5


def test_nesting_and_annotation_length_limits() -> None:
    proc, _ = _fast(["layout", "{" * 5000 + "replicated" + "}" * 5000, "-s", "8"])
    assert proc.returncode == 2 and "nest" in proc.stderr
    env = {"MESHDIAG_MAX_ANNOTATION_CHARS": "50"}
    long = "{devices=[16]" + ",".join(map(str, range(16))) + "}"
    proc, _ = _fast(["layout", long, "-s", "16"], env=env)
    assert proc.returncode == 2 and "MESHDIAG_MAX_ANNOTATION_CHARS" in proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["inspect", "-j1", "BIG"],
        ["inspect", "--format", "json", "BIG"],
        ["diff", "--format", "json", "BIG", "BIG"],
        ["layout", "{devices=[64,64]<=[4096]}", "-s", "4096,4096", "--format", "json"],
    ],
)
def test_a_reader_that_stops_early_is_not_an_error(tmp_path: Path, args: list[str]) -> None:
    """`meshdiag ... | head`: the pipe closes while the command still writes. That exits 0
    and says nothing, like a pipe closed at the last flush (it exited 1 mid-output: the
    command-line library's own handling of a broken pipe)."""
    from tests.test_stream_memory import write_big

    big = tmp_path / "big.mlir"
    write_big(big, 1)
    cmd = [sys.executable, "-m", "meshdiag", *(str(big) if a == "BIG" else a for a in args)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert len(proc.stdout.read(4096)) == 4096  # far from all of it: the rest is refused
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 0, err
    assert err == b""
