"""`meshdiag convert`: notation round trips through the CLI, checked against XLA where it can."""

import json
import subprocess
import sys

import pytest

SEED = "{devices=[1,4,2]<=[8] last_tile_dim_replicate}"
FIXED = "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "meshdiag", "convert", *args], capture_output=True, text=True
    )


def test_pspec_to_gspmd_matches_xla_canonical_text():
    from jax._src.lib import xla_client as xc

    r = run("P(None, 'model')", "--mesh", "batch=2,model=4", "--to", "gspmd")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == FIXED == str(xc.HloSharding.from_string(FIXED))


def test_v1_form_is_the_explicit_device_list():
    r = run("P(None, 'model')", "--mesh", "batch=2,model=4", "--to", "gspmd-v1")
    assert r.stdout.strip() == "{devices=[1,4,2]0,4,1,5,2,6,3,7 last_tile_dim_replicate}"


def test_seed_string_on_the_global_mesh_needs_sub_axes():
    r = run(SEED, "--mesh", "batch=2,model=4", "--to", "sdy")
    assert r.returncode == 0, r.stderr
    assert 'sdy.mesh @mesh = <["batch"=2, "model"=4]>' in r.stdout
    assert '#sdy.sharding<@mesh, [{}, {"batch", "model":(1)2}]>' in r.stdout
    # ...so no PartitionSpec holds it: a one-line error, exit 2
    r = run(SEED, "--mesh", "batch=2,model=4", "--to", "pspec")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1 and "no PartitionSpec" in r.stderr


def test_fixed_string_is_the_plain_spec():
    r = run(FIXED, "--mesh", "batch=2,model=4", "--to", "pspec")
    assert r.stdout.splitlines()[0] == "P(None, 'model')"


def test_derive_mesh_reproduces_the_seed_dump_mesh():
    r = run(SEED, "--derive-mesh", "--format", "json")
    doc = json.loads(r.stdout)
    assert doc["version"] == 1
    assert doc["derive"]["derived_mesh"] == '<["_axis_0"=4, "_axis_1"=2]>'
    assert doc["derive"]["derived_sharding"] == '#sdy.sharding<@mesh, [{}, {"_axis_0"}]>'
    assert "axis_0=2,axis_1=4" not in doc["derive"]["fits"]  # not a plain spec on iota 2x4


@pytest.mark.parametrize(
    "args",
    [("{devices=[2,2<=[4]}",), ("P(None, 'model')",), (SEED, "--to", "yaml")],
)
def test_bad_input_is_one_line_exit_2(args):
    r = run(*args)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and r.stderr.strip()
