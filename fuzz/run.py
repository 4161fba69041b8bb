"""Run the atheris harnesses, each for a bounded time, from the committed seed corpus.

    python fuzz/run.py                      # every target, 60 s each
    python fuzz/run.py gspmd scan -t 300    # some targets, 5 minutes each
    python fuzz/run.py scan -- -only_ascii=1   # extra libFuzzer flags

New corpus entries and crash reproducers go to a work directory (`--out`, default a fresh
temporary directory), so the committed seeds in fuzz/corpus/<target>/ stay as they are. Exit
status 1 when any harness found a crash; its reproducer path is printed. A crash becomes a
regression test in tests/test_fuzz_regressions.py and gets fixed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TARGETS = ("gspmd", "shardy", "mesh", "scan", "files", "comms")


def run_target(target: str, seconds: int, out: str, extra: list[str]) -> bool:
    """Fuzz one target; True when it finished without a crash."""
    work = os.path.join(out, target)
    corpus = os.path.join(work, "corpus")
    artifacts = os.path.join(work, "crashes") + os.sep
    os.makedirs(corpus, exist_ok=True)
    os.makedirs(artifacts, exist_ok=True)
    cmd = [
        sys.executable,
        os.path.join(HERE, "harness.py"),
        target,
        f"-max_total_time={seconds}",
        "-max_len=4096",
        "-timeout=10",
        "-rss_limit_mb=4096",
        f"-artifact_prefix={artifacts}",
        "-print_final_stats=1",
        *extra,
        corpus,  # first directory: where new inputs go
        os.path.join(HERE, "corpus", target),  # committed seeds, read only
    ]
    print(f"== fuzz {target} for {seconds}s (work dir {work})", flush=True)
    log_path = os.path.join(work, "fuzz.log")
    with open(log_path, "w") as log:
        env = dict(os.environ, MESHDIAG_FUZZ_CRASHES=artifacts)
        rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    with open(log_path, errors="replace") as log:
        lines = log.read().splitlines()
    stats = [ln for ln in lines if ln.startswith(("stat::", "Done", "#"))][-3:]
    for ln in stats:
        print("   ", ln)
    crashes = sorted(os.listdir(artifacts))
    if rc != 0 or crashes:
        print(f"   CRASH (exit {rc}); log {log_path}")
        for c in crashes:
            print(f"   reproducer: {os.path.join(artifacts, c)}")
        tail = [ln for ln in lines if "Error" in ln or "Traceback" in ln or "assert" in ln]
        for ln in tail[:5]:
            print("   ", ln)
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("targets", nargs="*", help=f"any of {', '.join(TARGETS)} (default: all)")
    ap.add_argument("-t", "--time", type=int, default=60, help="seconds per target")
    ap.add_argument("--out", help="work directory (default: a new temporary directory)")
    args, extra = ap.parse_known_args(argv)  # unknown flags (-jobs=2, ...) go to libFuzzer
    bad = [t for t in args.targets if t not in TARGETS]
    if bad:
        ap.error(f"unknown target {bad[0]!r}; choose from {', '.join(TARGETS)}")
    out = args.out or tempfile.mkdtemp(prefix="meshdiag-fuzz-")
    ok = True
    for target in args.targets or TARGETS:
        ok &= run_target(target, args.time, out, extra)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
