"""Cold benchmark: `meshdiag inspect` and `lint` on inputs whose every program is distinct.

    .venv/bin/python bench/make_cold_dumps.py                     # once: bench/out/cold
    .venv/bin/python bench/make_cold_dumps.py --single-mlir 300   # once: bench/out/cold.mlir
    .venv/bin/python bench/bench_cold.py [PATH ...] [--repeat N]
    .venv/bin/python bench/bench_cold.py [PATH ...] --against REV [--repeat N] [--diff]

For each PATH (default: whichever of bench/out/cold and bench/out/cold.mlir exist), in one
run: `grep -rc sharding PATH` (the physical limit: one pass over the bytes; its output,
like every command's, goes to a file, not /dev/null, where GNU grep stops at each file's
first match), then
`meshdiag inspect -j1`, `inspect` on all cores, `inspect -j1 --format json` and `lint`;
with --diff also `diff PATH PATH` in text and JSON (both dumps read: grep's pass over
the bytes once stands for half of it).
Every measurement is a fresh process (nothing memoised from an earlier run: cold), started
by a fresh helper process that reports its own RUSAGE_CHILDREN peak RSS, so each figure is
the largest process of that one command (for several workers: the biggest worker or the
parent, not their sum). The ratio is to grep's time in the same run; every command reads
the files from the page cache (a first, unmeasured grep warms it). With --repeat N each
is run N times, the best shown with the worst.

With --against REV, every command runs N rounds alternating between REV's src/ (exported
with `git archive`, with this tree's native scanner, or its own built there when its C
sources differ: `compare_outputs.export_base`) and this tree's: this machine's speed
drifts by up to a third between minutes, so a change is judged by sides measured side by
side. Per side: the best and the median time, each a ratio to the best grep of the run,
the median CPU (user + system of the whole process tree, and the system part) and the
peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MESHDIAG = str(ROOT / ".venv" / "bin" / "meshdiag")

#: run in a fresh process: the command, its time and the peak RSS of its process tree's
#: largest process. Its output goes to a file: GNU grep whose output is /dev/null stops
#: reading each file at its first match (nobody reads the count), 0.20 s instead of 0.26 s
#: over the cold dumps and nothing at all of the big file: not the counting it stands for.
#: What earlier runs wrote is flushed to disk first: the big file's JSON (340 MB) took
#: 2.7-5.8 s instead of 1.4 s in runs that came while other such outputs were being
#: written back, the extra all system time (user time stayed at 1.2 s)
MEASURE = r"""
import json, os, resource, subprocess, sys, tempfile, time
os.sync()
t = time.perf_counter()
with tempfile.TemporaryFile() as out:
    rc = subprocess.run(sys.argv[1:], stdout=out, stderr=subprocess.DEVNULL).returncode
dt = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = ru.ru_utime + ru.ru_stime
print(json.dumps({"seconds": dt, "cpu": cpu, "sys": ru.ru_stime, "rss_mb": ru.ru_maxrss / 1024, "rc": rc}))
"""


def measure(cmd: list[str], env: dict | None = None) -> dict:
    r = subprocess.run(
        [sys.executable, "-c", MEASURE, *cmd], capture_output=True, text=True, check=True, env=env
    )
    return json.loads(r.stdout)


def best(cmd: list[str], repeat: int) -> dict:
    runs = [measure(cmd) for _ in range(repeat)]
    return min(runs, key=lambda r: r["seconds"]) | {"worst": max(r["seconds"] for r in runs)}


def size_of(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def commands(path: str, diff: bool = False) -> list[tuple[str, list[str]]]:
    out = [
        ("grep -rc sharding", ["grep", "-rc", "sharding", path]),
        ("inspect -j1", [MESHDIAG, "inspect", "-q", "-j1", path]),
        ("inspect (all cores)", [MESHDIAG, "inspect", "-q", path]),
        ("inspect -j1 --format json", [MESHDIAG, "inspect", "-q", "-j1", "--format", "json", path]),
        ("lint", [MESHDIAG, "lint", path]),
    ]
    if diff:
        out.append(("diff PATH PATH", [MESHDIAG, "diff", path, path]))
        out.append(("diff --format json", [MESHDIAG, "diff", "--format", "json", path, path]))
    return out


def machine() -> str:
    """The cores and the CPU the figures were measured on: the ratios to grep move with the
    machine (grep's pass over the page cache is mostly the kernel's and memchr's work,
    meshdiag's mostly the interpreter's), so a figure without its machine compares with
    nothing."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next(
                (line.split(":", 1)[1].strip() for line in f if line.startswith("model name")),
                model,
            )
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({model}), Python {platform.python_version()}"


