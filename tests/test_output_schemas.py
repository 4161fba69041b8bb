"""`lint`'s CI outputs stay valid: SARIF against the official OASIS SARIF 2.1.0 schema and
JUnit XML against the JUnit schema Jenkins validates with (both vendored in tests/data, see
its README), for runs with findings, without findings, and with awkward file names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

jsonschema = pytest.importorskip("jsonschema")
xmlschema = pytest.importorskip("xmlschema")

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"
SEED = ROOT / "fixtures" / "seed"


@pytest.fixture(scope="module")
def sarif_validator():
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


@pytest.fixture(scope="module")
def junit_schema():
    return xmlschema.XMLSchema(str(DATA / "junit-10.xsd"))


@pytest.fixture
def tree(tmp_path):
    """Dumps with findings, a clean one, and names with spaces, '%' and non-UTF-8 bytes."""
    (tmp_path / "a dir").mkdir()
    for name in ("distorted_mesh.mlir", "distorted_mesh_gspmd.mlir"):
        (tmp_path / "a dir" / name).write_bytes((SEED / name).read_bytes())
    (tmp_path / "100%.mlir").write_bytes((SEED / "distorted_mesh.mlir").read_bytes())
    (tmp_path / os.fsdecode(b"caf\xe9.mlir")).write_bytes(
        (SEED / "distorted_mesh.mlir").read_bytes()
    )
    (tmp_path / "clean.mlir").write_text("module {\n}\n")
    return tmp_path


def lint(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "meshdiag", "lint", "--isolated", *args],
        cwd=cwd,
        capture_output=True,
        timeout=120,
    )


#: (arguments, exit status: 1 = findings, 0 = none)
RUNS = [
    (["--mesh", "batch=2,model=4", "--target", "tt-mlir", "."], 1),
    (["--mesh", "batch=2,model=4", "clean.mlir"], 0),
    (["--target", "tt-mlir", "a dir"], 1),
]
IDS = ["findings", "clean", "target-only"]


@pytest.mark.parametrize("args, status", RUNS, ids=IDS)
def test_sarif_is_valid(tree, sarif_validator, args, status):
    r = lint(tree, "--output-format", "sarif", *args)
    assert r.returncode == status, r.stderr
    doc = json.loads(r.stdout)
    errors = sorted(sarif_validator.iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]
    assert bool(doc["runs"][0]["results"]) == bool(status)


@pytest.mark.parametrize("args, status", RUNS, ids=IDS)
def test_junit_is_valid(tree, junit_schema, args, status):
    r = lint(tree, "--output-format", "junit", *args)
    assert r.returncode == status, r.stderr
    junit_schema.validate(r.stdout.decode("utf-8"))
    assert (b"<failure" in r.stdout) == bool(status)


def test_sarif_written_with_output_file_is_valid(tree, sarif_validator):
    r = lint(tree, "--mesh", "batch=2,model=4", ".", "-f", "sarif", "-o", "report.sarif")
    assert r.returncode == 1, r.stderr
    doc = json.loads((tree / "report.sarif").read_text())
    assert doc["runs"][0]["results"]
    sarif_validator.validate(doc)
