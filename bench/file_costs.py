"""What a file costs `inspect -j1 DIR`: new files, replayed files and the per-file floor.

Files read anew against files replayed from one read a little before, and of the files
read anew, their module checks, their part of the directory summary (the rows of modules
not seen before among it) and keeping them for later replays; all files by the suffix of
their name (HLO pass `.txt`, Shardy and StableHLO `.mlir`, ...); besides, the cost of a
file whose every line and module the run knows.

    .venv/bin/python bench/file_costs.py PATH ... [--repeat 3] [--floor [FILE]] [--detail]

One fresh process a round (set up as an `inspect` worker is, after start-up, without the
report), each file folded into a `DumpSummary` as `inspect DIR` folds it, the best round
shown. The parts are timed around the calls that make them (`time.perf_counter`, about
0.1 us a call: the per-file figures carry that much), so they add up to less than the whole;
`bench/stage_times.py` tells the stages apart by differences of whole runs instead.

`--floor [FILE]`: the same loop over 2,000 copies of FILE (alone: of the first HLO pass file
of PATHs), each with a first line of its own length (`// xxx...`), so that no copy is
replayed (its bytes are new) while every line and module in it is known from the first:
what a file costs however much the run has learned.

`--detail`: besides, each line the scan had to read itself (`_line`: the walker did not
know it; `plain?`: offered to the plain-line reader first) by its first word (`instruction`
for an HLO one), and each module check by its rule, with calls, time a call and in all, by
file suffix: where a kind of file's time goes, e.g. the `.mlir` passes' new signatures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, os, sys, tempfile, time
from collections import Counter
from meshdiag.cli import runtime
from meshdiag.cli.commands import inspect_worker as worker
from meshdiag.ir.scan import expand_paths, read_ahead
from meshdiag.model.splits import check_rule
from meshdiag.pipeline import dump_summary, inspect as pin
from meshdiag.pipeline.dump_summary import DumpSummary, FileFold
from meshdiag.pipeline.inspect import Inspected
from meshdiag.memo import Recent

runtime.tune_gc()
worker.init((None, None, check_rule("xla"), False, None, tempfile.mkdtemp(), False))
cost = {}  # where time went -> [calls, seconds]: a part by its name, a detail by (suffix, what)
suffix = [""]  # the file being read's name suffix

def timed(fn, key):  # `fn`, each call's time added to `cost[key(*args)]`
    def call(*args, **kw):
        k = key(*args)
        t = time.perf_counter()
        try:
            return fn(*args, **kw)
        finally:
            got = cost.get(k)
            if got is None:
                got = cost[k] = [0, 0.0]
            got[0] += 1
            got[1] += time.perf_counter() - t
    return call

def part(name):
    return lambda *args: name

pin.ModuleChecker.check = timed(pin.ModuleChecker.check, part("checks"))
FileFold.module = timed(FileFold.module, part("summary fold"))
dump_summary._module_rows = timed(dump_summary._module_rows, part("  rows of new modules"))
Recent.put = timed(Recent.put, part("kept for replays"))
replayed = [False]
replay = pin.Scanned.replay
def replaying(self, path, each):
    replayed[0] = True
    return replay(self, path, each)
pin.Scanned.replay = replaying

if os.environ.get("FILE_COSTS_DETAIL"):
    import re
    from meshdiag.ir import linememo, scan
    from meshdiag.checks import registry

    first_word = re.compile(rb"\s*(ROOT\s+)?(%[\w.#:\-]+\s*=\s*)?\x22?([\w.\-]+)")

    def line_kind(label):
        def key(b, raw, lineno):
            m = first_word.match(raw)
            word = m.group(3).decode("ascii", "replace") if m else "?"
            if m and m.group(2) and b.module is not None and b.module.dialect == "hlo":
                word = "instruction"
            return suffix[0], f"{label} {'ROOT ' if m and m.group(1) else ''}{word}"
        return key

    # each line the walker stops at is offered to `read_plain` first, then to `_line`
    scan._line = timed(scan._line, line_kind("new line"))
    linememo.read_plain = timed(linememo.read_plain, line_kind("plain?"))
    pin.run_check = timed(registry.run_check, lambda code, *_: (suffix[0], f"check {code}"))

files = list(expand_paths(sys.argv[1:]))
read = list(read_ahead(files))  # (read first: `stage_times.py` tells reading apart)
whole = {"new": 0.0, "replayed": 0.0}
count = {"new": 0, "replayed": 0}
parts = Counter()
by_kind = {}  # file name suffix -> [files, bytes, seconds]
s = DumpSummary()
memos = worker._STATE["memos"]
def spent():
    return Counter({k: v[1] for k, v in cost.items() if isinstance(k, str)})

for path, data in read:
    before = spent()
    replayed[0] = False
    suffix[0] = os.path.splitext(path)[1]
    t = time.perf_counter()
    fold = s.fold(path, None, memos)
    report, _, findings = worker._scan(path, fold.module, data=data)
    s.end(fold, Inspected(report, findings))
    kind = "replayed" if replayed[0] else "new"
    took = time.perf_counter() - t
    whole[kind] += took
    row = by_kind.setdefault(suffix[0], [0, 0, 0.0])
    row[0] += 1
    row[1] += len(data or b"")
    row[2] += took
    count[kind] += 1
    if kind == "new":
        parts.update(spent() - before)
detail = [[*k, *v] for k, v in cost.items() if not isinstance(k, str)]
print(json.dumps({"whole": whole, "count": count, "parts": parts, "by_kind": by_kind, "detail": detail}))
"""


