"""Check that a change kept `inspect` and `lint` output byte-identical: run the same commands
with this tree's meshdiag and with another revision's, and compare stdout and exit codes.

    .venv/bin/python bench/compare_outputs.py [--base-rev HEAD] [PATH ...]

The base revision's `src/` is exported with `git archive` into a temporary directory (the
native scanner is copied from this tree, or built there when the base's C sources differ)
and run with that on PYTHONPATH. Each side runs every command in one process through
click's test runner (fast: one start-up per side).
PATHs default to every fixture file and dump directory; pass a cold dump or a big file too.
Exit 1 and the differing commands when any output differs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: per path: (arguments before the path)
COMMANDS = (
    ("inspect", "-j1", "-q"),
    ("inspect", "-j1", "-q", "--format", "json"),
    ("inspect", "-j1", "-q", "--format", "json", "--layouts"),
    ("inspect", "-j1", "-q", "--mesh", "batch=2,model=4", "--target", "tt-mlir"),
    ("inspect", "-q", "--format", "json", "--mesh", "batch=2,model=4", "--target", "tt-mlir"),
    ("lint", "--jobs", "1"),
    ("lint", "--jobs", "1", "--output-format", "json", "--mesh", "batch=2,model=4"),
    # every collective check speaking: a budget, a global mesh, every all-gather big enough
    (
        "lint",
        "--jobs",
        "1",
        "--output-format",
        "json",
        "--mesh",
        "batch=2,model=4",
        "--collective-budget",
        "1KiB",
        "--remat-min-bytes",
        "1",
    ),
)

#: run inside each side's process: every command, each output's digest and size
CHILD = r"""
import hashlib, json, sys
from typer.testing import CliRunner
try:
    from meshdiag.cli.app import build_app  # the layered tree
except ImportError:
    from meshdiag.cli import build_app  # before the restructure (cli.py)
runner = CliRunner()
out = []
for args in json.loads(sys.argv[1]):
    r = runner.invoke(build_app(args[0]), args)
    data = r.stdout_bytes
    out.append([args, r.exit_code, hashlib.sha256(data).hexdigest(), len(data)])
json.dump(out, sys.stdout)
"""


def default_paths() -> list[str]:
    fx = ROOT / "fixtures"
    files = sorted(str(p) for p in fx.rglob("*") if p.is_file() and p.suffix != ".py")
    files = [f for f in files if not f.endswith(("MANIFEST.json", ".textproto"))]
    dirs = sorted(str(p) for p in (fx / "xla_dump").iterdir() if p.is_dir())
    return files + dirs


def run_side(pythonpath: str, argv: list[list[str]]) -> list:
    env = dict(os.environ, PYTHONPATH=pythonpath, COLUMNS="100")
    env.pop("MESHDIAG_DEBUG", None)
    r = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(argv)],
        env=env,
        capture_output=True,
        check=True,
        cwd=tempfile.gettempdir(),
    )
    return json.loads(r.stdout)


def export_base(rev: str, into: str) -> str:
    """`rev`'s src/ under `into`, with its native scanner: this tree's built one when the C
    sources are the same, else its own, built there (the two sides' Python and C must
    agree: a C change would make the base fail or differ for nothing)."""
    same_c = (
        subprocess.run(
            [
                "git",
                "-C",
                str(ROOT),
                "diff",
                "--quiet",
                rev,
                "--",
                "src/meshdiag/ir/fast",
                "setup.py",
            ]
        ).returncode
        == 0
    )
    # (building needs the packaging files setup.py reads its metadata from)
    what = ["src"] if same_c else ["src", "setup.py", "pyproject.toml", "PYPI.md", "LICENSE"]
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, *what], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)
    if not same_c:
        subprocess.run(
            [sys.executable, "setup.py", "build_ext", "--inplace"],
            cwd=into,
            check=True,
            capture_output=True,
        )
        return str(Path(into) / "src")
    # the native scanner where the base revision looks for it (ir/fast/ since the layered
    # tree, ir/ before); without it the base runs its Python twin (same output, slower)
    ir = Path(into) / "src" / "meshdiag" / "ir"
    dest = ir / "fast" if (ir / "fast").is_dir() else ir
    for so in (ROOT / "src" / "meshdiag" / "ir").rglob("_fastscan*.so"):
        shutil.copy(so, dest / so.name)
    return str(Path(into) / "src")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base-rev", default="HEAD")
    ap.add_argument("paths", nargs="*")
    a = ap.parse_args()
    paths = [os.path.abspath(p) for p in (a.paths or default_paths())]
    argv = [[*cmd, p] for p in paths for cmd in COMMANDS]
    with tempfile.TemporaryDirectory(prefix="meshdiag-compare-") as tmp:
        base = run_side(export_base(a.base_rev, tmp), argv)
    new = run_side(str(ROOT / "src"), argv)
    bad = [(b, n) for b, n in zip(base, new, strict=True) if b[1:] != n[1:]]
    for b, n in bad:
        print(f"DIFFERS: meshdiag {' '.join(b[0])}: exit {b[1]} -> {n[1]}, {b[3]} -> {n[3]} bytes")
    print(f"{len(argv)} outputs compared with {a.base_rev}: {len(bad)} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
