"""Run every benchmark in sequence (`make bench`); each prints its own figures and ratios.

    .venv/bin/python bench/run_all.py [--quick]

--quick skips the big-dump benchmarks (inspect, lint), which need bench/out/dump (about
500 MB, made on first use by bench/make_big_dump.py, several minutes), and the cold ones
(whole commands, and the scanner alone native vs Python), which need bench/out/cold (300 MB of distinct programs) and bench/out/cold.mlir (one
300 MB file), made on first use by bench/make_cold_dumps.py (longer: every program is
compiled).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
QUICK = ("bench_layout.py", "bench_simulate.py")
BIG = (
    "bench_inspect.py",
    "bench_lint.py",
    "bench_fastscan.py",
    "bench_cold.py",
    "bench_scan_modes.py",
)
#: arguments of the benchmarks that take their inputs on the command line
ARGS = {"bench_scan_modes.py": [str(HERE / "out" / "cold"), str(HERE / "out" / "cold.mlir")]}


def main() -> int:
    quick = "--quick" in sys.argv[1:]
    if not quick and not (HERE / "out" / "dump").is_dir():
        print("== making bench/out/dump (once)", flush=True)
        subprocess.run([sys.executable, str(HERE / "make_big_dump.py")], check=True)
    if not quick and not (HERE / "out" / "cold").is_dir():
        print("== making bench/out/cold (once)", flush=True)
        subprocess.run([sys.executable, str(HERE / "make_cold_dumps.py")], check=True)
    if not quick and not (HERE / "out" / "cold.mlir").is_file():
        print("== making bench/out/cold.mlir (once)", flush=True)
        cmd = [sys.executable, str(HERE / "make_cold_dumps.py"), "--single-mlir", "300"]
        subprocess.run(cmd, check=True)
    failed = []
    for name in QUICK + (() if quick else BIG):
        print(f"\n== {name}", flush=True)
        if subprocess.run([sys.executable, str(HERE / name), *ARGS.get(name, [])]).returncode != 0:
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