#: the parts of a new file's cost, as the child names them (the rows are part of the fold)
PARTS = ("checks", "summary fold", "  rows of new modules", "kept for replays")


def child(paths: list[str], detail: bool = False) -> dict:
    env = {**os.environ, "FILE_COSTS_DETAIL": "1" if detail else ""}
    r = subprocess.run(
        [sys.executable, "-c", CHILD, *paths], capture_output=True, text=True, check=True, env=env
    )
    return json.loads(r.stdout)


def floor_copies(src: Path, into: Path, n: int = 2000) -> None:
    """`n` copies of `src`, each after a first line of its own length (new bytes, known
    lines)."""
    body = src.read_bytes()
    for k in range(n):
        (into / f"copy{k:05d}{src.suffix}").write_bytes(b"// " + b"x" * (k + 1) + b"\n" + body)


def first_pass_file(paths: list[str]) -> str | None:
    """The first `.txt` file a walk of `paths` gives, as `inspect` walks them."""
    from meshdiag.ir.scan import expand_paths

    return next((p for p in expand_paths(paths) if p.endswith(".txt")), None)


def show(r: dict) -> None:
    for kind in ("new", "replayed"):
        n, sec = r["count"][kind], r["whole"][kind]
        per = sec / n * 1e6 if n else 0.0
        print(f"  {kind + ' files':16s} {n:7d}  {sec:6.2f} s  {per:7.1f} us a file")
        if kind == "new":
            for part in PARTS:
                print(f"    {part:26s} {r['parts'].get(part, 0.0):6.2f} s")
    total = sum(r["whole"].values()) or 1.0
    print("  by kind of file (name suffix), new and replayed:")
    for kind, (n, nbytes, sec) in sorted(r["by_kind"].items(), key=lambda kv: -kv[1][2]):
        print(
            f"    {kind or '(none)':16s} {n:7d} files {nbytes / 1e6:7.1f} MB"
            f"  {sec:6.2f} s ({sec / total:4.0%})  {sec / n * 1e6:7.1f} us a file"
        )
    if r["detail"]:
        print("  the line handlers' and module checks' share (--detail), by suffix, top 24:")
        for kind, what, n, sec in sorted(r["detail"], key=lambda row: -row[3])[:24]:
            print(
                f"    {kind or '(none)':8s} {what:42s} {n:7d} x {sec / n * 1e6:7.1f} us"
                f"  {sec:6.3f} s"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--detail",
        action="store_true",
        help="also time each new line by its first word and each module check by its rule "
        "(a timer per call: slower, and the parts above grow with it)",
    )
    ap.add_argument(
        "--floor",
        nargs="?",
        const="",
        type=str,
        help="a file whose copies measure the floor (alone: the first HLO pass file of PATHs)",
    )
    args = ap.parse_args()
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:  # (a walk of nothing would time nothing and say so in zeros)
        ap.error(f"no such file or directory: {', '.join(missing)}")
    if args.floor == "":
        args.floor = first_pass_file(args.paths)
        if args.floor is None:
            ap.error("no HLO pass file (*.txt) in PATHs: name one after --floor")
    if args.floor is not None:
        args.floor = Path(args.floor)
        if not args.floor.is_file():
            ap.error(f"--floor {args.floor}: not a file")
    if not args.paths and args.floor is None:
        ap.error("name PATHs, or --floor FILE")
    with tempfile.TemporaryDirectory() as tmp:
        runs = []
        if args.paths:
            runs.append((" ".join(args.paths), args.paths))
        if args.floor is not None:
            floor_copies(args.floor, Path(tmp))
            runs.append((f"the floor, 2,000 copies of {args.floor.name}", [tmp]))
        for title, paths in runs:
            best = min(
                (child(paths, args.detail) for _ in range(args.repeat)),
                key=lambda r: sum(r["whole"].values()),
            )
            print(f"{title}: best of {args.repeat}, {sum(best['whole'].values()):.2f} s")
            show(best)


if __name__ == "__main__":
    main()
