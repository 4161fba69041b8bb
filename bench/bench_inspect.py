"""Benchmark `meshdiag inspect` on a big real XLA dump directory, in one run, against:

- the physical limit: `grep -rc sharding DIR` over the same files;
- jaxlib's MLIR parser (`Module.parse`) on the MLIR part (the `shardy/` files);
- memory: peak RSS of the inspect process (goal < 400 MB, constant in the dump size).

    .venv/bin/python bench/make_big_dump.py        # once: bench/out/dump, >= 500 MB
    .venv/bin/python bench/bench_inspect.py [DIR] [--repeat N] [--jobs N]

With --repeat, each measurement is taken N times and the best is shown with the spread
(the machine is shared: the best run is the one least disturbed by other work).
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MESHDIAG = [str(ROOT / ".venv" / "bin" / "meshdiag")]


def timed(cmd: list[str]) -> float:
    """Seconds `cmd` takes, its output to a file (GNU grep writing to /dev/null stops at
    each file's first match: not the count it stands for)."""
    import tempfile

    t = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        subprocess.run(cmd, stdout=out, check=False)
    return time.perf_counter() - t


def size_of(files: list[Path]) -> int:
    return sum(p.stat().st_size for p in files)


def mlir_files(d: Path) -> list[Path]:
    return sorted(p for p in d.rglob("*.mlir") if p.is_file())


def jaxlib_parse(files: list[Path]) -> float:
    """Seconds jaxlib's MLIR parser takes to read and parse `files` (both sides read the
    files from the page cache: meshdiag's scan opens and reads each file too)."""
    from jax._src.interpreters import mlir

    t = time.perf_counter()
    with mlir.make_ir_context() as ctx:
        ctx.allow_unregistered_dialects = True
        for p in files:
            mlir.ir.Module.parse(p.read_text())
    return time.perf_counter() - t


def meshdiag_scan(files: list[Path]) -> float:
    """Seconds the meshdiag scanner takes over the same files, in process."""
    from meshdiag.ir.scan import scan_paths

    # every repeat starts cold, like a fresh process: scan_paths makes its own ScanCache
    t = time.perf_counter()
    for _ in scan_paths(str(p) for p in files):
        pass
    return time.perf_counter() - t


def spread(ts: list[float]) -> str:
    return f"best of {len(ts)}; spread {min(ts):.2f}-{max(ts):.2f} s" if len(ts) > 1 else ""


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("dir", nargs="?", default=str(HERE / "out" / "dump"))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=None, help="inspect --jobs (default: all cores)")
    a = ap.parse_args()
    d = Path(a.dir)
    if not d.is_dir():
        sys.exit(f"no dump at {d}; run bench/make_big_dump.py first")
    files = [p for p in d.rglob("*") if p.is_file()]
    total = size_of(files)
    print(f"dump: {d}  {total / 1e6:.0f} MB, {len(files)} files")

    # warm the page cache so both sides read from memory
    timed(["grep", "-rc", "sharding", str(d)])

    base = [*MESHDIAG, "inspect", str(d), "--quiet"]
    if a.jobs:
        base += ["--jobs", str(a.jobs)]
    # inspect first: RUSAGE_CHILDREN's peak is then the inspect processes' own. The runs
    # alternate with grep so both see the same machine (it is shared: best of N each)
    ts_text, ts_json, ts_grep = [], [], []
    for _ in range(a.repeat):
        ts_text.append(timed(base))  # the default: text summaries
        ts_json.append(timed([*base, "--format", "json"]))
        ts_grep.append(timed(["grep", "-rc", "sharding", str(d)]))
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    t_grep = min(ts_grep)
    print(
        f"grep -rc sharding:              {t_grep:6.2f} s  ({total / 1e6 / t_grep:.0f} MB/s)  {spread(ts_grep)}"
    )
    for label, ts in (
        ("meshdiag inspect (text)", ts_text),
        ("meshdiag inspect --format json", ts_json),
    ):
        t = min(ts)
        print(f"{label + ':':31} {t:6.2f} s  ({total / 1e6 / t:.0f} MB/s)  {spread(ts)}")
        print(f"  ratio to grep: {t / t_grep:.1f}x (goal <= 8x)")
    print(f"  peak RSS of the largest inspect process: {rss_mb:.0f} MB (goal < 400 MB)")

    mfiles = mlir_files(d)
    n = min(len(mfiles), 2000)
    sample = mfiles[:n]
    msize = size_of(sample)
    ts_jax = [jaxlib_parse(sample) for _ in range(a.repeat)]
    ts_ours = [meshdiag_scan(sample) for _ in range(a.repeat)]
    t_jax, t_ours = min(ts_jax), min(ts_ours)
    print(f"MLIR part: {n} files, {msize / 1e6:.1f} MB (in process, one core)")
    print(f"  jaxlib Module.parse: {t_jax:6.2f} s  {spread(ts_jax)}")
    print(f"  meshdiag scan:       {t_ours:6.2f} s  {spread(ts_ours)}")
    print(f"  speed-up vs jaxlib: {t_jax / t_ours:.1f}x (goal >= 10x)")


if __name__ == "__main__":
    main()