def bench(path: Path, repeat: int, diff: bool = False) -> None:
    files = 1 if path.is_file() else sum(1 for p in path.rglob("*") if p.is_file())
    print(f"{path}: {size_of(path) / 1e6:.1f} MB, {files} files, {machine()}")
    print(f"  {'command':28} {'seconds':>8} {'x grep':>7} {'peak RSS':>9}")
    measure(commands(str(path))[0][1])  # page cache warm for all, grep included
    grep = None
    for label, cmd in commands(str(path), diff):
        r = best(cmd, repeat)
        if grep is None:
            grep = r["seconds"]
        spread = f"  (worst {r['worst']:.2f})" if repeat > 1 else ""
        print(
            f"  {label:28} {r['seconds']:8.2f} {r['seconds'] / grep:6.1f}x "
            f"{r['rss_mb']:6.0f} MB{spread}",
            flush=True,
        )


def against(path: Path, rev: str, rounds: int, diff: bool = False) -> None:
    """The meshdiag commands of `commands`, REV's and this tree's in turn, `rounds` times."""
    import statistics
    import tempfile

    from compare_outputs import export_base

    with tempfile.TemporaryDirectory(prefix="meshdiag-base-") as tmp:
        sides = {rev: export_base(rev, tmp), "this tree": str(ROOT / "src")}
        # every module compiled once per side before measuring (the export has no
        # bytecode yet: with only `--version` run first, each command's first round
        # compiled the modules it imports lazily, which a median of two rounds counts)
        env0 = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        envs = {name: env0 | {"PYTHONPATH": src} for name, src in sides.items()}
        cmds = [(label, cmd[1:]) for label, cmd in commands(str(path), diff)[1:]]
        for src in sides.values():
            subprocess.run([sys.executable, "-m", "compileall", "-q", src], check=True)
        print(f"{path}: {size_of(path) / 1e6:.1f} MB, {machine()}, {rounds} rounds")
        grep_cmd = commands(str(path))[0][1]
        measure(grep_cmd)  # the page cache warm
        runs: dict[tuple[str, str], list[dict]] = {}
        greps = []
        for _ in range(rounds):
            for label, args in cmds:
                for name, env in envs.items():
                    greps.append(measure(grep_cmd)["seconds"])
                    r = measure([sys.executable, "-m", "meshdiag", *args], env)
                    runs.setdefault((label, name), []).append(r)
        grep = min(greps)
        print(f"  best grep {grep:.2f} s; best / median seconds (x grep), median CPU, peak RSS")
        for label, _ in cmds:
            for name in envs:
                rs = runs[(label, name)]
                secs = [r["seconds"] for r in rs]
                b, m = min(secs), statistics.median(secs)
                cpu = statistics.median(r["cpu"] for r in rs)
                system = statistics.median(r["sys"] for r in rs)
                rss = max(r["rss_mb"] for r in rs)
                print(
                    f"  {label:26} {name:10} {b:6.2f} ({b / grep:4.1f}x) / {m:6.2f} "
                    f"({m / grep:4.1f}x)  CPU {cpu:5.2f} s (system {system:4.2f})  {rss:4.0f} MB",
                    flush=True,
                )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--against", metavar="REV", help="alternate with REV's src/ (see above)")
    ap.add_argument("--diff", action="store_true", help="also `diff PATH PATH`, text and JSON")
    a = ap.parse_args()
    paths = [Path(p) for p in a.paths] or [
        p for p in (HERE / "out" / "cold", HERE / "out" / "cold.mlir") if p.exists()
    ]
    if not paths:
        print("no input: run bench/make_cold_dumps.py first (see --help)", file=sys.stderr)
        return 2
    for p in paths:
        if a.against:
            against(p, a.against, max(a.repeat, 1), a.diff)
        else:
            bench(p, a.repeat, a.diff)
    return 0


if __name__ == "__main__":
    sys.exit(main())
