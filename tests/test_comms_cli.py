"""`meshdiag comms` (text and JSON, errors) and the collective checks in `lint` (MD201 budget
from the option and the config, MD202 full rematerialisation, MD203 off-mesh groups), on the
real dumps in fixtures/comms/."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from meshdiag.checks.registry import collective_checks, get_rule
from meshdiag.cli.app import main

ROOT = Path(__file__).resolve().parent.parent
COMMS = ROOT / "fixtures" / "comms"
XLA = COMMS / "xla"
RESHARD = XLA / "reshard.after_optimizations.txt"
INDEX = XLA / "index_groups.after_optimizations.txt"
SDY = COMMS / "shardy" / "reshard" / "02.after_reshard_to_collectives.mlir"
MESH = ["--mesh", "batch=2,model=4"]


def run(capsys, *args):
    with pytest.raises(SystemExit) as e:
        main([*map(str, args)])
    out, err = capsys.readouterr()
    return e.value.code, out, err


def test_comms_json(capsys):
    rc, out, err = run(capsys, "comms", XLA, *MESH, "--format", "json")
    assert rc == 0 and err == ""
    doc = json.loads(out)
    assert doc["version"] == 1 and doc["mesh"] == {"axes": [["batch", 2], ["model", 4]]}
    mods = [m for f in doc["files"] for m in f["modules"]]
    assert len(mods) == 3
    for m in mods:
        per = [c["bytes_per_device"] for c in m["collectives"]]
        assert per == sorted(per, reverse=True)
        assert m["totals"]["bytes_per_device"] == sum(per)
        assert sum(o["bytes_per_device"] for o in m["by_op_name"]) == sum(per)
        assert m["num_partitions"] == 8
    reshard = next(m for f in doc["files"] for m in f["modules"] if m["name"] == "jit_reshard")
    top = reshard["collectives"][0]
    assert top["name"] == "%all-gather.2" and top["axes"] == ["batch"]
    assert top["bytes_per_device"] == 65536 and top["gathered_over"] == 8
    assert top["replica_groups_form"] == "mesh" and top["groups"] == [
        [0, 4],
        [1, 5],
        [2, 6],
        [3, 7],
    ]
    assert doc["totals"]["collectives"] == sum(len(m["collectives"]) for m in mods)
    assert [f["code"] for f in doc["findings"]] == ["MD203"]


def test_comms_text(capsys):
    rc, out, _ = run(capsys, "comms", INDEX, RESHARD, *MESH)
    assert rc == 0
    lines = out.splitlines()
    assert lines[0].endswith("index_groups.after_optimizations.txt")
    assert any("NONE of the mesh" in line and "all-reduce" in line for line in lines)
    first = next(i for i, line in enumerate(lines) if "module jit_reshard" in line)
    assert "PER DEVICE" in lines[first + 1]
    assert lines[first + 2].split()[:4] == ["64.0", "KiB", "all-gather", "all-gather"]
    assert "by op_name:" in out and "jit(reshard)/mul" in out
    assert "MD203 [error]" in out and "model:(2)2 gives {0,1},{2,3}" in out


def test_comms_without_mesh_uses_the_collectives_own(capsys):
    rc, out, _ = run(capsys, "comms", RESHARD, "--format", "json")
    doc = json.loads(out)
    top = doc["files"][0]["modules"][0]["collectives"][0]
    assert top["axes"] == ["axis_0"] and top["axes_mesh"] == "collective"
    assert doc["findings"] == []


def test_comms_stdin(capsys, monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(SDY.read_bytes())))
    rc, out, _ = run(capsys, "comms", "-", "--format", "json")
    doc = json.loads(out)
    assert rc == 0 and doc["files"][0]["path"] == "<stdin>"
    assert len(doc["files"][0]["modules"][0]["collectives"]) == 9


def _cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "meshdiag", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ},
    )


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (["comms", "/nonexistent/dump.txt"], "no such file"),
        (["comms", "BAD", "--mesh", "nope=x"], None),
        (["comms", RESHARD, "--collective-budget", "lots"], "byte size"),
        (["comms", RESHARD, "--format", "yaml"], "--format"),
        (["lint", RESHARD, "--collective-budget", "-3", "--isolated"], "byte size"),
    ],
)
def test_errors_exit_2_in_one_line(args, expect):
    r = _cli(*args)
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    if expect:
        assert expect in r.stderr


def test_malformed_groups_exit_2_with_location(tmp_path):
    bad = tmp_path / "bad.txt"
    line = "  %a = f32[8]{0} all-reduce(%p), replica_groups={{0,1},{2,x}}, to_apply=%add"
    bad.write_text(f"HloModule m, num_partitions=4\nENTRY %main {{\n{line}\n}}\n")
    col = line.index("x}}") + 1
    r = _cli("comms", bad)
    assert r.returncode == 2
    assert r.stderr.strip() == (
        f"meshdiag: error: {bad}:3:{col}: all-reduce %a: expected a device id, found 'x'"
    )
    # lint reports the same text as an MD001 finding
    r = _cli("lint", bad, "--isolated", "--output-format", "concise")
    assert r.returncode == 1 and f"{bad.name}:3:{col}: MD001 all-reduce %a" in r.stdout


# -- lint ------------------------------------------------------------------------------------


def test_lint_reports_text_both_scans_cannot_read_once(tmp_path):
    """A bad mesh declaration and a line too long are found by the sharding scan and the
    collective scan alike: one MD001 each. The collective scan's own problems stay."""
    bad = tmp_path / "bad.mlir"
    bad.write_text(
        "module @m attributes {mhlo.num_partitions = 8 : i32} {\n"
        '  sdy.mesh @mesh = <["x"=2, "y"=oops]>\n'
        "  func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {\n"
        '    %0 = sdy.all_gather [{"x"}] %arg0 out_sharding=<@nowhere, [{}]> : tensor<8xf32>\n'
        "    return %0 : tensor<8xf32>\n  }\n}\n"
    )
    r = _cli("lint", bad, "--isolated", "--output-format", "concise")
    lines = [x for x in r.stdout.splitlines() if "MD001" in x]
    assert [x.split(": MD001")[0].rsplit(":", 2)[1] for x in lines] == ["2", "4"], r.stdout
    assert "@nowhere" in lines[1]
    # a line longer than both scans read (16 MiB): one finding
    long = tmp_path / "long.txt"
    long.write_text(
        "HloModule m, num_partitions=2\nENTRY %main {\n"
        f'  %p = f32[8]{{0}} parameter(0), metadata={{op_name="{"a" * (16 << 20)}"}}\n'
        "  ROOT %ar = f32[8]{0} all-reduce(%p), replica_groups={{0,1}}, to_apply=%add\n}\n"
    )
    r = _cli("lint", long, "--isolated", "--output-format", "json")
    found = json.loads(r.stdout)["findings"]
    assert [(f["line"], f["code"]) for f in found] == [(3, "MD001")], found


