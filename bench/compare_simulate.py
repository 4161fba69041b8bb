"""Check that a change kept `simulate-copy` byte-identical: run a broad list of invocations
(every mapper kind, TTNN eras, destinations, write modes, stale fills, composers, compiler
notations, symbolic and data mode, refused copies) with this tree's meshdiag and with another
revision's, and compare stdout, stderr and exit codes of the text and JSON output; in data
mode also the library's element data (every device buffer and the read-back tensor).

    .venv/bin/python bench/compare_simulate.py [--base-rev HEAD] [--list]

The base revision's `src/` is exported as `bench/compare_outputs.py` does. Exit 1 and the
differing invocations when anything differs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from compare_outputs import ROOT, export_base

SEED = "1,7,32,32"
SHARDY_MESH = "batch=2,model=4"

#: (mesh, shape, extra options); each runs as text and as JSON
CASES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    # mapper kinds
    ("t3k", SEED, ()),
    ("t3k", SEED, ("--mapper", "replicate")),
    ("t3k", SEED, ("--mapper", "shard:1")),
    ("t3k", SEED, ("--mapper", "shard:-1")),
    ("t3k", "1,8,32,32", ("--mapper", "shard:1")),
    ("t3k", "8,4", ("--mapper", "shard2d:0,1")),
    ("t3k", "7,3,32,32", ("--mapper", "shard2d:none,1@2x3")),
    ("t3k", "4,6", ("--mapper", "shard2d:0,1@2x2")),
    ("t3k", "4,8", ("--mapper", "shard2d:0,1@1x8")),
    ("t3k", "4,6", ("--mapper", "shard2d:0,1@1x8")),
    ("1x8", "1,1,32,48", ("--mapper", "shard2d:none,3")),
    ("1x8", "1,1,32,256", ("--mapper", "shard2d:none,3")),
    ("n300", "1,1,32,64", ("--mapper", "placements:R,S3")),
    ("2x4", "4,8", ("--mapper", "placements:S0,S1")),
    ("2x2x2", "4,6,2", ("--mapper", "placements:S0,R,S1")),
    ("1x8", "5,3", ("--mapper", "replicate")),
    # eras, uneven shards
    ("t3k", "1,9,32,32", ("--mapper", "shard:1")),
    ("t3k", "1,9,32,32", ("--mapper", "shard:1", "--ttnn-era", "2025-05")),
    ("t3k", "1,9,32,32", ("--mapper", "shard:1", "--ttnn-era", "2025-03")),
    ("t3k", "1,13,32,32", ("--mapper", "shard:1", "--ttnn-era", "2025-03")),
    ("t3k", "1,2,3,3", ("--mapper", "placements:S1,S2")),
    ("t3k", "1,2,3,3", ("--mapper", "placements:S1,S2", "--ttnn-era", "2025-03")),
    ("t3k", "1,2,3,3", ("--mapper", "shard2d:1,2", "--ttnn-era", "2024")),
    ("t3k", "1,2,3,3", ("--mapper", "shard2d:1,none", "--ttnn-era", "2024")),
    ("t3k", "3,5", ("--mapper", "shard2d:0,1", "--ttnn-era", "2025-03")),
    ("t3k", "3,5", ("--mapper", "shard2d:0,1", "--ttnn-era", "2024", "--compose", "first")),
    ("1x8", "0,4", ("--mapper", "shard:0")),
    ("1x8", "0,4", ("--mapper", "shard:0", "--ttnn-era", "2025-03")),
    # split rules on TTNN mappers
    ("t3k", SEED, ("--mapper", "shard:1", "--split", "xla")),
    ("t3k", SEED, ("--mapper", "shard:1", "--split", "array-split")),
    ("t3k", SEED, ("--mapper", "shard:1", "--split", "even")),
    ("1x8", "10,3", ("--mapper", "shard:0", "--split", "array-split", "--ttnn-era", "2025-03")),
    # destinations, writes, stale fills
    ("t3k", SEED, ("--mapper", "shard:1", "--dest", "uniform:1,1,32,32", "--write", "by-value")),
    (
        "t3k",
        SEED,
        ("--mapper", "shard:1", "--dest", "uniform:1,1,32,32", "--write", "by-reference"),
    ),
    (
        "t3k",
        SEED,
        (
            "--mapper",
            "shard:1",
            "--dest",
            "uniform:1,1,32,32",
            "--write",
            "by-value",
            "--stale",
            "previous",
        ),
    ),
    ("t3k", SEED, ("--mapper", "shard:1", "--dest", "uniform:1,2,32,32", "--write", "by-value")),
    (
        "t3k",
        SEED,
        ("--mapper", "shard:1", "--dest", "uniform:1,2,32,32", "--stale", "previous"),
    ),
    ("t3k", SEED, ("--mapper", "shard:1", "--dest", "uniform:1,1,16,64", "--write", "by-value")),
    ("t3k", "1,16,32,32", ("--mapper", "shard:1", "--dest", "uniform:1,1,32,32")),
    ("t3k", SEED, ("--mapper", "shard:1", "--dest", "uniform:1,1,32")),
    ("t3k", SEED, ("--mapper", "shard:1", "--dest", "per-device:{json8}", "--write", "by-value")),
    ("t3k", SEED, ("--mapper", "shard:1", "--dest", "per-device:{toml8}", "--write", "by-value")),
    ("t3k", SEED, ("--mapper", "shard:1", "--dest", "per-device:{json7}")),
    ("t3k", SEED, ("--mapper", "shard:1", "--dest", "per-device:{jsonnull}")),
    ("t3k", SEED, ("--mapper", "shard:1", "--dest", "per-device:{jsonholes}")),
    ("t3k", SEED, ("--mapper", "shard:1", "--dest", "per-device:{jsonrank}")),
    ("t3k", SEED, ("--mapper", "replicate", "--write", "by-value", "--stale", "previous")),
    # composers
    ("t3k", SEED, ("--mapper", "shard:1", "--compose", "concat:0")),
    ("t3k", SEED, ("--mapper", "shard:1", "--compose", "concat:7")),
    ("t3k", SEED, ("--mapper", "shard:1", "--compose", "first")),
    ("t3k", SEED, ("--mapper", "shard:1", "--compose", "tiles")),
    ("t3k", SEED, ("--mapper", "shard:1", "--compose", "concat2d:0,1")),
    ("t3k", SEED, ("--mapper", "shard:1", "--compose", "concat2d:1,1")),
    ("t3k", "8,4", ("--mapper", "shard2d:0,1", "--compose", "concat2d:1,0")),
    ("t3k", "8,4", ("--mapper", "shard2d:0,1", "--compose", "concat2d:0,none")),
    ("t3k", "8,4", ("--mapper", "shard2d:0,1", "--compose", "concat2d:none,none")),
    ("t3k", "8,4", ("--mapper", "shard2d:0,1", "--compose", "concat2d:0,1@4x2")),
    ("t3k", "8,4", ("--mapper", "shard2d:0,1", "--compose", "concat:0")),
    ("t3k", "4,6", ("--mapper", "shard2d:0,1@1x8", "--compose", "concat2d:0,1@1x8")),
    ("t3k", "4,6", ("--mapper", "shard2d:0,1@2x2", "--compose", "concat2d:0,1@2x2")),
    ("t3k", SEED, ("--mapper", "shard:1", "--dest", "uniform:1,1,32,32", "--compose", "first")),
    ("t3k", "3,5", ("--mapper", "shard2d:0,1", "--ttnn-era", "2024")),
    ("t3k", "3,8", ("--mapper", "shard2d:0,1", "--ttnn-era", "2024")),
    ("t3k", "3,8", ("--mapper", "shard2d:0,1", "--ttnn-era", "2025-03")),
    ("t3k", "3,8", ("--mapper", "shard2d:0,1", "--ttnn-era", "2025-03", "--stale", "previous")),
    ("t3k", "1,2,3,3", ("--mapper", "shard2d:1,2", "--ttnn-era", "2025-03")),
    # compiler notations
    ("1x8", SEED, ("--mapper", "{devices=[1,8,1,1]<=[8]}")),
    ("1x8", SEED, ("--mapper", "{devices=[1,8,1,1]<=[8]}", "--split", "chunk")),
    ("1x8", SEED, ("--mapper", "{devices=[1,8,1,1]<=[8]}", "--split", "array-split")),
    ("t3k", "8,4", ("--mapper", "{devices=[4,2]<=[2,4]T(1,0)}")),
    ("t3k", "8,4", ("--mapper", "{devices=[4,2]<=[2,4]T(1,0)}", "--compose", "concat:0")),
    ("t3k", "8,4", ("--mapper", "{devices=[2,1,4]<=[8] last_tile_dim_replicate}")),
    ("t3k", "8,4", ("--mapper", "{replicated}")),
    ("t3k", "8,4", ("--mapper", "{maximal device=3}")),
    ("t3k", "8,4", ("--mapper", "{manual}")),
    ("t3k", "8,4", ("--mapper", "{devices=[2,2,2]<=[8] last_tile_dims={manual}}")),
    ("t3k", "8,4", ("--mapper", "{devices=[4,2]<=[2,4]T(1,0)}", "--dest", "uniform:2,2")),
    (
        "t3k",
        "8,4",
        (
            "--mapper",
            "{devices=[4,2]<=[2,4]T(1,0)}",
            "--dest",
            "uniform:3,2",
            "--write",
            "by-value",
        ),
    ),
    (SHARDY_MESH, "32,32", ("--mapper", "(None, 'model')")),
    (SHARDY_MESH, "30,32", ("--mapper", "('model', 'batch')")),
    (SHARDY_MESH, "30,32", ("--mapper", "('model', 'batch')", "--split", "chunk")),
    (SHARDY_MESH, "32,32", ("--mapper", '<@mesh, [{}, {"model"}]>')),
    (SHARDY_MESH, "32,32", ("--mapper", '<@mesh, [{"batch", "model"}, {}]>')),
    (SHARDY_MESH, "32,32", ("--mapper", '<@mesh, [{"model"}, {}]>', "--compose", "concat:0")),
    # symbolic and data mode, big tensors, targets
    ("t3k", SEED, ("--mapper", "shard:1", "--symbolic")),
    (
        "t3k",
        SEED,
        ("--mapper", "shard:1", "--dest", "uniform:1,1,32,32", "--symbolic", "--write", "by-value"),
    ),
    ("t3k", "8,100000000", ("--mapper", "shard:0")),
    (
        "t3k",
        "7,100000000000",
        ("--mapper", "shard:0", "--dest", "uniform:1,100000000000", "--write", "by-value"),
    ),
    ("t3k", "100000000000,100000000000", ()),
    ("t3k", SEED, ("--mapper", "shard:1", "--target", "tt-mlir")),
    ("3x3", "9,9", ("--mapper", "shard2d:0,1", "--target", "tt-mlir")),
    ("64x64", "128,128", ("--mapper", "shard2d:0,1")),
    # refused invocations
    ("t3k", SEED, ("--mapper", "shard:9")),
    ("t3k", SEED, ("--mapper", "shard2d:1")),
    ("t3k", SEED, ("--mapper", "shard2d:1,1")),
    ("t3k", SEED, ("--mapper", "shard2d:0,1@4x4")),
    ("t3k", SEED, ("--mapper", "placements:S1,S2,S3")),
    ("t3k", SEED, ("--mapper", "explode")),
    ("t3k", SEED, ("--write", "sideways")),
    ("t3k", SEED, ("--stale", "old")),
    ("t3k", SEED, ("--ttnn-era", "1999")),
    ("t3k", SEED, ("--compose", "glue")),
    ("t3k", SEED, ("--dest", "uniform:banana")),
    ("t3k", SEED, ("--dest", "per-device:/nonexistent/specs.json")),
    ("0x8", SEED, ("--mapper", "shard:1")),
    ("t3k", "1,7,-3", ()),
    ("t3k", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", ()),
    ("1024x1024", "1024,1024", ()),
)

#: (mesh shape, tensor shape, mapper, keyword arguments) run through the library in data
#: mode: the element data of every buffer and of the read-back is compared too
DATA_CALLS: tuple[tuple[tuple[int, ...], tuple[int, ...], str, dict], ...] = (
    ((2, 4), (1, 7, 32, 32), "shard:1", {}),
    ((2, 4), (1, 7, 32, 32), "shard:1", {"dest": "uniform:1,1,32,32", "write": "by-value"}),
    (
        (2, 4),
        (1, 7, 32, 32),
        "shard:1",
        {"dest": "uniform:1,1,32,32", "write": "by-value", "stale": "previous"},
    ),
    ((2, 4), (1, 7, 32, 32), "shard:1", {"dest": "uniform:1,2,32,32", "stale": "previous"}),
    ((2, 4), (1, 7, 32, 32), "shard:1", {"dest": "uniform:1,1,16,64", "write": "by-value"}),
    ((2, 4), (8, 4), "shard2d:0,1", {}),
    ((2, 4), (8, 4), "shard2d:0,1", {"compose": "concat2d:1,0"}),
    ((2, 4), (4, 8), "shard2d:0,1@1x8", {}),
    ((2, 4), (7, 3, 32, 32), "shard2d:none,1@2x3", {}),
    ((2, 4), (3, 5), "shard2d:0,1", {"era": "2024", "compose": "first"}),
    ((2, 4), (1, 9, 32, 32), "shard:1", {"era": "2025-03"}),
    ((1, 8), (1, 7, 32, 32), "{devices=[1,8,1,1]<=[8]}", {}),
    ((2, 4), (8, 4), "{devices=[4,2]<=[2,4]T(1,0)}", {}),
    ((2, 4), (8, 4), "{devices=[4,2]<=[2,4]T(1,0)}", {"dest": "uniform:3,2", "write": "by-value"}),
    ((2, 4), (8, 4), "{devices=[2,1,4]<=[8] last_tile_dim_replicate}", {}),
    ((2, 4), (300, 301), "replicate", {}),
    ((8, 4), (1000, 1001), "shard2d:0,1", {}),
    ((8, 4), (1000, 1000), "shard2d:0,1", {}),
    ((8, 4), (1000, 1001), "shard2d:0,1", {"era": "2025-03", "stale": "previous"}),
    ((2, 4), (3, 8), "shard2d:0,1", {"era": "2024"}),
)

#: run inside each side's process: every CLI invocation (exit code, stdout, stderr) and every
#: library call (repr of the result and digests of its arrays)
CHILD = r"""
import hashlib, io, json, sys
from meshdiag.cli.app import main
from meshdiag.errors import MeshdiagError
from meshdiag.model.mesh import mesh_from_shape
from meshdiag.simulate.copy import simulate_copy

