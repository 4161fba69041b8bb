"""`inspect` and `lint` on real every-pass XLA dumps, made with JAX on CPU by the
session fixture `dump` (conftest.py) from `tests/programs/shard_map_tuple.py`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from meshdiag.cli import main
from meshdiag.inspect import inspect_paths


def run(args, capsys):
    with pytest.raises(SystemExit) as e:
        main(args)
    out, err = capsys.readouterr()
    return e.value.code, out, err


def all_values(doc: dict):
    for f in doc["files"]:
        for m in f["modules"]:
            for v in m["values"]:
                yield f["path"], m, v


# -- item: \22 escapes in xla.sdy.in_shardings / out_shardings -------------------------------


def test_escaped_round_trip_strings_parse(dump, capsys):
    path, n = dump
    (input_module,) = list((path / "shardy").rglob("00.input_module.mlir"))
    raw = input_module.read_text()
    assert 'xla.sdy.in_shardings = "#sdy.sharding_per_value<[<@mesh, [{\\22data' in raw
    code, out, _ = run(["lint", str(path), "--output-format", "json"], capsys)
    assert [f for f in json.loads(out)["findings"] if f["code"] == "MD001"] == []
    doc = inspect_paths([str(path)])
    assert [f for f in doc["findings"] if f["code"] == "MD001"] == []
    # the round trip's shardings are values: operands (global) in, results out; each has
    # the tiled form of the argument it came from (the dump's own mhlo.sharding)
    (f,) = [f for f in doc["files"] if f["path"] == str(input_module)]
    (m,) = f["modules"]
    args = {v["name"]: v for v in m["values"] if v["kind"] == "arg" and v["notation"] == "gspmd"}
    ins = [v for v in m["values"] if v["kind"] == "manual_in"]
    assert [v["name"] for v in ins] == ["%arg0", "%arg1"]
    for v in ins:
        assert v["shape"] == args[v["name"]]["shape"]
        assert v["gspmd"] == args[v["name"]]["gspmd"]
        assert v["sharding"].startswith('#sdy.sharding_per_value<[<@mesh, [{"data"}')
    (out_v,) = [v for v in m["values"] if v["kind"] == "manual_out"]
    assert out_v["shape"] == [16, 8 * n]
    # the HLO passes carry the same strings as frontend attributes
    before = next(path.glob("*.before_optimizations.txt"))
    (fb,) = [f for f in doc["files"] if f["path"] == str(before)]
    kinds = [v["kind"] for v in fb["modules"][0]["values"]]
    assert kinds.count("manual_in") == 2 and kinds.count("manual_out") == 1


def test_pasted_strings_from_the_dump(dump, capsys):
    """A sharding copied out of the dump, escapes and quotes included, reads as the
    mhlo.sharding XLA printed next to it."""
    path, _ = dump
    (input_module,) = list((path / "shardy").rglob("00.input_module.mlir"))
    line = next(ln for ln in input_module.read_text().splitlines() if "func.func @main" in ln)
    pairs = re.findall(
        r'tensor<([\dx]+)xf32> \{mhlo\.frontend_attributes = \{xla\.sdy\.sharding = ("[^"]*")\}, '
        r'mhlo\.sharding = "([^"]*)"',
        line,
    )
    assert len(pairs) == 3
    mesh_line = input_module.read_text().splitlines()[0]
    sizes = dict(re.findall(r"\\22(\w+)\\22=(\d+)", mesh_line))
    mesh = ",".join(f"{a}={s}" for a, s in sizes.items())
    for dims, quoted, expected in pairs:
        for pasted in (quoted, quoted[1:-1]):
            code, out, err = run(["convert", pasted, "--mesh", mesh, "--to", "gspmd"], capsys)
            assert (code, err) == (0, "") and out.strip() == expected
        code, out, err = run(
            ["layout", quoted, "--mesh", mesh, "--shape", dims.replace("x", ","), "-f", "json"],
            capsys,
        )
        assert code == 0 and json.loads(out)["gspmd"] == expected


# -- item: {manual} values are per-device --------------------------------------------------


def test_manual_values_have_local_shapes(dump):
    path, n = dump
    doc = inspect_paths([str(path)])
    manual = [(p, v) for p, _, v in all_values(doc) if v["gspmd"] == "{manual}"]
    assert manual
    for _, v in manual:
        assert v["shape"] is None and v["local_shape"] is not None, v
    # the shard_map's x (16x64 on P("data", None)) and w (64x8n on P(None, "model")) enter
    # its body as the blocks each device holds
    full_to_shard = [v for _, v in manual if "SPMDFullToShardShape" in (v["op"] or "")]
    assert {tuple(v["local_shape"]) for v in full_to_shard} == {(8, 64), (64, 16)}


# -- item: tuple elements show their own sharding in text ----------------------------------


def test_tuple_elements_grouped_under_their_own_sharding(dump):
    from meshdiag.ir.scan import scan_path
    from meshdiag.render.inspect_text import _by_text

    path, _ = dump
    checked = 0
    for f in sorted(path.glob("*.txt")):
        report = scan_path(str(f))
        for m in report.modules:
            tuples = [v for v in m.values if v.text.startswith("{{")]
            if not tuples:
                continue
            groups = _by_text(m)
            assert not any(t.startswith("{{") for t in groups)
            for v in tuples:
                own = [
                    t
                    for t, (_, _, vals) in groups.items()
                    if any(w.name == v.name and w.column == v.column for w in vals.values())
                ]
                from meshdiag.inspect import gspmd_text

                assert own == [gspmd_text(v)], (f.name, v.name)
                checked += 1
    assert checked >= 3  # the entry's ROOT tuple in several passes


def test_native_and_python_scanners_agree(dump):
    """The whole inspect JSON of a real dump directory, with the native scanner and with its
    Python twin (MESHDIAG_PURE_PYTHON=1), in fresh processes."""
    path, _ = dump
    outs = []
    for pure in ("", "1"):
        env = dict(os.environ, MESHDIAG_PURE_PYTHON=pure)
        if not pure:
            env.pop("MESHDIAG_PURE_PYTHON")
        cmd = [sys.executable, "-m", "meshdiag", "inspect", str(path), "-f", "json", "-j", "1"]
        outs.append(subprocess.run(cmd, env=env, check=True, capture_output=True).stdout)
    assert outs[0] == outs[1]
    assert len(json.loads(outs[0])["files"]) > 40
