"""Every command's `--format json` output, run on the fixtures, validates against the JSON
Schema `meshdiag schema` prints (the models in `meshdiag.contracts`); a document that breaks
the contract fails validation; every command with `--format` has a documented schema."""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshdiag.cli.app import build_app, main
from meshdiag.contracts import all_schemas, documents, schema

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures"
SEED = FIX / "seed"
MESH = ["--mesh", "batch=2,model=4"]
DUMPS = sorted(p for p in FIX.rglob("*") if p.is_file() and p.suffix in (".mlir", ".txt"))


def run(capsys, args: list[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert e.value.code in (0, 1), err
    return e.value.code, out


@functools.cache
def validator(name: str) -> jsonschema.Draft202012Validator:
    s = schema(name)
    jsonschema.Draft202012Validator.check_schema(s)
    return jsonschema.Draft202012Validator(s)


def assert_valid(name: str, doc: object) -> None:
    errors = sorted(validator(name).iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, f"{name}: {errors[0].message} at {list(errors[0].absolute_path)}"
    # the bundle of every schema accepts it too
    jsonschema.Draft202012Validator(all_schemas()).validate(doc)


CASES = {
    "layout": [
        ["layout", 'P(None, "model")', "-s", "32,32", *MESH],
        ["layout", "{devices=[1,8]<=[8]}", "-s", "1,7", "--split", "chunk", "-t", "tt-mlir"],
        ["layout", "{maximal device=3}", "-s", "4,4", "--mesh", "2x4", "-t", "n300"],
        ["layout", "{replicated}", "-s", "()"],
        ["layout", '#sdy.sharding<mesh<["x"=2, "y"=2]>, [{"x", "y"}, {}]>', "-s", "5,3"],
    ],
    "simulate-copy": [
        ["simulate-copy", "--mesh", "t3k", "-s", "1,7,32,32", "--mapper", "shard:1"]
        + ["--dest", "uniform:1,1,32,32", "--write", "by-value", "-t", "tt-mlir"],
        ["simulate-copy", "--mesh", "1x8", "-s", "16,8", "--mapper", "{devices=[8,1]<=[8]}"],
        ["simulate-copy", "--mesh", "t3k", "-s", "100000000000,8", "--mapper", "shard:0"]
        + ["--symbolic"],
    ],
    "convert": [
        ["convert", "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}", "--to", to, *MESH]
        for to in ("gspmd", "gspmd-v1", "gspmd-v3", "sdy", "pspec")
    ]
    + [
        ["convert", "{devices=[1,4,2]<=[8] last_tile_dim_replicate}", "--derive-mesh"],
        ["convert", "{replicated}", "--derive-mesh", "--to", "sdy"],
        ["convert", "P(None, 'model')", *MESH],
    ],
    "rule": [["rule"], ["rule", "MD101"], ["rule", "uneven-shard"]],
    "diff": [
        ["diff", "P(None, 'model')", "{devices=[1,4,2]<=[8] last_tile_dim_replicate}", *MESH],
        ["diff", "P(None, 'model')", "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"]
        + [*MESH, "-s", "32,30"],
        ["diff", "P('batch', None)", "P('model', None)", *MESH, "-s", "7,4"],
        ["diff", SEED / "distorted_mesh.mlir", SEED / "fixed_mesh.mlir"],
        ["diff", FIX / "xla_dump", FIX / "xla_dump"],
    ],
    "comms": [
        ["comms", FIX / "comms", *MESH],
        ["comms", FIX / "comms", *MESH, "--collective-budget", "1KiB"],
        ["comms", FIX / "comms" / "xla" / "index_groups.after_optimizations.txt"],
    ],
    "reshard": [
        ["reshard", "P('batch', None)", "P(None, 'batch')", "-s", "16,32", *MESH],
        [
            "reshard",
            "P('batch', 'model')",
            "P(None, None)",
            "-s",
            "16,32",
            *MESH,
            "--dtype",
            "bf16",
        ],
        ["reshard", "P('model', None)", "{devices=[4,2]<=[2,4]T(1,0)}", "-s", "8,8", *MESH],
        ["reshard", "P('model', None)", "P('model', None)", "-s", "8,8", *MESH],
    ],
    "trace": [
        ["trace", FIX / "xla_dump" / "mlp2", "--value", "result:0"],
        ["trace", FIX / "xla_dump" / "mlp2", "--value", "arg:1", "--all"],
        ["trace", ROOT / "tests" / "data" / "trace_passes.mlir", "--value", "%arg0"],
        ["trace", SEED / "distorted_mesh.mlir", "--value", "%0"],
    ],
}


@pytest.mark.parametrize(
    "name, args", [(n, a) for n, cases in CASES.items() for a in cases], ids=lambda x: str(x)[:60]
)
def test_command_json_matches_its_schema(capsys, name, args) -> None:
    _, out = run(capsys, [*args, "--format", "json"])
    assert_valid(name, json.loads(out))


@pytest.mark.parametrize("layouts", [False, True])
def test_inspect_json_of_every_fixture_matches_the_schema(capsys, layouts) -> None:
    args = ["inspect", *DUMPS, "-j", "1", *MESH, "-t", "tt-mlir", "-f", "json"]
    _, out = run(capsys, args + (["--layouts"] if layouts else []))
    doc = json.loads(out)
    assert len(doc["files"]) == len(DUMPS) and doc["findings"]  # the seed has findings
    assert any(v for f in doc["files"] for m in f["modules"] for v in m["values"])
    assert_valid("inspect", doc)


def test_inspect_json_of_dump_directories_matches_the_schema(capsys) -> None:
    _, out = run(capsys, ["inspect", FIX / "xla_dump", "-j", "2", "-f", "json"])
    assert_valid("inspect", json.loads(out))


def test_lint_outputs_match_their_schemas(capsys, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    base = ["lint", "fixtures", *MESH, "-t", "tt-mlir", "--isolated", "-j", "1"]
    rc, out = run(capsys, [*base, "--output-format", "json"])
    doc = json.loads(out)
    assert rc == 1 and doc["findings"]
    assert_valid("lint", doc)
    _, out = run(capsys, [*base, "--output-format", "json-lines"])
    lines = out.splitlines()
    assert len(lines) == len(doc["findings"])
    for line in lines:
        assert_valid("lint-json-lines", json.loads(line))
    _, out = run(capsys, [*base, "--statistics", "--format", "json"])
    assert_valid("lint-statistics", json.loads(out))
    _, out = run(capsys, ["lint", SEED / "fixed_mesh.mlir", *MESH, "--isolated", "-f", "json"])
    assert_valid("lint", json.loads(out))  # no findings


# -- the schemas catch what breaks the contract --------------------------------------------


def _layout_doc(capsys) -> dict:
    _, out = run(capsys, ["layout", "{devices=[1,8]<=[8]}", "-s", "1,7", "-f", "json"])
    return json.loads(out)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.pop("split"),  # a key missing
        lambda d: d.update(extra=1),  # a key not in the contract
        lambda d: d.update(version=2),
        lambda d: d.update(split="ceil"),  # not a split rule
        lambda d: d["devices"][0].update(slices="[0:1, 0:1]"),  # a string, not ranges
        lambda d: d["devices"][0].update(slices=[[0, 1, 2]]),  # a range of three numbers
        lambda d: d["devices"][1].update(empty="false"),
        lambda d: d["devices"][2].update(device=-1),
        lambda d: d.update(findings=[{"code": "MD105"}]),
        lambda d: d["findings"][0].update(code="X1"),
        lambda d: d["findings"][0].update(line=0),
    ],
)
def test_a_mutated_document_fails_validation(capsys, mutate) -> None:
    doc = _layout_doc(capsys)
    assert doc["findings"]  # 7 rows on 8 devices: MD105
    validator("layout").validate(doc)
    broken = copy.deepcopy(doc)
    mutate(broken)
    with pytest.raises(jsonschema.ValidationError):
        validator("layout").validate(broken)


def test_mutated_inspect_and_convert_documents_fail(capsys) -> None:
    _, out = run(capsys, ["inspect", SEED / "distorted_mesh.mlir", "-j", "1", "-f", "json"])
    doc = json.loads(out)
    value = doc["files"][0]["modules"][0]["values"][0]
    value["notation"] = "torch"
    with pytest.raises(jsonschema.ValidationError, match="torch"):
        validator("inspect").validate(doc)
    _, out = run(capsys, ["convert", "{replicated}", "--to", "sdy", "-f", "json"])
    doc = json.loads(out)
    doc["to"] = "xla"
    with pytest.raises(jsonschema.ValidationError):
        validator("convert").validate(doc)


# -- every JSON output is described --------------------------------------------------------


def test_every_command_with_format_has_a_schema() -> None:
    import typer.main

    group = typer.main.get_command(build_app())
    with_json = {
        name
        for name, cmd in group.commands.items()
        if any("--format" in p.opts for p in cmd.params)
    }
    assert {"layout", "inspect", "simulate-copy", "lint", "convert", "rule"} <= with_json
    assert {"diff", "reshard", "comms"} <= with_json
    missing = with_json - set(documents())
    assert not missing, f"commands with --format json but no model in meshdiag.contracts: {missing}"


def test_schema_command_prints_draft_2020_12_schemas(capsys) -> None:
    for name in documents():
        _, out = run(capsys, ["schema", name])
        s = json.loads(out)
        assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        jsonschema.Draft202012Validator.check_schema(s)
        assert s == schema(name)
    _, out = run(capsys, ["schema"])
    bundle = json.loads(out)
    jsonschema.Draft202012Validator.check_schema(bundle)
    assert len(bundle["anyOf"]) == len(documents())
    _, out = run(capsys, ["schema", "--list"])
    assert [line.split()[0] for line in out.splitlines()] == list(documents())


def test_schema_of_an_unknown_document_is_a_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as e:
        main(["schema", "inspekt"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "no JSON document named 'inspekt'" in err
    assert err.count("\n") == 1


# -- random layouts: the library's JSON is the command's JSON, and fits the schema ----------


@st.composite
def _layout_cases(draw):
    sizes = draw(st.lists(st.sampled_from([1, 2, 3, 4]), min_size=1, max_size=3))
    names = [f"a{i}" for i in range(len(sizes))]
    rank = draw(st.integers(0, 3))
    shape = [draw(st.integers(0, 9)) for _ in range(rank)]
    free = list(names)
    spec = []
    for _ in range(rank):
        if free and draw(st.booleans()):
            spec.append(repr(free.pop(draw(st.integers(0, len(free) - 1)))))
        else:
            spec.append("None")
    mesh = ",".join(f"{n}={s}" for n, s in zip(names, sizes, strict=True))
    split = draw(st.sampled_from(["xla", "chunk", "array-split"]))
    return f"P({', '.join(spec)})", mesh, shape, split


@settings(max_examples=60, deadline=None)
@given(_layout_cases())
def test_random_layout_documents_fit_the_schema(case) -> None:
    from meshdiag import layout, parse_mesh, parse_sharding
    from meshdiag.checks.md105_uneven_shard import uneven_findings
    from meshdiag.notation.detect import to_hlo
    from meshdiag.notation.gspmd import print_gspmd

    spec, mesh_text, shape, split = case
    mesh = parse_mesh(mesh_text)
    hlo = to_hlo(parse_sharding(spec, mesh=mesh), mesh)
    doc = layout(hlo, tuple(shape), split=split, num_devices=mesh.size).to_json(print_gspmd(hlo))
    # the keys `meshdiag layout` adds to the library's document
    doc["device_ids"], doc["device_assignment"] = "logical", None
    doc["findings"] = [f.to_json() for f in uneven_findings(hlo, shape, split, where={})]
    assert len(doc["devices"]) == mesh.size
    validator("layout").validate(doc)