def digest(data):
    return hashlib.sha256(data).hexdigest()

def run(args):
    # main() as the installed command runs it: one-line errors on stderr, exit codes
    real = sys.stdout, sys.stderr
    out, err = io.BytesIO(), io.BytesIO()
    wrappers = [io.TextIOWrapper(b, encoding="utf-8", write_through=True) for b in (out, err)]
    sys.stdout, sys.stderr = wrappers
    try:
        main(args)
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.stdout, sys.stderr = real
        for w in wrappers:
            w.flush()
    data = out.getvalue(), err.getvalue()
    for w in wrappers:
        w.detach()
    return (code, *data)

cases, calls = json.loads(sys.argv[1])
out = []
for args in cases:
    code, o, e = run(args)
    out.append([args, code, digest(o), len(o), digest(e), e.decode()[:200]])
for mesh, shape, mapper, kw in calls:
    try:
        sim = simulate_copy(
            mesh_from_shape(tuple(mesh)), tuple(shape), mapper, symbolic=False, **kw
        )
    except MeshdiagError as e:
        out.append([[mesh, shape, mapper, kw], 2, "", 0, "", str(e)[:200]])
        continue
    h = hashlib.sha256(repr((sim.devices, sim.readback, sim.to_json())).encode())
    for dev in sorted(sim.buffers):
        h.update(str(dev).encode())
        h.update(sim.buffers[dev].tobytes())
    h.update(sim.readback_data.tobytes())
    h.update(sim.source.tobytes())
    out.append([[mesh, shape, mapper, kw], 0, h.hexdigest(), sim.readback_data.size, "", ""])
