"""The committed fixture generators (fixtures/generate.py, fixtures/generate_comms.py) as
modules the tests import: their cases and dump builders are the tests' inputs."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def load(stem: str):
    """fixtures/<stem>.py, loaded once per test session."""
    name = f"meshdiag_fixture_{stem}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, FIXTURES / f"{stem}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod  # dataclasses resolve the module by name
        spec.loader.exec_module(mod)
    return sys.modules[name]
