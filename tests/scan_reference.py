"""What the differential scanner test compares: a canonical text of everything a scan
gives for one input (every module's fields and values with their lines and columns, the
MD001 findings, and every module check's findings), and the inputs it is compared on.

`tests/golden/make_scan_golden.py` records the digests of these texts with the scanner as
it was before the one-pass field reader (tests/golden/scan_reports.json);
`tests/test_scan_differential.py` checks the scanner of this tree against them.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "scan_reports.json"


def inputs() -> list[Path]:
    """Every fixture file (IR and not: a config is scanned too) and the scanner's fuzz
    corpus seeds."""
    fx = sorted(p for p in (ROOT / "fixtures").rglob("*") if p.is_file())
    fz = sorted(p for d in ("scan", "files") for p in (ROOT / "fuzz" / "corpus" / d).iterdir())
    return [p for p in fx + fz if p.suffix != ".py"]


def report_text(name: str, data: bytes, *, mesh=None, target=None) -> str:
    """The canonical text of scanning `data` as a file named `name`, then checking it."""
    from meshdiag.ir.scan import scan_file
    from meshdiag.pipeline.inspect import file_json, run_checks

    report = scan_file(name, io.BytesIO(data))
    findings = run_checks(report, mesh, target, "xla")
    doc = {
        "file": file_json(report),
        "skipped": report.skipped,
        "modules": [
            {
                "values": [value_fields(v) for v in m.values],
                "diagnostics": [repr(d) for d in m.diagnostics],
                "meshes": [repr(d) for d in m.meshes],
            }
            for m in report.modules
        ],
        "findings": [f.to_json() for f in findings],
    }
    return json.dumps(doc, sort_keys=True, default=repr)


def value_fields(v) -> list:
    """Everything the scanner says of a value, parses as their repr."""
    return [
        v.name,
        v.line,
        v.column,
        v.kind,
        v.op,
        v.shape,
        v.local_shape,
        v.dtype,
        v.text,
        v.notation,
        v.mesh_name,
        repr(v.sharding),
        repr(v.hlo),
    ]


def settings():
    """(label, mesh, target) each input is checked with."""
    from meshdiag.model.mesh import Mesh

    return (
        ("plain", None, None),
        ("mesh", Mesh((("batch", 2), ("model", 4))), "tt-mlir"),
    )


def digests() -> dict[str, str]:
    out = {}
    for p in inputs():
        rel = p.relative_to(ROOT).as_posix()
        data = p.read_bytes()
        for label, mesh, target in settings():
            for name in (p.name, "m.after_spmd-partitioning.txt"):
                text = report_text(name, data, mesh=mesh, target=target)
                key = f"{rel} [{label}, as {name}]"
                out[key] = hashlib.sha256(text.encode()).hexdigest()
    return out
