"""The scanner alone, cold, both ways: with the native walker and with its Python twin
(MESHDIAG_PURE_PYTHON=1), each in a fresh process, on the same paths.

    .venv/bin/python bench/bench_scan_modes.py PATH ... [--repeat 3]

Prints seconds (best of --repeat) and rows scanned per mode, and `grep -rc sharding` in
the same run for scale. Whether the native pass still pays on content never seen before
is this ratio (bench_cold.py measures whole commands)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

#: in a fresh process: import what a scan needs, then time one cold scan of the paths
CHILD = r"""
import json, sys, time
import meshdiag.notation.gspmd, meshdiag.notation.shardy, meshdiag.model.named_to_tiled  # not timed
from meshdiag.ir.lines import scanner_kind
from meshdiag.ir.scan import expand_paths, scan_paths
files = list(expand_paths(sys.argv[1:]))
t = time.perf_counter()
rows = sum(len(m.items) for r in scan_paths(files) for m in r.modules)
print(json.dumps({"seconds": time.perf_counter() - t, "rows": rows, "kind": scanner_kind()}))
"""


def child(paths: list[str], pure: bool) -> dict:
    env = dict(os.environ)
    env.pop("MESHDIAG_PURE_PYTHON", None)
    if pure:
        env["MESHDIAG_PURE_PYTHON"] = "1"
    r = subprocess.run(
        [sys.executable, "-c", CHILD, *paths], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(r.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    subprocess.run(["grep", "-rc", "sharding", *a.paths], capture_output=True)  # page cache
    t = time.perf_counter()
    subprocess.run(["grep", "-rc", "sharding", *a.paths], capture_output=True)
    grep = time.perf_counter() - t
    print(f"grep -rc sharding: {grep:.3f} s")
    for pure in (False, True):
        runs = [child(a.paths, pure) for _ in range(a.repeat)]
        best = min(runs, key=lambda r: r["seconds"])
        print(
            f"scan ({best['kind']}): {best['seconds']:.3f} s ({best['seconds'] / grep:.1f}x grep), "
            f"{best['rows']} rows"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
