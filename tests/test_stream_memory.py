"""A big file is held one module at a time: `inspect FILE` (text and JSON), `inspect DIR`
and `lint` keep a flat peak RSS on a file of distinct modules, and say the same bytes as
reading the whole report first."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from meshdiag.cli.commands import inspect_worker as worker
from meshdiag.ir.scan import scan_path
from meshdiag.pipeline.inspect import Inspected, file_json, run_checks
from meshdiag.pipeline.module_summary import summarise_file
from meshdiag.pipeline.spool import SpoolDir
from meshdiag.report.file_text import render_file

ROOT = Path(__file__).resolve().parent.parent
MESHDIAG = str(Path(sys.executable).parent / "meshdiag")
SPECS = ('[{"batch"}, {}]', '[{}, {"model"}]', '[{"batch"}, {"model"}]', '[{"model"}, {}]')

#: the file's size, and the peak RSS bound: every command went over it before modules were
#: let go as they end (at 20 MB: 305 MB text, 463 MB JSON, 258 MB lint; after: 100-140 MB)
BIG_MB = 20
BOUND_MB = 200


def distinct_module(j: int, ops: int = 200) -> str:
    """A Shardy module whose every line is new: widths numbered across the whole file."""
    w0 = 8 * (j * ops + 1)
    out = [
        f"module @jit_layer{j} attributes {{mhlo.num_partitions = 8 : i32}} {{",
        '  sdy.mesh @mesh = <["batch"=2, "model"=4]>',
        f"  func.func public @main(%arg0: tensor<16x{w0}xf32> {{sdy.sharding = "
        f'#sdy.sharding<@mesh, [{{"batch"}}, {{}}]>}}) -> tensor<16x{w0}xf32> {{',
    ]
    prev = "%arg0"
    for k in range(ops):
        w = 8 * (j * ops + k + 1)
        out.append(
            f"    %{k} = stablehlo.tanh {prev} {{sdy.sharding = #sdy.sharding_per_value<"
            f"[<@mesh, {SPECS[k % 4]}>]>}} : tensor<16x{w}xf32>"
        )
        prev = f"%{k}"
    out += [f"    return {prev} : tensor<16x{w0}xf32>", "  }", "}", ""]
    return "\n".join(out)


def write_big(path: Path, mb: float) -> int:
    n = size = 0
    with open(path, "w") as f:
        while size < mb * 1e6:
            size += f.write(distinct_module(n))
            n += 1
    return n


#: in a fresh process: run the command, print its peak RSS in MB
MEASURE = r"""
import os, resource, subprocess, sys
with open(os.devnull, "wb") as null:
    rc = subprocess.run(sys.argv[1:], stdout=null).returncode
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
"""


def peak_mb(cmd: list[str], rc_ok: str = "0") -> float:
    """`cmd`'s peak RSS in MB, run by a helper process of its own (RUSAGE_CHILDREN is per
    process); it must exit `rc_ok`."""
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, *cmd], capture_output=True, text=True, timeout=900
    ).stdout
    rc, rss = out.split()
    assert rc == rc_ok, (cmd, rc)
    return float(rss)


def test_big_file_peak_rss_is_flat(tmp_path):
    big = tmp_path / "big.mlir"
    modules = write_big(big, BIG_MB)
    cmds = {
        "inspect": [MESHDIAG, "inspect", "-q", "-j1", str(big)],
        "inspect json": [MESHDIAG, "inspect", "-q", "-j1", "--format", "json", str(big)],
        "lint": [MESHDIAG, "lint", str(big)],
        "inspect DIR": [MESHDIAG, "inspect", "-q", "-j1", str(tmp_path)],  # the summary
    }
    procs = {  # each measured in its own helper process: RUSAGE_CHILDREN is per process
        k: subprocess.Popen([sys.executable, "-c", MEASURE, *c], stdout=subprocess.PIPE, text=True)
        for k, c in cmds.items()
    }
    peaks = {}
    for k, p in procs.items():
        out, _ = p.communicate(timeout=900)
        rc, rss = out.split()
        assert rc == "0", (k, rc)
        peaks[k] = float(rss)
    assert all(v < BOUND_MB for v in peaks.values()), (modules, peaks)


def listed_devices_module(j: int, n: int = 2048) -> str:
    """A module whose one sharding lists `n` devices in an order of its own."""
    import random

    order = list(range(n))
    random.Random(j).shuffle(order)
    s = f"{{devices=[{n},1]{','.join(map(str, order))}}}"
    return (
        f"module @m{j} attributes {{mhlo.num_partitions = {n} : i32}} {{\n"
        f'  func.func public @main(%arg0: tensor<{4 * n}x8xf32> {{mhlo.sharding = "{s}"}})'
        f" -> (tensor<{4 * n}x8xf32>) {{\n    return %arg0 : tensor<{4 * n}x8xf32>\n  }}\n}}\n"
    )


def own_mesh_module(j: int) -> str:
    """A Shardy module on a mesh of its own: `j + 2` devices on one axis."""
    d = j + 2
    return (
        f"module @m{j} attributes {{mhlo.num_partitions = {d} : i32}} {{\n"
        f'  sdy.mesh @mesh = <["x"={d}]>\n'
        f"  func.func public @main(%arg0: tensor<{4 * d}x8xf32> {{sdy.sharding = "
        f'#sdy.sharding<@mesh, [{{"x"}}, {{}}]>}}) -> (tensor<{4 * d}x8xf32>) {{\n'
        f"    return %arg0 : tensor<{4 * d}x8xf32>\n  }}\n}}\n"
    )


def test_thousands_of_distinct_big_shardings_stay_within_the_bound(tmp_path):
    """Each distinct sharding or mesh is kept by every memo keyed by it; with thousands of
    devices each, the run's memos start over past their budget (`RunMemos.hold`). Before
    that, 1,500 distinct lists of 2,048 devices (14 MB) peaked at 272 MB, 3,000 meshes of
    their own at 256 MB in JSON."""
    listed, meshes = tmp_path / "listed.mlir", tmp_path / "meshes.mlir"
    listed.write_text("".join(listed_devices_module(j) for j in range(1500)))
    meshes.write_text("".join(own_mesh_module(j) for j in range(3000)))
    cmds = {
        f"{how} {p.name}": [MESHDIAG, *args, str(p)]
        for p in (listed, meshes)
        for how, args in (
            ("inspect", ["inspect", "-q", "-j1"]),
            ("json", ["inspect", "-q", "-j1", "--format", "json"]),
        )
    }
    peaks = {k: peak_mb(c) for k, c in cmds.items()}  # (one at a time: seconds of a core)
    assert all(v < BOUND_MB for v in peaks.values()), peaks


def collectives_module(j: int, count: int, rng, n: int = 2048) -> str:
    """An HLO module of `count` all-reduces, each over pairs of `n` devices in an order of
    its own."""
    out = [
        f"HloModule m{j}, num_partitions={n}\n\n"
        "%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n"
        "  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(%a, %b)\n}\n\n"
        f"ENTRY %main (p: f32[{n},8]) -> f32[{n},8] {{\n"
        f"  %p = f32[{n},8]{{1,0}} parameter(0), sharding={{devices=[{n},1]<=[{n}]}}\n"
    ]
    prev = "%p"
    for i in range(count):
        order = list(range(n))
        rng.shuffle(order)
        groups = ",".join(f"{{{order[k]},{order[k + 1]}}}" for k in range(0, n, 2))
        out.append(
            f"  %r{i} = f32[{n},8]{{1,0}} all-reduce({prev}), channel_id={i + 1}, "
            f"replica_groups={{{groups}}}, use_global_device_ids=true, to_apply=%add\n"
        )
        prev = f"%r{i}"
    out.append(f"  ROOT %out = f32[{n},8]{{1,0}} copy({prev})\n}}\n")
    return "".join(out)


def test_thousands_of_distinct_big_replica_groups_stay_within_the_bound(tmp_path):
    """Collectives each listing 2,048 devices in an order of their own. The collective
    scan's memo keeps each line and its parsed groups for the files after it, and starts
    over with the run's memos past their budget; a file's collectives are kept until it
    ends (`comms` keeps the run's, to sort them), their groups flat (`groups.Groups`).
    Before: 300 files of 10 such collectives (33 MB) peaked at 521 MB in `lint`; one
    module of 1,500 of them at about 250 MB, 3,000 at 465 MB (`lint` and `comms`)."""
    import random

    rng = random.Random(0)
    many = tmp_path / "many"
    many.mkdir()
    for f in range(300):
        (many / f"f{f:04d}.txt").write_text(collectives_module(f, 10, rng))
    one = tmp_path / "one.txt"
    one.write_text(collectives_module(0, 1500, rng))
    cmds = {
        "lint DIR": [MESHDIAG, "lint", "-j1", str(many)],
        "lint one": [MESHDIAG, "lint", "-j1", str(one)],
        "comms one": [MESHDIAG, "comms", str(one)],
    }
    peaks = {k: peak_mb(c) for k, c in cmds.items()}
    assert all(v < BOUND_MB for v in peaks.values()), peaks


def test_comms_keeps_no_files_collectives_once_written(tmp_path):
    """`comms` writes each file's collectives as it goes (to a temporary file, shown at the
    end): 3,000 files of a real dump's collectives (47 MB) peaked at 249 MB in JSON when the
    whole document was built first, the cold bench's dumps at 984 MB."""
    import shutil

    src = ROOT / "fixtures" / "comms" / "xla" / "reshard.after_optimizations.txt"
    for i in range(3000):
        shutil.copy(src, tmp_path / f"f{i:04d}.txt")
    cmd = [MESHDIAG, "comms", "--format", "json", str(tmp_path)]
    assert peak_mb(cmd) < 120


