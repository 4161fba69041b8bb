"""pydantic stays off the start-up and the scan: `meshdiag --help`, `inspect` and `lint` over
dumps never import meshdiag's pydantic models (`MODELS`, `meshdiag.contracts`), in the
parent or in a worker (`-X importtime` is inherited by the workers and reports their
imports on the same stderr), nor pydantic itself (typer 0.29+ builds its parameter
validators with pydantic when a command runs, but for the plain values `cli.plain_params`
takes as they are). Reading a config file does import the models, which shows the check
can see them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def imported(args: list[str], cwd: Path = ROOT) -> set[str]:
    """Modules the meshdiag run imported, in any of its processes: their full names and
    their top-level packages."""
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
            name = line.rsplit("|", 1)[1].strip()
            names.update((name, name.split(".")[0]))
    assert "meshdiag" in names  # the import report was read
    return names


def test_help_does_not_import_pydantic() -> None:
    assert "pydantic" not in imported(["--help"])


#: meshdiag's pydantic modules (`inputs/mesh_input.py`, which reads a mesh given as text, is
#: plain Python and loads these only for a mapping or a file; `inputs/problems.py` imports
#: pydantic only to validate)
MODELS = ("meshdiag.inputs.config_model", "meshdiag.inputs.mesh_model")


def _models(names: set[str]) -> set[str]:
    return {n for n in names if n.startswith(("meshdiag.contracts", *MODELS))}


def test_inspect_and_lint_scans_do_not_import_pydantic() -> None:
    # typer 0.29+ would coerce every parameter through pydantic: `cli.plain_params` takes
    # plain values as they are (tests/test_plain_params.py)
    assert "pydantic" not in imported(["rule", "MD101"])
    mesh = ["--mesh", "batch=2,model=4", "--target", "tt-mlir"]
    for args in (
        ["inspect", "fixtures", "-j", "2", "-f", "json", "--layouts", *mesh],
        ["inspect", "fixtures/seed", "-j", "1", *mesh],
        ["lint", "fixtures", "--isolated", "-j", "2", "-f", "json", *mesh],
    ):
        got = imported(args)
        assert "numpy" in got or args[0] == "lint"
        assert not _models(got), args
        assert "pydantic" not in got, args


def test_a_plain_config_is_read_without_the_models(tmp_path) -> None:
    """A config of plain values is read as it is (`inputs/plain_config.py`); one with a
    mesh table is validated by the models, which shows the check can see them."""
    (tmp_path / "d.mlir").write_text((ROOT / "fixtures/seed/fixed_mesh.mlir").read_text())
    config = tmp_path / "meshdiag.toml"
    config.write_text('fail-on = "error"\nmesh = "batch=2,model=4"\nselect = ["MD1"]\n')
    got = imported(["lint", "d.mlir", "-j", "1"], cwd=tmp_path)
    assert "pydantic" not in got and not _models(got)
    config.write_text('fail-on = "error"\n[mesh]\naxes = {batch = 2, model = 4}\n')
    got = imported(["lint", "d.mlir", "-j", "1"], cwd=tmp_path)
    assert "pydantic" in got and _models(got)
