"""Where `inspect -j1 DIR`'s time goes, stage by stage: each stage's cost is the difference
between two runs over the same files, one doing a stage more than the other, in fresh
processes, alternating, best of --repeat.

    .venv/bin/python bench/stage_times.py PATH ... [--suffix .mlir] [--repeat 3]

The runs, each one in-process loop over the files `inspect` reads (as a worker does,
after start-up and without rendering):

- read: every file's bytes (`read_small_file`; a big file in 1 MiB blocks)
- scan: read + the module scan of every file (`scan_bytes`, a big file's `scan_path`), no
  memo of recent files
- bookkeeping: `scan_checked` with no checks: the per-file report, checker and findings,
  and the recent-files memo, which replays a file repeating one read a little before
  instead of scanning it (so this row's increment is its cost less the scans it saves)
- checks: `scan_checked` with the module checks
- summary: as `inspect DIR` runs it (`inspect_worker.summary_batch`), the files folded into
  a `DumpSummary`

Sampling profilers (py-spy, cProfile) under-count or over-weight these many small steps;
differences of whole runs do not. `--suffix` keeps only the files whose name ends so (the
Shardy and StableHLO `.mlir` files, the HLO pass `.txt` files)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

#: in a fresh process: set up as an `inspect` worker does, then time one loop over the files
CHILD = r"""
import json, sys, tempfile, time
from meshdiag.cli import runtime
from meshdiag.cli.commands import inspect_worker as worker
from meshdiag.ir.scan import expand_paths, read_small_file, scan_bytes, scan_path
from meshdiag.model.splits import check_rule
from meshdiag.pipeline.inspect import scan_cache, scan_checked

mode, suffix, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
runtime.tune_gc()
worker.init((None, None, check_rule("xla"), False, None, tempfile.mkdtemp(), False))
st = worker._STATE
files = [p for p in expand_paths(paths) if p.endswith(suffix)]
t = time.perf_counter()
if mode == "read":
    for p in files:
        if read_small_file(p) is None:  # a big file: read in blocks, as the scan streams it
            with open(p, "rb", buffering=0) as f:
                while f.read(1 << 20):
                    pass
elif mode == "scan":
    cache = scan_cache(st["memos"])
    for p in files:
        data = read_small_file(p)
        if data is None:
            scan_path(p, cache=cache)
        else:
            scan_bytes(p, data, cache=cache)
elif mode in ("bookkeeping", "checks"):
    checks = st["checks"] if mode == "checks" else {}
    for p in files:
        scan_checked(p, None, None, st["split"], checks, None, st["memos"])
else:  # as a worker of `inspect DIR` runs its batch (`FileBatch`)
    worker.summary_batch(files)
print(json.dumps({"seconds": time.perf_counter() - t, "files": len(files)}))
"""

MODES = ("read", "scan", "bookkeeping", "checks", "summary")


def child(mode: str, suffix: str, paths: list[str]) -> dict:
    r = subprocess.run(
        [sys.executable, "-c", CHILD, mode, suffix, *paths],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(r.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--suffix", default="")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    best: dict[str, float] = {}
    files = 0
    for _ in range(args.repeat):
        for mode in MODES:  # alternating: a slow minute slows every stage alike
            r = child(mode, args.suffix, args.paths)
            best[mode] = min(best.get(mode, r["seconds"]), r["seconds"])
            files = r["files"]
    print(f"{files} files, best of {args.repeat} (seconds)")
    before = 0.0
    for mode in MODES:
        print(f"  {mode:12s} {best[mode]:6.2f}  (+{best[mode] - before:5.2f})")
        before = best[mode]


if __name__ == "__main__":
    main()
