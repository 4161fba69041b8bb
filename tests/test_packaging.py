"""The package PyPI gets: license metadata, one version, py.typed, a standalone description,
wheel-building config, an sdist whose tests can run, and a CLI on current typer."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import shlex
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest

import meshdiag
from meshdiag.cli.app import build_app, invoked_command, version_text
from meshdiag.cli.commands import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]


def test_license_file_and_spdx_metadata():
    text = (ROOT / "LICENSE").read_text()
    assert PROJECT["license"] == "Apache-2.0"  # an SPDX expression, not a table
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert PROJECT["license-files"] == ["LICENSE"]
    build_req = PYPROJECT["build-system"]["requires"]
    assert any(
        re.fullmatch(r"setuptools>=(\d+)", r) and int(r.split(">=")[1]) >= 77 for r in build_req
    )


def test_classifiers_and_urls():
    classifiers = PROJECT["classifiers"]
    assert all(re.fullmatch(r"[A-Z][^:]*( :: [^:]+)+", c) for c in classifiers)
    assert "Typing :: Typed" in classifiers
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert not any(c.startswith("License ::") for c in classifiers)  # SPDX `license` instead
    urls = PROJECT["urls"]
    assert {"Homepage", "Source", "Issues"} <= set(urls)
    assert all(u.startswith("https://") for u in urls.values())


def test_version_lives_in_one_place():
    assert "version" not in PROJECT and "version" in PROJECT["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "meshdiag.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", meshdiag.__version__)
    hardcoded = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "src").rglob("*.py")
        if p.name != "__init__.py" and f'"{meshdiag.__version__}"' in p.read_text()
    ]
    assert hardcoded == []


def test_py_typed_is_shipped():
    assert (ROOT / "src" / "meshdiag" / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["meshdiag"]


def test_version_names_the_scanner():
    native = subprocess.run(
        [sys.executable, "-m", "meshdiag", "--version"], capture_output=True, text=True
    )
    pure = subprocess.run(
        [sys.executable, "-m", "meshdiag", "--version"],
        capture_output=True,
        text=True,
        env={**os.environ, "MESHDIAG_PURE_PYTHON": "1"},
    )
    assert native.returncode == pure.returncode == 0
    built = importlib.util.find_spec("meshdiag.ir.fast._fastscan") is not None
    expected = "native" if built else "pure Python, the native extension is not built"
    assert native.stdout == f"meshdiag {meshdiag.__version__} (scanner: {expected})\n"
    assert pure.stdout.strip().endswith("(scanner: pure Python, MESHDIAG_PURE_PYTHON is set)")
    assert version_text() in (native.stdout.strip(), pure.stdout.strip())


# -- the PyPI description -------------------------------------------------------------------

DESCRIPTION = ROOT / PROJECT["readme"]


def test_pypi_description_is_standalone():
    text = DESCRIPTION.read_text()
    links = re.findall(r"\]\(([^)]+)\)", text)
    assert all(link.startswith("https://") for link in links), links
    for local in ("fixtures/", "tests/", "docs/", "../", ".venv", "src/"):
        assert local not in text, local
    assert not re.search(r"^\$? ?make \w", text, re.M)  # no make targets: a clone's tools


def _doc_commands(text: str) -> list[tuple[str, str]]:
    """(command, the line the doc shows right after it) for every `$ meshdiag ...` line."""
    lines = text.splitlines()
    return [
        (line[2:], lines[i + 1]) for i, line in enumerate(lines) if line.startswith("$ meshdiag ")
    ]


def test_pypi_description_commands_run_as_shown(tmp_path):
    text = DESCRIPTION.read_text()
    mlir = re.search(r"```mlir\n(.*?)```", text, re.S)
    assert mlir is not None
    (tmp_path / "dump.mlir").write_text(mlir.group(1))
    commands = _doc_commands(text)
    assert len(commands) >= 5
    for command, first_line in commands:
        argv = shlex.split(command)
        run = subprocess.run(
            [sys.executable, "-m", "meshdiag", *argv[1:]],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "COLUMNS": "100"},
        )
        assert run.returncode in (0, 1), (command, run.stderr)
        assert run.stderr == ""
        if first_line != "...":
            assert " ".join(first_line.split()) in " ".join(run.stdout.split()), command


# -- wheels ---------------------------------------------------------------------------------


def test_cibuildwheel_config_and_workflow():
    cibw = PYPROJECT["tool"]["cibuildwheel"]
    assert "cp311-*" in cibw["build"]
    tests = " && ".join(cibw["test-command"])
    assert "meshdiag --version" in tests and "scanner_kind() == 'native'" in tests
    workflow = (ROOT / ".github" / "workflows" / "wheels.yml").read_text()
    assert "pypa/cibuildwheel@" in workflow
    assert "python -m build --sdist" in workflow and "twine check" in workflow
    # the C scanner is built into the wheels
    assert "_fastscan.c" in (ROOT / "setup.py").read_text()


# -- the sdist ------------------------------------------------------------------------------


def _repo_files(*tops: str) -> set[str]:
    out = set()
    for top in tops:
        for p in (ROOT / top).rglob("*"):
            rel = p.relative_to(ROOT)
            if p.is_file() and "__pycache__" not in rel.parts and p.suffix not in (".pyc", ".so"):
                if rel.parts[:2] != ("bench", "out"):
                    out.add(str(rel))
    return out


def test_sdist_carries_what_its_tests_need(tmp_path):
    """Builds the sdist (setuptools' PEP 517 backend, as `python -m build --sdist` does),
    unpacks it and checks the files the test suite reads are there."""
    out = tmp_path / "dist"
    out.mkdir()
    build = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from setuptools import build_meta as b; print(b.build_sdist(sys.argv[1]))",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    name = build.stdout.strip().splitlines()[-1]
    assert name == f"meshdiag-{meshdiag.__version__}.tar.gz"
    with tarfile.open(out / name) as tar:
        prefix = f"meshdiag-{meshdiag.__version__}/"
        members = {m.name[len(prefix) :] for m in tar.getmembers() if m.isfile()}
        pkg_info = tar.extractfile(prefix + "PKG-INFO").read().decode()
    needed = {
        "LICENSE",
        "README.md",
        "PYPI.md",
        "Makefile",
        "pyproject.toml",
        "setup.py",
        "tests/conftest.py",
        "src/meshdiag/py.typed",
        "src/meshdiag/ir/fast/_fastscan.c",
        "src/meshdiag/ir/fast/_fastscan.h",
        "src/meshdiag/ir/fast/_fields.c",
        "src/meshdiag/data/targets.toml",
        "fixtures/seed/distorted_mesh.mlir",
    }
    assert needed <= members, needed - members
    missing = _repo_files("tests", "fixtures", "fuzz", "src") - members
    assert not missing, sorted(missing)[:20]
    assert any(m.startswith("tests/golden/") for m in members)
    assert "License-Expression: Apache-2.0" in pkg_info
    assert "License-File: LICENSE" in pkg_info
    assert "Requires-Dist: typer>=0.28" in pkg_info
    assert "meshdiag tells you which slice" in pkg_info  # the PyPI description


# -- typer ----------------------------------------------------------------------------------


def test_no_upper_bound_on_typer():
    typer_req = next(d for d in PROJECT["dependencies"] if d.startswith("typer"))
    assert "<" not in typer_req


def test_cli_uses_only_public_typer():
    for path in (ROOT / "src" / "meshdiag").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for n in names:
                assert not re.match(r"(typer|click)\._|typer\._click", n), (path, n)


@pytest.mark.parametrize(
    "argv,expected",
    [
        (["convert", "{replicated}"], "convert"),
        (["simulate-copy", "--mesh", "t3k"], "simulate-copy"),
        (["--version"], None),
        (["--help"], None),
        ([], None),
        (["layuot"], None),
    ],
)
def test_only_the_invoked_command_is_built(argv, expected):
    assert invoked_command(argv) == expected
    app = build_app(expected)
    names = [c.name for c in app.registered_commands]
    assert names == ([expected] if expected else list(COMMANDS))