def _lint(capsys, *args):
    rc, out, _ = run(capsys, "lint", *args, "--isolated", "--output-format", "json")
    return rc, json.loads(out)


def test_budget_from_the_option(capsys):
    rc, doc = _lint(capsys, RESHARD, "--collective-budget", "40KiB", "--select", "MD201")
    assert rc == 1
    got = [(f["line"], f["code"]) for f in doc["findings"]]
    assert got == [(188, "MD201"), (201, "MD201")]  # 48 KiB and 64 KiB; 6 KiB is under
    assert "64.0 KiB per device" in doc["findings"][1]["message"]
    rc, doc = _lint(capsys, RESHARD, "--select", "MD201")  # no budget: silent
    assert rc == 0 and doc["findings"] == []


def test_budget_and_remat_from_the_config(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "meshdiag.toml").write_text(
        'mesh = "batch=2,model=4"\ncollective-budget = "60KiB"\nremat-min-bytes = 65536\n'
    )
    rc, out, _ = run(capsys, "lint", RESHARD, "--output-format", "json")
    codes = [(f["line"], f["code"]) for f in json.loads(out)["findings"]]
    assert codes == [(201, "MD201"), (201, "MD202")]
    (tmp_path / "meshdiag.toml").write_text("collective-budget = [1]\n")
    rc, _, err = run(capsys, "lint", RESHARD)
    assert rc == 2 and "collective-budget" in err


def test_full_remat_names_the_source_line(capsys):
    rc, doc = _lint(capsys, RESHARD, "--remat-min-bytes", "64KiB", "--select", "MD202")
    (f,) = doc["findings"]
    assert f["line"] == 201 and f["severity"] == "warning"
    assert "onto all 8 devices" in f["message"] and "jit(reshard)/mul" in f["message"]
    assert "generate_comms.py:" in f["message"]
    rc, doc = _lint(capsys, RESHARD, "--select", "MD202")  # 128 KiB is under the 1 MiB default
    assert doc["findings"] == []
    rc, doc = _lint(capsys, SDY, "--remat-min-bytes", "64KiB", "--select", "MD202")
    assert [f["line"] for f in doc["findings"]] == [24]  # sdy.all_gather to [{}, {}]