json.dump(out, sys.stdout)
"""


def spec_files(into: Path) -> dict[str, str]:
    """The per-device spec files the cases name, written once for both sides."""
    files = {
        "json8": ("specs8.json", json.dumps([[1, 1, 32, 32]] * 8)),
        "toml8": ("specs8.toml", "devices = [" + ", ".join(["[1,1,32,32]"] * 8) + "]\n"),
        "json7": ("specs7.json", json.dumps([[1, 1, 32, 32]] * 7)),
        "jsonnull": ("specsnull.json", json.dumps([[1, 1, 32, 32]] * 7 + [None])),
        "jsonholes": ("specsholes.json", json.dumps([None, [1, 1, 32, 32]] * 4)),
        "jsonrank": ("specsrank.json", json.dumps([[1, 32, 32]] * 8)),
    }
    out = {}
    for key, (name, text) in files.items():
        (into / name).write_text(text)
        out[key] = str(into / name)
    return out


def invocations(files: dict[str, str]) -> list[list[str]]:
    argv = []
    for mesh, shape, extra in CASES:
        base = ["simulate-copy", "--mesh", mesh, "--shape", shape]
        opts = list(extra)
        for key, path in files.items():
            opts = [a.replace("{" + key + "}", path) for a in opts]
        argv.append(base + opts)
        argv.append(base + opts + ["--format", "json"])
    return argv


def run_side(pythonpath: str, cases: list, calls: list) -> list:
    env = dict(os.environ, PYTHONPATH=pythonpath, COLUMNS="100")
    env.pop("MESHDIAG_DEBUG", None)
    r = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps([cases, calls])],
        env=env,
        capture_output=True,
        check=False,
        cwd=tempfile.gettempdir(),
    )
    if r.returncode:
        sys.exit(f"the comparison child failed ({pythonpath}):\n{r.stderr.decode()[-2000:]}")
    return json.loads(r.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base-rev", default="HEAD")
    ap.add_argument("--list", action="store_true", help="print the invocations and exit")
    ap.add_argument(
        "-v", "--verbose", action="store_true", help="print every invocation's exit code and error"
    )
    a = ap.parse_args()
    calls = [list(c) for c in DATA_CALLS]
    with tempfile.TemporaryDirectory(prefix="meshdiag-compare-sim-") as tmp:
        files = spec_files(Path(tmp))
        cases = invocations(files)
        if a.list:
            for args in cases:
                print("meshdiag " + " ".join(args))
            for c in calls:
                print(f"simulate_copy{tuple(c)}")
            return 0
        with tempfile.TemporaryDirectory(prefix="meshdiag-compare-") as base_dir:
            base = run_side(export_base(a.base_rev, base_dir), cases, calls)
        new = run_side(str(ROOT / "src"), cases, calls)
    if a.verbose:
        for n in new:
            print(n[1], " ".join(map(str, n[0])), "|", n[3], "bytes |", n[5].strip())
    bad = [(b, n) for b, n in zip(base, new, strict=True) if b[1:5] != n[1:5]]
    for b, n in bad:
        print(f"DIFFERS: {b[0]}: exit {b[1]} -> {n[1]}, {b[3]} -> {n[3]} bytes")
        if b[5] != n[5]:
            print(f"  stderr: {b[5]!r}\n      -> {n[5]!r}")
    codes = [n[1] for n in new]
    print(
        f"{len(new)} outputs compared with {a.base_rev} ({len(cases)} CLI invocations: "
        f"{codes[: len(cases)].count(0)} exit 0, {codes[: len(cases)].count(2)} exit 2; "
        f"{len(calls)} data-mode library calls): {len(bad)} differ"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