def test_diff_holds_a_module_at_a_time(tmp_path):
    """`diff` reads both dumps module by module and writes each value's verdict as it goes:
    an 8 MB file of 64k values against itself peaks at about 45 MB, as a 1 MB one does.
    Holding both dumps to pair them, it peaked at 124 MB (text) and a 50 MB file at
    617 MB; keeping every device's slices of both sides too, at 436 MB for 8 MB.

    A module only one side has does not make the other side be read ahead and held:
    the two are read in turns (reading the other side until the module's partner came
    by, it held all of it: 68 MB here)."""
    big = tmp_path / "big.mlir"
    write_big(big, 8)
    peaks = {}
    for fmt in ("text", "json"):
        peaks[fmt] = peak_mb([MESHDIAG, "diff", str(big), str(big), "--format", fmt])
        assert peaks[fmt] < 70
    extra = tmp_path / "extra.mlir"
    extra.write_text(distinct_module(10**6) + big.read_text())
    for a, b in ((extra, big), (big, extra)):
        assert peak_mb([MESHDIAG, "diff", str(a), str(b)], rc_ok="1") < peaks["text"] + 10


def test_json_of_big_file_is_whole(tmp_path):
    """The module-by-module JSON is one valid document with every module."""
    f = tmp_path / "some.mlir"
    write_big(f, 0.3)
    out = subprocess.run(
        [MESHDIAG, "inspect", "-q", "-j1", "--format", "json", str(f)],
        capture_output=True,
        check=True,
    ).stdout
    doc = json.loads(out)
    n = sum(1 for line in f.read_text().splitlines() if line.startswith("module @"))
    assert len(doc["files"][0]["modules"]) == n
    assert doc["files"][0]["modules"][-1]["values"][-1]["line"] > 0


