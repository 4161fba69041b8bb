"""`meshdiag lint` end to end: exit codes, seed dumps, mesh config files, suppression
comments, baseline round trip, per-file ignores, parallel == serial, worker failures."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from meshdiag.cli.app import main
from meshdiag.lint import runner
from meshdiag.lint.suppress import (
    apply_comments,
    comment_lines,
    fingerprint,
    load_baseline,
    parse_comment,
)
from meshdiag.model.findings import Finding

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "fixtures" / "seed"
MESH = ["--mesh", "batch=2,model=4", "--target", "tt-mlir"]


def run(capsys, *args):
    """Run the CLI in-process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as e:
        main(["lint", *map(str, args)])
    out, err = capsys.readouterr()
    return e.value.code, out, err


def codes_of(out: str) -> list[str]:
    return [f["code"] for f in json.loads(out)["findings"]]


@pytest.fixture
def work(tmp_path, monkeypatch):
    """An isolated working directory holding a copy of the distorted seed dump."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(SEED / "distorted_mesh.mlir", tmp_path / "dump.mlir")
    return tmp_path


# -- the seed dumps ----------------------------------------------------------------------------


def test_seed_distorted_mesh_fails(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    rc, out, _ = run(capsys, SEED / "distorted_mesh.mlir", *MESH, "--output-format", "json")
    assert rc == 1
    codes = set(codes_of(out))
    assert {"MD101", "MD102", "MD103"} <= codes
    paths = {f["path"] for f in json.loads(out)["findings"]}
    assert paths == {"fixtures/seed/distorted_mesh.mlir"}  # relative to the cwd


def test_seed_fixed_mesh_passes(capsys):
    rc, out, _ = run(capsys, SEED / "fixed_mesh.mlir", *MESH)
    assert rc == 0 and "All checks passed (checked 1 file)" in out


# -- exit codes --------------------------------------------------------------------------------


def test_exit_codes(capsys, work):
    assert run(capsys, "dump.mlir", *MESH)[0] == 1
    assert run(capsys, "dump.mlir", *MESH, "--exit-zero")[0] == 0
    assert run(capsys, "dump.mlir", "--isolated")[0] == 0  # no global mesh, no target
    rc, _, err = run(capsys, "missing.mlir", *MESH)
    assert rc == 2 and err.count("\n") == 1 and "missing.mlir" in err
    rc, _, err = run(capsys, "dump.mlir", "--output-format", "xml")
    assert rc == 2 and "unknown --output-format 'xml'" in err
    rc, _, err = run(capsys, "dump.mlir", "--select", "MD999")
    assert rc == 2 and "MD999" in err and "Traceback" not in err
    rc, _, err = run(capsys, "dump.mlir", "--fail-on", "fatal")
    assert rc == 2
    rc, _, err = run(capsys, "dump.mlir", "--jobs", "0")
    assert rc == 2 and "--jobs" in err
    rc, _, err = run(capsys, "dump.mlir", "--no-such-option")
    assert rc == 2


def _fake(severity, path="dump.mlir"):
    return Finding("MD101", "mesh-mismatch", severity, f"a {severity}", None, path, 3, 3)


@pytest.mark.parametrize(
    "severity, fail_on, rc",
    [
        ("info", None, 0),  # default threshold is warning
        ("warning", None, 1),
        ("warning", "error", 0),
        ("info", "info", 1),
        ("error", "error", 1),
    ],
)
def test_fail_on_threshold(capsys, work, monkeypatch, severity, fail_on, rc):
    monkeypatch.setattr(runner, "lint_file", lambda path, settings, data=None: [_fake(severity)])
    args = ["dump.mlir", "--jobs", "1"] + (["--fail-on", fail_on] if fail_on else [])
    got, out, _ = run(capsys, *args)
    assert got == rc
    assert f"a {severity}" in out  # shown even when it does not fail the run


def test_fail_on_from_config(capsys, work, monkeypatch):
    (work / "meshdiag.toml").write_text('fail-on = "error"\n')
    monkeypatch.setattr(runner, "lint_file", lambda path, settings, data=None: [_fake("warning")])
    assert run(capsys, "dump.mlir", "-j", "1")[0] == 0
    assert run(capsys, "dump.mlir", "-j", "1", "--fail-on", "warning")[0] == 1


def _pool_for_any_size(monkeypatch):
    """Workers even for the few bytes of a test (they start at `PARALLEL_BYTES`)."""
    from meshdiag.ir import batches

    monkeypatch.setattr(batches, "PARALLEL_BYTES", 1)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_internal_error_is_one_line(capsys, work, monkeypatch, jobs):
    shutil.copy(work / "dump.mlir", work / "other.mlir")
    _pool_for_any_size(monkeypatch)

    def boom(path, settings, data=None):
        raise ZeroDivisionError("division by zero in a check")

    monkeypatch.setattr(runner, "lint_file", boom)  # fork: workers see the patch too
    rc, out, err = run(capsys, "dump.mlir", "other.mlir", "--jobs", jobs)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "ZeroDivisionError" in err and "division by zero in a check" in err


def test_worker_process_death_is_one_line(capsys, work, monkeypatch):
    shutil.copy(work / "dump.mlir", work / "other.mlir")
    _pool_for_any_size(monkeypatch)

    def die(path, settings, data=None):
        import os

        os._exit(3)

    monkeypatch.setattr(runner, "lint_file", die)
    rc, _, err = run(capsys, "dump.mlir", "other.mlir", "--jobs", "2")
    assert rc == 2 and err.count("\n") == 1 and "worker process died" in err


# -- selection on the real dump ----------------------------------------------------------------


def test_select_ignore_extend(capsys, work):
    _, out, _ = run(capsys, "dump.mlir", *MESH, "--output-format", "json")
    everything = codes_of(out)
    assert {"MD101", "MD102", "MD103"} <= set(everything)
    _, out, _ = run(capsys, "dump.mlir", *MESH, "-f", "json", "--select", "MD103")
    assert set(codes_of(out)) == {"MD103"}
    _, out, _ = run(capsys, "dump.mlir", *MESH, "-f", "json", "--ignore", "MD101,MD102")
    assert "MD101" not in codes_of(out) and "MD102" not in codes_of(out)
    assert "MD103" in codes_of(out)
    _, out, _ = run(
        capsys, "dump.mlir", *MESH, "-f", "json", "--select", "MD101", "--extend-select", "MD103"
    )
    assert set(codes_of(out)) == {"MD101", "MD103"}
    # the more specific selector wins; on a tie, ignore wins
    _, out, _ = run(capsys, "dump.mlir", *MESH, "-f", "json", "--select", "MD10", "--ignore", "MD1")
    assert {"MD101", "MD103"} <= set(codes_of(out))
    rc, out, _ = run(capsys, "dump.mlir", *MESH, "-f", "json", "--select", "MD1", "--ignore", "MD1")
    assert rc == 0 and codes_of(out) == []


def test_a_selection_does_not_hide_what_could_not_be_read(capsys, tmp_path):
    """`--select MD2` on a file whose replica groups do not parse said "All checks passed":
    the collective checks never saw that all-reduce. MD001 stays on under any selection
    (as ruff reports syntax errors); only an ignore naming it turns it off."""
    bad = tmp_path / "bad.txt"
    bad.write_text(
        "HloModule m, num_partitions=4\n\nENTRY %main (p: f32[8]) -> f32[8] {\n"
        "  %p = f32[8]{0} parameter(0)\n"
        "  ROOT %ar = f32[8]{0} all-reduce(%p), replica_groups={{0,1},{2,3}, to_apply=%add\n}\n"
    )
    rc, out, _ = run(capsys, bad, "-f", "json", "--select", "MD2")
    assert rc == 1 and codes_of(out) == ["MD001"]
    for off in ("MD001", "MD0"):
        rc, out, _ = run(capsys, bad, "-f", "json", "--select", "MD2", "--ignore", off)
        assert rc == 0 and codes_of(out) == []


def test_per_file_ignores_cli_and_config(capsys, work):
    (work / "dumps" / "legacy").mkdir(parents=True)
    shutil.copy(work / "dump.mlir", work / "dumps" / "legacy" / "old.mlir")
    shutil.copy(work / "dump.mlir", work / "dumps" / "new.mlir")
    _, out, _ = run(
        capsys, "dumps", *MESH, "-f", "json", "--per-file-ignores", "dumps/legacy/*:MD103,MD101"
    )
    by_path: dict[str, set] = {}
    for f in json.loads(out)["findings"]:
        by_path.setdefault(f["path"], set()).add(f["code"])
    assert "MD103" in by_path["dumps/new.mlir"] and "MD101" in by_path["dumps/new.mlir"]
    assert not {"MD101", "MD103"} & by_path["dumps/legacy/old.mlir"]
    assert "MD102" in by_path["dumps/legacy/old.mlir"]
    # the same from a config file found from a nested working directory
    (work / "pyproject.toml").write_text(
        '[tool.meshdiag]\nmesh = "batch=2,model=4"\ntarget = "tt-mlir"\n'
        '[tool.meshdiag.per-file-ignores]\n"dumps/legacy/*" = ["MD1"]\n'
    )
    import os

    os.chdir(work / "dumps")
    rc, out, _ = run(capsys, ".", "-f", "json")
    paths = {f["path"] for f in json.loads(out)["findings"]}
    assert rc == 1 and paths == {"new.mlir"}


def test_statistics(capsys, work):
    shutil.copy(work / "dump.mlir", work / "again.mlir")
    rc, out, _ = run(capsys, ".", *MESH, "--statistics")
    assert rc == 1
    rows = [r.split("\t") for r in out.splitlines() if "\t" in r]
    counts = [int(r[0]) for r in rows]
    assert counts == sorted(counts, reverse=True) and len(rows) >= 3
    assert ["4", "MD101", "mesh-mismatch"] in [[c.strip(), k, n] for c, k, n in rows]


def test_exclude_from_config(capsys, work):
    (work / "skip").mkdir()
    shutil.copy(work / "dump.mlir", work / "skip" / "x.mlir")
    (work / "meshdiag.toml").write_text(
        'mesh = "batch=2,model=4"\ntarget = "tt-mlir"\nexclude = ["skip", "dump.mlir"]\n'
    )
    rc, out, _ = run(capsys, ".")
    assert rc == 0 and "checked 0 files" in out
    rc, out, _ = run(capsys, ".", "--exclude", "skip", "-f", "json")  # replaces the config's
    assert rc == 1 and {f["path"] for f in json.loads(out)["findings"]} == {"dump.mlir"}


# -- mesh config files -------------------------------------------------------------------------


def test_mesh_config_files(capsys, work):
    d = work / "meshes"
    d.mkdir()
    (d / "good.toml").write_text("# plan\n[mesh]\naxes = { batch = 2, model = 4 }\n")
    (d / "transposed.toml").write_text('name = "x"\n\n[mesh]\naxes = { a = 4, b = 2 }\n')
    (d / "flat.json").write_text('{\n  "axes": [["x", 4], ["y", 2]]\n}\n')
    (d / "broken.toml").write_text("[mesh]\naxes = [[1, 2, 3]]\n")
    (d / "notmesh.json").write_text('{"name": "something else"}\n')
    (d / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    rc, out, _ = run(capsys, "meshes", "--target", "tt-mlir", "--isolated", "-f", "json")
    got = {(f["path"], f["code"], f["line"]) for f in json.loads(out)["findings"]}
    assert rc == 1
    assert ("meshes/transposed.toml", "MD103", 3) in got
    assert ("meshes/flat.json", "MD103", 2) in got
    assert ("meshes/broken.toml", "MD001", 2) in got  # the line of the bad key, `axes`
    assert not any(p in ("meshes/good.toml", "meshes/notmesh.json") for p, _, _ in got)
    assert not any(p.endswith("pyproject.toml") for p, _, _ in got)
    # only the mesh rules run on a mesh file: no MD101 even with a different global mesh
    _, out, _ = run(capsys, "meshes/transposed.toml", "--mesh", "2x4", "--isolated", "-f", "json")
    assert "MD101" not in codes_of(out)


# -- suppression comments ----------------------------------------------------------------------


def test_parse_comment():
    assert parse_comment("  sdy.mesh @m = <[]> // meshdiag: ignore[MD103]") == {"MD103"}
    assert parse_comment("# meshdiag: ignore[md103, MD104]") == {"MD103", "MD104"}
    assert parse_comment("// meshdiag: ignore") == {"ALL"}
    assert parse_comment("//meshdiag:ignore[]") == {"ALL"}
    assert parse_comment("%0 = foo // meshdiag is great") is None
    assert parse_comment("no comment here") is None


def _with_lines(path: Path, edits: dict[int, str], insert: dict[int, str] | None = None):
    lines = path.read_text().splitlines()
    for n, suffix in edits.items():
        lines[n - 1] += suffix
    for n, text in sorted((insert or {}).items(), reverse=True):
        lines.insert(n - 1, text)
    path.write_text("\n".join(lines) + "\n")


def _found(capsys, *args):
    _, out, _ = run(capsys, *args, "-f", "json")
    return {(f["code"], f["line"]) for f in json.loads(out)["findings"]}


def test_suppression_same_line(capsys, work):
    before = _found(capsys, "dump.mlir", *MESH)
    assert ("MD103", 3) in before and ("MD103", 14) in before and ("MD101", 3) in before
    _with_lines(work / "dump.mlir", {3: "  // meshdiag: ignore[MD103]"})
    after = _found(capsys, "dump.mlir", *MESH)
    assert after == before - {("MD103", 3)}


def test_suppression_line_before_and_bare(capsys, work):
    before = _found(capsys, "dump.mlir", *MESH)
    # a comment line inserted above line 14 shifts it to 15; bare ignore silences all codes
    _with_lines(work / "dump.mlir", {}, insert={14: "  // meshdiag: ignore"})
    after = _found(capsys, "dump.mlir", *MESH)
    shifted = {(c, n + 1 if n >= 14 else n) for c, n in before}
    assert after == {(c, n) for c, n in shifted if n != 15}
    assert ("MD103", 3) in after


def test_suppression_hash_comment_several_codes(tmp_path):
    p = tmp_path / "m.hlo"
    p.write_text("HloModule m\n# meshdiag: ignore[MD101, MD102]\n  %p = f32[8] parameter(0)\n")
    fs = [Finding(c, "n", "error", "m", None, str(p), 3, 1) for c in ("MD101", "MD102", "MD103")]
    kept, n = apply_comments(fs, str(p))
    assert [f.code for f in kept] == ["MD103"] and n == 2


def test_comment_lines_stops_after_last_needed_line(tmp_path):
    # a gzip file cut off half way: comments before the cut are found, and the scan stops at
    # the last line needed, before it would reach the truncated end
    lines = [f"  %{i} = stablehlo.add %a, %a\n" for i in range(200000)]
    lines[1] = "  // meshdiag: ignore[MD103]\n"
    lines[4] = "  %x = foo  # meshdiag: ignore\n"
    lines[150000] = "  // meshdiag: ignore[MD101]\n"
    whole = gzip.compress("".join(lines).encode())
    p = tmp_path / "big.mlir.gz"
    p.write_bytes(whole[: len(whole) // 2])
    assert comment_lines(str(p), 10) == {2: {"MD103"}, 5: {"ALL"}}
    assert comment_lines(str(p), 1) == {}
    # the whole file, plain, without a trailing newline
    q = tmp_path / "big.mlir"
    q.write_text("".join(lines).rstrip("\n") + "  // meshdiag: ignore[MD104]")
    got = comment_lines(str(q), 10**9)
    assert got == {2: {"MD103"}, 5: {"ALL"}, 150001: {"MD101"}, 200000: {"MD104"}}


# -- baseline ----------------------------------------------------------------------------------


def test_fingerprint_ignores_positions():
    a = Finding("MD101", "n", "error", "mesh @mesh (line 3) differs at 3:20", None, "d", 3, 20)
    b = Finding("MD101", "n", "error", "mesh @mesh (line 14) differs at 14:20", None, "d", 14, 20)
    c = Finding("MD101", "n", "error", "mesh @mesh (line 3) differs: 4x2", None, "d", 3, 20)
    assert fingerprint(a) == fingerprint(b) != fingerprint(c)


def test_baseline_round_trip(capsys, work):
    rc, _, err = run(capsys, "dump.mlir", *MESH, "--write-baseline", "baseline.json")
    assert rc == 0 and "baseline.json" in err
    doc = json.loads((work / "baseline.json").read_text())
    assert doc["version"] == 1 and all(e["path"] == "dump.mlir" for e in doc["findings"])
    assert load_baseline(str(work / "baseline.json")).counts

    rc, out, _ = run(capsys, "dump.mlir", *MESH, "--baseline", "baseline.json")
    assert rc == 0 and "in the baseline" in out

    # lines shift: still covered
    _with_lines(work / "dump.mlir", {}, insert={1: "// a new comment at the top"})
    assert run(capsys, "dump.mlir", *MESH, "--baseline", "baseline.json")[0] == 0

    # a new problem: a second module with a mesh that is wrong in a new way
    with open(work / "dump.mlir", "a") as fh:
        fh.write(
            'module @Extra {\n  sdy.mesh @mesh = <["a"=8, "b"=2]>\n'
            "  func.func @main(%arg0: tensor<16xf32>) -> tensor<16xf32> {\n"
            "    return %arg0 : tensor<16xf32>\n  }\n}\n"
        )
    rc, out, _ = run(capsys, "dump.mlir", *MESH, "--baseline", "baseline.json", "-f", "json")
    new = json.loads(out)["findings"]
    assert rc == 1 and new
    assert all("Extra" in f["message"] for f in new)


def test_bad_baseline_is_usage_error(capsys, work):
    (work / "b.json").write_text("{not json")
    rc, _, err = run(capsys, "dump.mlir", *MESH, "--baseline", "b.json")
    assert rc == 2 and "b.json" in err and err.count("\n") == 1


# -- parallel == serial, output file -----------------------------------------------------------


def test_parallel_matches_serial(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    _pool_for_any_size(monkeypatch)
    args = ["fixtures", *MESH, "--output-format", "concise"]
    serial = run(capsys, *args, "--jobs", "1")
    parallel = run(capsys, *args, "--jobs", "2")
    assert serial == parallel and serial[0] == 1


def test_output_file_sarif(capsys, work):
    rc, out, _ = run(capsys, "dump.mlir", *MESH, "--output-format", "sarif", "-o", "r.sarif")
    assert rc == 1 and out == ""
    doc = json.loads((work / "r.sarif").read_text())
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in doc["runs"][0]["results"]
    }
    assert uris == {"dump.mlir"}


# -- stdin -------------------------------------------------------------------------------------


def test_stdin_dump(capsys, monkeypatch):
    """`meshdiag lint -` reads a dump from stdin, with suppression comments honoured."""
    import io
    import sys

    data = (SEED / "distorted_mesh.mlir").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    rc, out, _ = run(capsys, "-", *MESH, "--output-format", "json")
    assert rc == 1
    found = json.loads(out)["findings"]
    assert {"MD101", "MD102", "MD103"} <= {f["code"] for f in found}
    assert {f["path"] for f in found} == {"<stdin>"}
    # a comment on the line before silences that finding, as in a file
    lines = data.decode().splitlines(keepends=True)
    line = next(f["line"] for f in found if f["code"] == "MD102")
    lines.insert(line - 1, "// meshdiag: ignore[MD102]\n")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO("".join(lines).encode())))
    rc, out, _ = run(capsys, "-", *MESH, "--output-format", "json")
    after = [(f["code"], f["line"]) for f in json.loads(out)["findings"]]
    assert ("MD102", line + 1) not in after  # the silenced one, one line further down now
    assert sum(c == "MD102" for c, _ in after) == sum(f["code"] == "MD102" for f in found) - 1


def test_lint_starts_while_the_walk_goes_on_and_reports_every_file(tmp_path, monkeypatch):
    """The workers get batches of the walk as it goes on (the parent is still walking when
    the first batch is handed out); every file is linted once and listed in walk order."""
    from meshdiag.checks.registry import all_rules
    from meshdiag.ir import batches
    from meshdiag.lint import lint_paths
    from meshdiag.lint.config import CliOptions, resolve_settings
    from meshdiag.pipeline import inspect as pipeline

    monkeypatch.setattr(batches, "PARALLEL_BYTES", 1000)
    monkeypatch.setattr(batches, "MIN_BYTES", 1000)
    for d in range(3):
        sub = tmp_path / f"d{d}"
        sub.mkdir()
        for i in range(4):
            (sub / f"f{i}.txt").write_bytes(b"HloModule m\n" + b"// pad\n" * 100)
    walked: list[str] = []
    real_walk = runner.walk_files

    def walk(paths, settings):
        for f in real_walk(paths, settings):
            walked.append(f)
            yield f

    handed: list[tuple[list[str], int]] = []  # each batch, and how many files were walked
    real_map = pipeline.map_files

    def map_files(fn, items, *args, **kwargs):
        def tap():
            for batch in items:
                handed.append((batch, len(walked)))
                yield batch

        return real_map(fn, tap(), *args, **kwargs)

    monkeypatch.setattr(runner, "walk_files", walk)
    monkeypatch.setattr(pipeline, "map_files", map_files)
    settings = resolve_settings(CliOptions(isolated=True), {r.code: r for r in all_rules()})
    result = lint_paths([str(tmp_path)], settings, jobs=2)
    names = [f"d{d}/f{i}.txt" for d in range(3) for i in range(4)]
    assert [f.split(str(tmp_path) + "/")[-1] for f in result.files] == names
    # the batches in order are the walk, and the first went out before the walk was over
    assert [f for paths, _ in handed for f in paths] == walked
    assert handed[0][1] < len(names)


def test_display_path_is_relpath_below_the_working_directory():
    """A path below the working directory is shown relative to it (`os.path.relpath`), any
    other as given: every mix of absolute, relative, `.`, `..` and empty parts."""
    import itertools
    import os.path

    from meshdiag.lint.runner import display_path

    def reference(path: str, cwd: str) -> str:
        absolute = os.path.normpath(os.path.join(cwd, path))
        if absolute == cwd:
            return "."
        if absolute.startswith(cwd.rstrip("/") + "/"):
            return os.path.relpath(absolute, cwd)
        return path

    parts = ["a", ".", "..", "", "work", "main", ".x", "x.", "..."]
    for cwd in ("/work/main", "/work", "/"):
        for n in range(1, 5):
            for combo in itertools.product(parts, repeat=n):
                for lead in ("", "/"):
                    path = lead + "/".join(combo)
                    # (POSIX keeps a leading `//`: normpath and relpath disagree on it)
                    if path and not path.startswith("//"):
                        assert display_path(path, cwd) == reference(path, cwd), (path, cwd)
    assert display_path("-", "/work") == "<stdin>"
