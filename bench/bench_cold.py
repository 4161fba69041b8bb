"""Cold benchmark: `meshdiag inspect` and `lint` on inputs whose every program is distinct.

    .venv/bin/python bench/make_cold_dumps.py                     # once: bench/out/cold
    .venv/bin/python bench/make_cold_dumps.py --single-mlir 300   # once: bench/out/cold.mlir
    .venv/bin/python bench/bench_cold.py [PATH ...] [--repeat N]

For each PATH (default: whichever of bench/out/cold and bench/out/cold.mlir exist), in one
run: `grep -rc sharding PATH` (the physical limit: one pass over the bytes), then
`meshdiag inspect -j1`, `inspect` on all cores, `inspect -j1 --format json` and `lint`.
Every measurement is a fresh process (nothing memoised from an earlier run: cold), started
by a fresh helper process that reports its own RUSAGE_CHILDREN peak RSS, so each figure is
the largest process of that one command (for several workers: the biggest worker or the
parent, not their sum). The ratio is to grep's time in the same run; every command reads
the files from the page cache (a first, unmeasured grep warms it). With --repeat N each
is run N times, the best shown with the worst.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MESHDIAG = str(ROOT / ".venv" / "bin" / "meshdiag")

#: run in a fresh process: the command, its time and the peak RSS of its process tree's
#: largest process
MEASURE = r"""
import json, os, resource, subprocess, sys, time
t = time.perf_counter()
with open(os.devnull, "wb") as null:
    rc = subprocess.run(sys.argv[1:], stdout=null, stderr=null).returncode
dt = time.perf_counter() - t
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
print(json.dumps({"seconds": dt, "rss_mb": rss / 1024, "rc": rc}))
"""


def measure(cmd: list[str]) -> dict:
    r = subprocess.run(
        [sys.executable, "-c", MEASURE, *cmd], capture_output=True, text=True, check=True
    )
    return json.loads(r.stdout)


def best(cmd: list[str], repeat: int) -> dict:
    runs = [measure(cmd) for _ in range(repeat)]
    return min(runs, key=lambda r: r["seconds"]) | {"worst": max(r["seconds"] for r in runs)}


def size_of(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def commands(path: str) -> list[tuple[str, list[str]]]:
    return [
        ("grep -rc sharding", ["grep", "-rc", "sharding", path]),
        ("inspect -j1", [MESHDIAG, "inspect", "-q", "-j1", path]),
        ("inspect (all cores)", [MESHDIAG, "inspect", "-q", path]),
        ("inspect -j1 --format json", [MESHDIAG, "inspect", "-q", "-j1", "--format", "json", path]),
        ("lint", [MESHDIAG, "lint", path]),
    ]


def bench(path: Path, repeat: int) -> None:
    files = 1 if path.is_file() else sum(1 for p in path.rglob("*") if p.is_file())
    print(f"{path}: {size_of(path) / 1e6:.1f} MB, {files} files, {os.cpu_count()} cores")
    print(f"  {'command':28} {'seconds':>8} {'x grep':>7} {'peak RSS':>9}")
    measure(commands(str(path))[0][1])  # page cache warm for all, grep included
    grep = None
    for label, cmd in commands(str(path)):
        r = best(cmd, repeat)
        if grep is None:
            grep = r["seconds"]
        spread = f"  (worst {r['worst']:.2f})" if repeat > 1 else ""
        print(
            f"  {label:28} {r['seconds']:8.2f} {r['seconds'] / grep:6.1f}x "
            f"{r['rss_mb']:6.0f} MB{spread}",
            flush=True,
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    paths = [Path(p) for p in a.paths] or [
        p for p in (HERE / "out" / "cold", HERE / "out" / "cold.mlir") if p.exists()
    ]
    if not paths:
        print("no input: run bench/make_cold_dumps.py first (see --help)", file=sys.stderr)
        return 2
    for p in paths:
        bench(p, a.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
