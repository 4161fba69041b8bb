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


def dump_files() -> list[Path]:
    """The committed text and MLIR fixtures (dump files), in order."""
    return sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix in (".txt", ".mlir"))


def scanned_modules(shared: bool = True) -> list:
    """Every module of the committed text and MLIR fixtures, read through one scan cache:
    with the lines a module repeats shared (`LineValues` among its entries, as in one run),
    or (`shared=False`) with no line learned, every value its module's own."""
    import io

    from meshdiag.ir import linememo
    from meshdiag.ir.model import LineValues, Value
    from meshdiag.ir.scan import scan_file
    from meshdiag.ir.scancache import ScanCache

    files = dump_files()
    cache = ScanCache()
    learnable = linememo.learnable
    if not shared:
        linememo.learnable = lambda b: False
    try:
        modules = [
            m
            for p in files
            for m in scan_file(str(p), io.BytesIO(p.read_bytes()), cache=cache).modules
        ]
    finally:
        linememo.learnable = learnable
    kinds = {it.__class__ for m in modules for it in m.items}
    assert kinds == ({LineValues, Value} if shared else {Value})
    return modules
