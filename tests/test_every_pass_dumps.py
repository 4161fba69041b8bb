"""`meshdiag lint` on real every-pass XLA dumps of correct JAX programs finds no error.

The dumps (`--xla_dump_to DIR --xla_dump_hlo_pass_re=.*`, a few MB per program) are too big
to commit: fixtures/generate.py writes them once per test session into a temporary
directory, one subprocess per device count (8, 16, 32). Each program is linted with its real
mesh, given as a Shardy mesh string, with the physical `device_ids` when its devices are
permuted (JAX keeps the dump's mesh iota and writes the order to compile_options.textproto).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixture_modules import load

from meshdiag.cli.app import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _generator():
    return load("generate")


GEN = _generator()


@pytest.fixture(scope="session")
def every_pass_dumps(tmp_path_factory) -> dict[str, Path]:
    return GEN.make_every_pass_dumps(tmp_path_factory.mktemp("every-pass"))


def lint_json(capsys, *args) -> list[dict]:
    with pytest.raises(SystemExit):
        main(["lint", *map(str, args), "--output-format", "json", "--jobs", "1"])
    out, _ = capsys.readouterr()
    return json.loads(out)["findings"]


@pytest.mark.parametrize("name", sorted(GEN.PASS_CASES))
def test_no_error_on_a_correct_program(every_pass_dumps, capsys, name):
    case = GEN.PASS_CASES[name]
    root = every_pass_dumps[name]
    assert len([p for p in root.rglob("*") if p.is_file()]) > 40  # a real every-pass dump
    found = lint_json(capsys, root, "--mesh", case.mesh_text)
    errors = [
        (f["code"], f["path"].rsplit("/", 1)[-1], f["message"][:160])
        for f in found
        if f["severity"] == "error"
    ]
    assert errors == []


PERMUTED = sorted(n for n, c in GEN.PASS_CASES.items() if c.order is not None)


def _physical_slices(case, spec_entries, shape):
    """JAX's own placement: physical device id → slices (in-process JAX, 64 CPU devices)."""
    import jax
    import numpy as np
    from jax.sharding import Mesh as JaxMesh
    from jax.sharding import NamedSharding as JaxNamedSharding
    from jax.sharding import PartitionSpec as P

    devs = np.array(jax.devices())[list(case.order)].reshape(case.mesh_shape)
    ns = JaxNamedSharding(JaxMesh(devs, case.axis_names), P(*spec_entries))
    got = {
        d.id: [[s.start or 0, shape[i] if s.stop is None else s.stop] for i, s in enumerate(idx)]
        for d, idx in ns.devices_indices_map(shape).items()
    }
    return got, str(ns._to_xla_hlo_sharding(len(shape)))


def layout_json(capsys, *args) -> dict:
    with pytest.raises(SystemExit) as e:
        main(["layout", *map(str, args), "--format", "json"])
    out, err = capsys.readouterr()
    assert e.value.code in (0, None), err
    return json.loads(out)


@pytest.mark.parametrize("name", PERMUTED)
def test_permuted_dump_states_its_device_assignment(every_pass_dumps, name):
    from meshdiag.ir.devices import assignment_for

    case = GEN.PASS_CASES[name]
    root = every_pass_dumps[name]
    files = [p for p in root.rglob("*") if p.is_file() and p.suffix in (".txt", ".mlir")]
    found = {
        assignment_for(str(p)).devices for p in files if "module_" in p.name or "shardy" in str(p)
    }
    # JAX's device assignment is the mesh's devices in row-major order: the physical order
    assert found == {case.order}


@pytest.mark.parametrize("name", PERMUTED)
def test_directory_report_says_which_ids_it_shows(every_pass_dumps, capsys, name):
    """`inspect DIR` draws logical partition ids and says which physical devices run them."""
    case = GEN.PASS_CASES[name]
    with pytest.raises(SystemExit) as e:
        main(["inspect", str(every_pass_dumps[name]), "--quiet"])
    out, err = capsys.readouterr()
    assert e.value.code in (0, None), err
    (label,) = [ln for ln in out.splitlines() if ln.startswith("device ids: ")]
    assert label.startswith("device ids: logical partition ids; ")
    shown = [f"{i}→{d}" for i, d in enumerate(case.order)]
    assert ", ".join(shown[:8]) in label


@pytest.mark.parametrize("name", PERMUTED)
def test_layout_names_the_same_devices_in_both_notations(every_pass_dumps, capsys, name):
    case = GEN.PASS_CASES[name]
    (module_dir,) = [
        p for p in every_pass_dumps[name].iterdir() if p.is_dir() and p.name != "shardy"
    ]
    shape, spec = case.args[0]
    entries = [None if d is None else d for d in spec]
    jax_slices, jax_gspmd = _physical_slices(case, entries, shape)
    pspec = "P(" + ", ".join(repr(e) for e in entries) + ")"
    shape_text = ",".join(map(str, shape))
    by_spec = layout_json(
        capsys,
        pspec,
        "--mesh",
        case.mesh_text,
        "--shape",
        shape_text,
        "--device-assignment",
        module_dir,
    )
    by_gspmd = layout_json(
        capsys, jax_gspmd, "--shape", shape_text, "--device-assignment", module_dir
    )
    assert by_spec["gspmd"] == jax_gspmd  # logical ids, as JAX writes them into the dump
    for doc in (by_spec, by_gspmd):
        assert doc["device_ids"] == "physical"
        shown = {d["device"]: d["slices"] for d in doc["devices"] if d["slices"] is not None}
        assert shown == jax_slices


def test_wrong_physical_order_is_still_a_mismatch(every_pass_dumps, capsys):
    case = GEN.PASS_CASES["mesh3d_perm8"]
    axes = ", ".join(f'"{a}"={s}' for a, s in zip(case.axis_names, case.mesh_shape, strict=True))
    wrong = f"<[{axes}], device_ids=[{', '.join(map(str, reversed(case.order)))}]>"
    found = lint_json(capsys, every_pass_dumps["mesh3d_perm8"], "--mesh", wrong)
    md101 = [f for f in found if f["code"] == "MD101"]
    assert md101 and all(
        "the mesh's device_ids are physical devices" in f["message"] for f in md101
    )
    assert {f["code"] for f in found if f["severity"] == "error"} >= {"MD101", "MD102"}
