"""Instructions a meshdiag command executes, this tree against another revision.

    .venv/bin/python bench/instructions.py --against REV [--runs N] -- inspect -j1 FILE

This machine's wall clock drifts by up to a third between minutes, so a change of a few
percent hides in the noise of `bench_cold.py`'s timings. Instructions do not drift: each
side runs under `valgrind --tool=callgrind` with `PYTHONHASHSEED=0` (random string hashes
change dict layouts, and so the count, by about 0.5% a run; fixed, a run repeats within
0.05%), the base side from REV's src/ (`compare_outputs.export_base`, with its own native
code when its C sources differ), each side's bytecode compiled by a first, uncounted run.
Prints each side's count (the lowest of `--runs`) and the change. Instructions are not
time (cache misses, branch mispredictions): judge a change by both. Needs valgrind (the
Debian package); the command's output goes to /dev/null.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PYTHON = str(ROOT / ".venv" / "bin" / "python")

sys.path.insert(0, str(HERE))
from compare_outputs import export_base  # noqa: E402


def _env(src: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONHASHSEED"] = "0"
    if src is not None:
        env["PYTHONPATH"] = src
    return env


def count(args: list[str], src: str | None) -> int:
    """Instructions of `python -m meshdiag ARGS` (from `src`, or this tree)."""
    env = _env(src)
    cmd = [PYTHON, "-m", "meshdiag", *args]
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        r = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *cmd],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
    m = re.search(r"Collected : (\d+)", r.stderr)
    if m is None:
        raise SystemExit(f"instructions.py: callgrind gave no count: {r.stderr[-500:]}")
    return int(m.group(1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--against", required=True, metavar="REV")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    args = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not args:
        p.error("give the meshdiag command after --")
    if shutil.which("valgrind") is None:
        raise SystemExit("instructions.py: needs valgrind (apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as base:
        export_base(a.against, base)
        src = os.path.join(base, "src")
        sides = {
            a.against: min(count(args, src) for _ in range(a.runs)),
            "this tree": min(count(args, None) for _ in range(a.runs)),
        }
    before, after = sides.values()
    for name, n in sides.items():
        print(f"{name:>12}  {n / 1e9:.3f} G instructions")
    print(f"{'change':>12}  {100 * (after - before) / before:+.2f}%  (meshdiag {' '.join(args)})")


if __name__ == "__main__":
    main()