def _inputs() -> list[str]:
    fx = ROOT / "fixtures"
    files = [str(p) for p in sorted(fx.rglob("*")) if p.is_file() and p.suffix in (".mlir", ".txt")]
    return files


@pytest.fixture
def spooled(tmp_path):
    sd = SpoolDir()
    sd.worker_init(*sd.init_args)
    yield sd
    sd.close()


@pytest.mark.parametrize("mesh", [None, "batch=2,model=4"])
def test_streamed_output_matches_whole_report(spooled, tmp_path, mesh):
    """Rendering each module as it ends writes the bytes rendering the whole report wrote,
    for every fixture (modules, sections, diagnostics after a module's end, MD001s) and a
    file of many modules."""
    from meshdiag.cli.commands.common import load_mesh

    extra = tmp_path / "many.mlir"
    write_big(extra, 0.2)
    gm = load_mesh(mesh)
    look = {"width": 100, "height": 25, "color_system": None, "force_terminal": False}
    for soft in (True, False):
        worker.init(
            (gm, "tt-mlir", "xla", False, {**look, "soft_wrap": soft}, spooled.directory, False)
        )
        console = worker._STATE["console"]
        for path in [*_inputs(), str(extra)]:
            report = scan_path(path)
            whole = Inspected(report, run_checks(report, gm, "tt-mlir", "xla"))
            parts: list[bytes] = []
            worker.text_one(path, parts.append)
            console = worker._STATE["console"]
            shown = summarise_file(report, mesh=gm, split="xla")
            expect = render_file(whole, shown, console)
            assert b"".join(parts).decode() == expect, path
            parts = []
            found = worker.json_one(path, parts.append)
            assert b"".join(parts).decode() == json.dumps(file_json(report, mesh=gm)), path
            assert found == [json.dumps(f.to_json()) for f in whole.findings], path


def test_spill_to_temporary_file_keeps_order(spooled, tmp_path, monkeypatch):
    """Rendered modules past the in-memory limit go to a temporary file, in order."""
    monkeypatch.setattr(worker, "SPILL", 1000)
    made = []
    import tempfile  # (the worker imports it when it first spills)

    real = tempfile.TemporaryFile
    monkeypatch.setattr(tempfile, "TemporaryFile", lambda: made.append(1) or real())
    f = tmp_path / "some.mlir"
    write_big(f, 0.1)
    look = {"width": 100, "height": 25, "color_system": None, "force_terminal": False}
    worker.init((None, None, "xla", False, {**look, "soft_wrap": True}, spooled.directory, False))
    parts: list[bytes] = []
    worker.text_one(str(f), parts.append)
    report = scan_path(str(f))
    whole = Inspected(report, run_checks(report, None, None, "xla"))
    shown = summarise_file(report, mesh=None, split="xla")
    expect = render_file(whole, shown, worker._STATE["console"])
    assert b"".join(parts).decode() == expect
    assert made == [1]  # it did spill, once
