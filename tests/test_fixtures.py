"""Every committed fixture scans cleanly, every annotated line yields values, and the layouts
`inspect --layouts` computes for JAX-placed arguments match JAX's `devices_indices_map`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fixture_modules import load

from meshdiag.ir.scan import scan_path
from meshdiag.pipeline.inspect import inspect_paths

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
MANIFEST = json.loads((FIXTURES / "MANIFEST.json").read_text())
TEXT_FIXTURES = sorted(p for p in MANIFEST if not p.endswith(".o"))


def _generator():
    return load("generate")


#: what a simple line scan counts as an annotation: each one needs a value on its line
MARKERS = re.compile(
    r'mhlo\.sharding = "|(?<![\w.])sharding=\{|#sdy\.sharding<|#sdy\.sharding_per_value<'
    r"|sdy\.(?:sharding_constraint|reshard) %|in_shardings=\[<|out_shardings=\[<|out_sharding=<"
    r'|xla\.sdy\.sharding\s*=\s*"'
)
#: each of these is at least one value of its own
COUNTED = re.compile(r'mhlo\.sharding = "|(?<![\w.])sharding=\{')


def test_manifest_lists_every_fixture():
    on_disk = {
        str(p.relative_to(FIXTURES))
        for p in FIXTURES.rglob("*")
        if p.is_file() and p.name not in ("generate.py", "generate_comms.py", "MANIFEST.json")
    }
    assert on_disk == set(MANIFEST)
    for entry in MANIFEST.values():
        assert re.fullmatch(r"(\w+=\d+,)*\w+=\d+", entry["mesh"]) and entry["generator"]
    for p in on_disk:
        assert (FIXTURES / p).stat().st_size < 200_000


@pytest.mark.parametrize("rel", TEXT_FIXTURES)
def test_fixture_scans_cleanly(rel):
    path = FIXTURES / rel
    r = scan_path(str(path))
    assert [f for f in r.findings if f.severity != "info"] == []
    per_line: dict[int, int] = {}
    for m in r.modules:
        for v in m.values:
            per_line[v.line] = per_line.get(v.line, 0) + 1
            assert v.sharding is not None, (rel, v.line, v.text)
    annotated = 0
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if MARKERS.search(line):
            annotated += 1
            assert per_line.get(n, 0) >= max(1, len(COUNTED.findall(line))), (rel, n, line[:120])
    assert annotated == len(per_line)  # and no value comes from a line without an annotation


def test_binary_in_dump_is_an_info_note():
    (obj,) = [p for p in MANIFEST if p.endswith(".o")][:1]
    r = scan_path(str(FIXTURES / obj))
    assert [(f.code, f.severity) for f in r.findings] == [("MD001", "info")]


def _jax_indices(case, gen):
    import jax.numpy as jnp

    mesh = gen.make_mesh(case)
    out = []
    for (shape, _), s in zip(case.args, gen.arg_shardings(case, mesh), strict=True):
        idx = s.devices_indices_map(shape)
        out.append(
            {
                d.id: [list(sl.indices(n))[:2] for sl, n in zip(ix, shape, strict=True)]
                for d, ix in idx.items()
            }
        )
    del jnp
    return out


@pytest.mark.parametrize("tag", ["shardy", "gspmd"])
def test_layouts_agree_with_devices_indices_map(tag):
    gen = _generator()
    for case in gen.CASES.values():
        doc = inspect_paths([str(FIXTURES / "jax" / f"{case.name}_{tag}.mlir")], layouts=True)
        (f,) = doc["files"]
        (m,) = f["modules"]
        args = {v["name"]: v for v in m["values"] if v["kind"] == "arg"}
        expect = _jax_indices(case, gen)
        for k, want in enumerate(expect):
            v = args[f"%arg{k}"]
            got = {d["device"]: d["slices"] for d in v["devices"]}
            assert sorted(got) == list(range(8))  # every device of the mesh
            assert got == want, (case.name, k, v["sharding"])