def test_off_mesh_groups_only_where_they_are(capsys):
    rc, doc = _lint(capsys, COMMS, *MESH, "--select", "MD203")
    assert [(Path(f["path"]).name, f["line"]) for f in doc["findings"]] == [
        ("index_groups.after_optimizations.txt", 32)
    ]
    # on a mesh of another size nothing is attributed, so nothing is claimed
    rc, doc = _lint(capsys, INDEX, "--mesh", "a=4", "--select", "MD203")
    assert doc["findings"] == []


def test_suppression_comment_silences_a_collective_check(tmp_path, capsys):
    text = INDEX.read_text().replace(
        "stack_frame_id=5}", "stack_frame_id=5} // meshdiag: ignore[MD203]"
    )
    (tmp_path / "d.txt").write_text(text)
    rc, doc = _lint(capsys, tmp_path / "d.txt", *MESH, "--select", "MD203")
    assert rc == 0 and doc["findings"] == []


@pytest.mark.parametrize("code", ["MD201", "MD202", "MD203"])
def test_rules_are_documented(code, capsys):
    r = get_rule(code)
    assert r is not None and r.what and r.why and r.fix and r.example
    assert code in collective_checks()
    rc, out, _ = run(capsys, "rule", code)
    assert rc == 0 and out.startswith(f"# {r.name} ({code})") and "## Why is this bad?" in out


# -- written a file at a time ----------------------------------------------------------------


@pytest.mark.parametrize("mesh", [None, "batch=2,model=4"])
def test_the_json_written_a_file_at_a_time_is_the_whole_documents(mesh):
    """`JsonWriter` writes the bytes `json.dumps(document, indent=1)` gives for the whole
    document: every fixture file (modules or none), findings or none, no files at all."""
    from meshdiag.checks.context import CheckContext
    from meshdiag.comms.report import JsonWriter, module_json
    from meshdiag.comms.scan import scan_collectives
    from meshdiag.inputs.mesh_input import parse_mesh
    from meshdiag.memo import RunMemos
    from meshdiag.pipeline.comms_checks import run_collective_checks

    m = parse_mesh(mesh) if mesh else None
    memos = RunMemos()
    files, findings = [], []
    for f in scan_collectives([str(ROOT / "fixtures")], memos):
        ctx = CheckContext(f.path, mesh=m, collective_budget=1024, memos=memos)
        measured, found = run_collective_checks(f, ctx)
        files.append(measured)
        findings.extend(found)
    assert findings and any(f.modules for f in files) and any(not f.modules for f in files)
    for fs, fds in ((files, findings), (files, []), (files[:1], findings), ([], [])):
        out: list[str] = []
        w = JsonWriter(out.append, m)
        for f in fs:
            w.file(f)
        w.end(fds)
        modules = [mc for f in fs for mc in f.modules]
        whole = {
            "version": 1,
            "mesh": None if m is None else {"axes": [list(a) for a in m.axes]},
            "files": [
                {"path": f.path, "modules": [module_json(mc) for mc in f.modules]} for f in fs
            ],
            "totals": {
                "modules": len(modules),
                "collectives": sum(len(mc.rows) for mc in modules),
                "bytes_per_device": sum(mc.per_device for mc in modules),
                "bytes_total": sum(mc.total for mc in modules),
            },
            "findings": [f.to_json() for f in fds],
        }
        assert "".join(out) == json.dumps(whole, indent=1)


def test_bad_input_after_good_files_shows_only_its_error(capsys, tmp_path):
    """The output is written a file at a time but shown once every file is read: a file
    that cannot be read after others leaves stdout empty, as before."""
    (tmp_path / "a.txt").write_text(INDEX.read_text())
    (tmp_path / "b.txt").write_text(
        "HloModule m, num_partitions=8\nENTRY %main (p: f32[8]) -> f32[8] {\n"
        "  ROOT %r = f32[8]{0} all-reduce(%p), channel_id=1, replica_groups={{0,1},{2,x}}, "
        "to_apply=%add\n}\n"
    )
    for fmt in ("text", "json"):
        rc, out, err = run(capsys, "comms", tmp_path, "--format", fmt)
        assert rc == 2 and out == "" and "b.txt:3:" in err
        rc, out, _ = run(capsys, "comms", tmp_path / "a.txt", "--format", fmt)
        assert rc == 0 and out
