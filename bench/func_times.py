"""Where `inspect -j1 DIR`'s time goes, function by function: the time spent inside each of
the named functions (and what they call) over one in-process loop over the files, as an
`inspect` worker folds them into a `DumpSummary`, best of --repeat fresh processes.

    .venv/bin/python bench/func_times.py PATH ... -f MODULE:NAME [-f MODULE:CLASS.NAME ...]
        [--against REV] [--repeat 3]

A function is wrapped where it is looked up: `meshdiag.pipeline.dump_summary:ids_label_for`
times the calls `dump_summary` makes to the name it imported, `meshdiag.ir.devices:
ids_label_for` only those that go through `devices`. Each call costs the wrapper about
0.2 us more, which the per-call figures carry. Nested functions are each counted whole, so
the figures do not add up.

Sampling profilers over-weight the many small steps of a cold run two- to threefold (a
sample lands in whatever Python frame is current); the totals here are measured. With
`--against REV`, rounds alternate between REV's tree (its native code built for the run:
`compare_outputs.export_base`) and this one, so a change shows against the same machine
minute.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import importlib, json, sys, tempfile, time
from meshdiag.cli import runtime
from meshdiag.cli.commands import inspect_worker as worker
from meshdiag.ir.scan import expand_paths, read_ahead
from meshdiag.model.splits import check_rule
from meshdiag.pipeline.dump_summary import DumpSummary
from meshdiag.pipeline.inspect import Inspected

funcs, paths = json.loads(sys.argv[1])
runtime.tune_gc()
worker.init((None, None, check_rule("xla"), False, None, tempfile.mkdtemp(), False))
data = list(read_ahead(expand_paths(paths)))
memos = worker._STATE["memos"]
clock = time.perf_counter
spent = {f: [0, 0.0] for f in funcs}  # name -> [calls, seconds]

def wrap(owner, attr, name):
    fn = getattr(owner, attr)
    cell = spent[name]
    def timed(*args, **kw):
        t = clock()
        try:
            return fn(*args, **kw)
        finally:
            cell[0] += 1
            cell[1] += clock() - t
    setattr(owner, attr, timed)

for name in funcs:
    module, _, qual = name.partition(":")
    owner = importlib.import_module(module)
    *outer, attr = qual.split(".")
    for part in outer:
        owner = getattr(owner, part)
    wrap(owner, attr, name)

s = DumpSummary()
t = clock()
for path, raw in data:
    fold = s.fold(path, None, memos)
    report, _, findings = worker._scan(path, fold.module, data=raw)
    s.end(fold, Inspected(report, findings))
json.dump({"loop": clock() - t, "files": len(data), "spent": spent}, sys.stdout)
"""


def child(src: str, funcs: list[str], paths: list[str]) -> dict:
    env = dict(os.environ, PYTHONPATH=src)
    r = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps([funcs, paths])],
        capture_output=True,
        text=True,
        env=env,
    )
    if r.returncode:
        raise SystemExit(f"func_times: the loop failed under {src}:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout)


def best(runs: list[dict]) -> dict:
    """The best loop time and, per function, its smallest total (with that run's calls)."""
    out = {"loop": min(r["loop"] for r in runs), "files": runs[0]["files"], "spent": {}}
    for name in runs[0]["spent"]:
        out["spent"][name] = min((r["spent"][name] for r in runs), key=lambda cs: cs[1])
    return out


def show(label: str, r: dict) -> None:
    print(f"  {label}: loop {r['loop']:.3f} s over {r['files']} files")
    for name, (calls, sec) in sorted(r["spent"].items(), key=lambda kv: -kv[1][1]):
        per = sec / calls * 1e6 if calls else 0.0
        print(f"    {sec:7.3f} s {calls:9d} calls {per:8.2f} us  {name}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("-f", "--func", action="append", required=True, help="MODULE:NAME")
    ap.add_argument("--against", metavar="REV", help="alternate with REV's tree")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sides = {"this tree": str(ROOT / "src")}
        if a.against:
            sys.path.insert(0, str(ROOT / "bench"))
            from compare_outputs import export_base

            sides = {a.against: export_base(a.against, tmp), **sides}
        runs: dict[str, list[dict]] = {k: [] for k in sides}
        for _ in range(a.repeat):
            for label, src in sides.items():
                runs[label].append(child(src, a.func, a.paths))
        print(f"{' '.join(a.paths)}: best of {a.repeat}")
        for label, rs in runs.items():
            show(label, best(rs))


if __name__ == "__main__":
    main()
