"""pydantic stays off the start-up and the scan: `meshdiag --help`, `inspect` and `lint` over
dumps never import it, in the parent or in a worker (`-X importtime` is inherited by the
workers and reports their imports on the same stderr). Reading a config file does import it,
which shows the check can see it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def imported(args: list[str], cwd: Path = ROOT) -> set[str]:
    """Top-level packages the meshdiag run imported, in any of its processes."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPROFILEIMPORTTIME"}
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "meshdiag", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert r.returncode in (0, 1), r.stderr[-2000:]
    names = set()
    for line in r.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    assert "meshdiag" in names  # the import report was read
    return names


def test_help_does_not_import_pydantic() -> None:
    assert "pydantic" not in imported(["--help"])


def test_inspect_and_lint_scans_do_not_import_pydantic() -> None:
    mesh = ["--mesh", "batch=2,model=4", "--target", "tt-mlir"]
    got = imported(["inspect", "fixtures", "-j", "2", "-f", "json", "--layouts", *mesh])
    assert "numpy" in got and "pydantic" not in got
    got = imported(["inspect", "fixtures/seed", "-j", "1", *mesh])
    assert "pydantic" not in got
    got = imported(["lint", "fixtures", "--isolated", "-j", "2", "-f", "json", *mesh])
    assert "pydantic" not in got


def test_reading_a_config_imports_pydantic(tmp_path) -> None:
    (tmp_path / "meshdiag.toml").write_text('fail-on = "error"\nmesh = "batch=2,model=4"\n')
    (tmp_path / "d.mlir").write_text((ROOT / "fixtures/seed/fixed_mesh.mlir").read_text())
    assert "pydantic" in imported(["lint", "d.mlir", "-j", "1"], cwd=tmp_path)
