"""`inspect` and `lint` on real every-pass XLA dumps, made with JAX on CPU by the
session fixture `dump` (conftest.py) from `tests/programs/shard_map_tuple.py`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter

import pytest

from meshdiag.cli.app import main
from meshdiag.pipeline.inspect import inspect_paths


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
    from meshdiag.memo import RunMemos
    from meshdiag.pipeline.module_summary import text_groups

    path, _ = dump
    checked = 0
    for f in sorted(path.glob("*.txt")):
        report = scan_path(str(f))
        for m in report.modules:
            tuples = [v for v in m.values if v.text.startswith("{{")]
            if not tuples:
                continue
            groups = text_groups(m, RunMemos())
            assert not any(t.startswith("{{") for t in groups)
            for v in tuples:
                own = [
                    t
                    for t, (_, _, vals) in groups.items()
                    if any(w.name == v.name and w.column == v.column for w in vals)
                ]
                from meshdiag.pipeline.inspect import gspmd_text

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
    doc = json.loads(outs[0])
    assert len(doc["files"]) > 40
    # the CLI's JSON (built from memoised fragments) keeps the contract's keys, and
    # {manual} values' local shapes
    keys = {"name", "line", "column", "kind", "op", "shape", "local_shape", "dtype"}
    keys |= {"notation", "sharding", "mesh", "gspmd"}
    manual = 0
    for _, _, v in all_values(doc):
        assert set(v) == keys
        if v["gspmd"] == "{manual}":
            manual += 1
            assert v["shape"] is None and v["local_shape"]
    assert manual > 10


# -- item: a dump directory reads as one report ---------------------------------------------


def _skipped_in(path) -> int:
    return sum(1 for p in path.rglob("*") if p.is_file() and p.suffix in (".o", ".ll"))


def test_directory_is_one_report(dump, capsys):
    from meshdiag.notation.gspmd import parse_gspmd
    from meshdiag.pipeline.dump_summary import canonical_text

    path, n = dump
    code, out, err = run(["inspect", str(path), "--quiet"], capsys)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    files = sum(1 for p in path.rglob("*") if p.is_file()) - _skipped_in(path)
    skipped = _skipped_in(path)
    assert skipped >= 4
    assert lines[0].startswith(f"{path}: {files} files read, {skipped} skipped")
    assert lines[-1] == f"{files} file(s) read, {skipped} skipped, 0 finding(s)"
    assert out.count("key: ") == 1  # the legend, once
    assert "MD001" not in out and ".o " not in out
    # {manual} values are per-device blocks: listed with their local shapes, never drawn
    # as a global tensor
    (manual,) = [i for i, ln in enumerate(lines) if ln.startswith("{manual}  ")]
    assert lines[manual + 1].startswith("  per-device shapes: ")
    assert not any(ln.startswith("{manual}  shape") for ln in lines)
    # each layout once, drawn once: in the summary table, as a heading, in its picture
    doc = inspect_paths([str(path)])
    keys = {canonical_text(parse_gspmd(v["gspmd"])) for _, _, v in all_values(doc) if v["gspmd"]}
    assert len(keys) >= 5
    for k in keys:
        assert sum(ln.startswith(f"{k}  ") and " values in " in ln for ln in lines) == 1, k
        assert sum(ln == f"{k}" or ln.startswith(f"{k}  shape ") for ln in lines) <= 1, k
    # each file a sharding is listed in is a real file of the dump, its path unwrapped
    listed = [ln.split("  (")[0].strip() for ln in lines if ln.startswith("    ") and "  (%" in ln]
    assert listed and all((path / p).is_file() for p in listed)
    # the per-file listing of the same directory, for scale
    per_file = [
        str(p) for p in sorted(path.rglob("*")) if p.is_file() and p.suffix not in (".o", ".ll")
    ]
    code, out_files, _ = run(["inspect", *per_file, "--quiet"], capsys)
    assert len(lines) * 5 < len(out_files.splitlines())


def test_two_notations_of_one_layout_are_one_group(dump, capsys):
    """JAX's own GSPMD form of P("data", None) on the program's mesh is the group heading,
    and its Shardy spelling from the dump is listed under it."""
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    from meshdiag.notation.gspmd import parse_gspmd
    from meshdiag.pipeline.dump_summary import canonical_text

    path, n = dump
    mesh = Mesh(np.array(jax.devices()[:n]).reshape(2, n // 2), ("data", "model"))
    jax_text = str(NamedSharding(mesh, P("data", None))._to_xla_hlo_sharding(2))
    key = canonical_text(parse_gspmd(jax_text))
    code, out, _ = run(["inspect", str(path), "--quiet"], capsys)
    lines = out.splitlines()
    (at,) = [i for i, ln in enumerate(lines) if ln.startswith(f"{key}  ") and "values in" in ln]
    block = lines[at + 1 : lines.index("", at)]
    spellings = block[block.index("  written as:") + 1 :]
    assert any(s.strip().startswith('#sdy.sharding<@mesh, [{"data"}, {}]>  ×') for s in spellings)
    assert any(s.strip().startswith(f"{key}  ×") for s in spellings)


def test_a_value_annotated_twice_on_its_line_counts_once(dump):
    from meshdiag.notation.gspmd import parse_gspmd
    from meshdiag.pipeline.dump_summary import DumpSummary, canonical_text
    from meshdiag.pipeline.inspect import iter_inspect

    path, _ = dump
    before = str(next(path.glob("*.before_optimizations.txt")))
    (item,) = list(iter_inspect([before]))
    s = DumpSummary()
    s.add(item, mesh=None)
    doc = inspect_paths([before])
    vals = [v for _, _, v in all_values(doc)]
    # %x.1 carries sharding={...} and xla.sdy.sharding="..." on one line
    assert len(vals) > len({(v["line"], v["name"]) for v in vals})
    distinct = {(v["line"], v["name"], canonical_text(parse_gspmd(v["gspmd"]))) for v in vals}
    assert s.values == len(distinct) == sum(g.values for g in s.groups.values())
    assert sum(sum(g.spellings.values()) for g in s.groups.values()) == len(vals)


def test_directory_findings_once_with_counts(tmp_path, capsys):
    from pathlib import Path

    seed = Path(__file__).resolve().parent.parent / "fixtures" / "seed" / "distorted_mesh.mlir"
    for i in range(3):
        (tmp_path / f"pass{i}.mlir").write_bytes(seed.read_bytes())
    (tmp_path / "kernel.o").write_bytes(b"\x7fELF\x00\x00")  # skipped by its name
    (tmp_path / "blob").write_bytes(b"abc\x00def")  # by its content
    code, out, _ = run(["inspect", str(tmp_path), "--mesh", "batch=2,model=4", "-q"], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"{tmp_path}: 3 files read, 2 skipped")
    from meshdiag.inputs.mesh_input import parse_mesh
    from meshdiag.pipeline.inspect import iter_inspect

    (one,) = list(iter_inspect([str(tmp_path / "pass0.mlir")], mesh=parse_mesh("batch=2,model=4")))
    n = len(one.findings)
    assert n > 0 and lines[-1] == f"3 file(s) read, 2 skipped, {3 * n} finding(s)"
    # each distinct finding is listed once, with how often it fired in how many files
    distinct = Counter((f.code, f.severity, f.message, f.fix) for f in one.findings)
    assert f"findings: {len(distinct)} distinct" in lines
    for k, times in distinct.items():
        (at,) = [i for i, ln in enumerate(lines) if ln.endswith(f"{k[0]} [{k[1]}] {k[2]}")]
        assert lines[at + 2] == f"    (×{3 * times} in 3 files; the first shown)"


def test_summary_holds_aggregates_not_values(dump):
    """Folding the dump three times over triples the counts, not what is kept."""
    from meshdiag.pipeline.dump_summary import SHAPES_MAX, WHERE_MAX, DumpSummary
    from meshdiag.pipeline.inspect import iter_inspect

    path, _ = dump
    once, thrice = DumpSummary(), DumpSummary()
    for item in iter_inspect([str(path)]):
        once.add(item, mesh=None)
    parts = [DumpSummary() for _ in range(3)]
    for part in parts:
        for item in iter_inspect([str(path)]):
            part.add(item, mesh=None)
        thrice.merge(part)  # as the parent folds the workers' batches
    assert (thrice.files, thrice.modules, thrice.values) == (
        3 * once.files,
        3 * once.modules,
        3 * once.values,
    )
    assert list(thrice.groups) == list(once.groups)
    for key, g in thrice.groups.items():
        assert g.values == 3 * once.groups[key].values and g.files == 3 * once.groups[key].files
        assert len(g.where) == min(WHERE_MAX, g.files)
        assert len(g.shapes) <= SHAPES_MAX and len(g.local_shapes) <= SHAPES_MAX


def _folded(items: list, size: int):
    """The items folded as workers do: a summary per batch of `size`, merged in order."""
    from meshdiag.pipeline.dump_summary import DumpSummary

    whole = DumpSummary()
    for i in range(0, len(items), size):
        part = DumpSummary()
        for item in items[i : i + size]:
            part.add(item, mesh=None)
        whole.merge(part)
    return whole


def test_summary_counts_do_not_depend_on_the_batches(dump):
    """Workers fold batches of files and the parent merges them: every count is the same
    however the files were cut into batches (file by file, in pairs, all in one), while no
    sharding has more distinct shapes than the summary keeps."""
    from meshdiag.pipeline.dump_summary import SHAPES_MAX
    from meshdiag.pipeline.inspect import iter_inspect

    path, _ = dump
    items = list(iter_inspect([str(path)]))

    runs = [_folded(items, n) for n in (1, 2, len(items))]
    assert all(len(g.shapes) < SHAPES_MAX for g in runs[0].groups.values())
    for s in runs[1:]:
        assert s.groups == runs[0].groups and s.values == runs[0].values


def _summary_facts(s) -> tuple:
    """What a summary says, orders included (dataclass equality ignores a dict's order)."""
    return (
        s,
        list(s.groups),
        [(k, list(g.spellings), list(g.shapes), g.where) for k, g in s.groups.items()],
        list(s.meshes),
        list(s.findings),
    )


@pytest.mark.parametrize(("files", "entries"), [(1, 1 << 15), (3, 1 << 15), (32, 40), (7, 1)])
def test_a_file_batch_folds_in_what_folding_each_file_as_read_does(
    dump, monkeypatch, files, entries
):
    """`inspect DIR`'s workers fold files in a batch at a time (`FileBatch`): whatever the
    batch's bounds (a file's modules folded in mid-file once they hold enough entries),
    the summary is the one folding each file in as it is read makes."""
    from functools import partial

    from meshdiag.memo import RunMemos
    from meshdiag.pipeline import dump_summary as D
    from meshdiag.pipeline import file_batch as B
    from meshdiag.pipeline.inspect import Inspected, scan_checked

    path, _ = dump
    paths = sorted(str(p) for p in path.rglob("*") if p.is_file())
    want = D.DumpSummary()
    memos = RunMemos()
    for p in paths:
        fold = want.fold(p, None, memos)
        report, _, findings = scan_checked(p, None, None, "xla", each=fold.module, memos=memos)
        want.end(fold, Inspected(report, findings))
    monkeypatch.setattr(B, "BATCH_FILES", files)
    monkeypatch.setattr(B, "BATCH_ENTRIES", entries)
    got = D.DumpSummary()
    memos = RunMemos()
    batch = B.FileBatch()
    held = []
    for p in paths:
        each = batch.start(partial(got.fold, p, None, memos))
        report, _, findings = scan_checked(p, None, None, "xla", each=each, memos=memos)
        held.append(sum(len(f[2]) for f in batch._files))
        batch.end(Inspected(report, findings))
    batch.flush()
    assert got.files == len(paths) - got.skipped and got.modules > 0
    assert _summary_facts(got) == _summary_facts(want)
    if entries == 1:  # each module folded in as it ends: none held past its file's scan
        assert max(held) == 0


def test_summary_counts_of_many_shapes_do_not_depend_on_the_batches(tmp_path):
    """One layout in 12 shapes spread over files: cut into batches of 1, 5 or 12 files, the
    merged counts are the same (a cap of 6 kept per batch used to drop different ones)."""
    from meshdiag.pipeline.inspect import iter_inspect

    paths = []
    for i in range(12):
        rows = "\n".join(
            f"  %p{k} = f32[{2 * n},8]{{1,0}} parameter({k}), sharding={{devices=[2,1]<=[2]}}"
            for k, n in enumerate((i + 1, (i + 5) % 12 + 1, 1))
        )
        p = tmp_path / f"m{i:02}.txt"
        p.write_text(f"HloModule m{i}, num_partitions=2\n\nENTRY %main {{\n{rows}\n}}\n")
        paths.append(str(p))
    items = list(iter_inspect(paths))

    one, five, all_ = _folded(items, 1), _folded(items, 5), _folded(items, 12)
    (g,) = one.groups.values()
    assert len(g.shapes) == 12 and g.shapes[(2, 8)] == 14
    assert one.groups == five.groups == all_.groups


@pytest.mark.parametrize("piped", [True, False])
def test_summary_report_is_what_rich_prints(dump, piped):
    """`inspect DIR` writes each part of its report as `render_part` draws it (piped: the
    lines' and pictures' plain text, without rich); that is what rich prints, byte for
    byte, piped or on a colour terminal."""
    import io

    from rich.console import Console

    from meshdiag.pipeline.dump_summary import DumpSummary
    from meshdiag.pipeline.inspect import iter_inspect
    from meshdiag.report.dump_text import report
    from meshdiag.report.file_text import render_part

    path, _ = dump
    summary = DumpSummary()
    for item in iter_inspect([str(path)]):
        summary.add(item, mesh=None)
    look = {"width": 90, "height": 25, "highlight": False}
    if piped:
        look.update(color_system=None, soft_wrap=True)
    else:
        look.update(color_system="truecolor", force_terminal=True, soft_wrap=False)
    parts = list(report(summary, roots=[str(path)], split="xla"))
    console = Console(file=io.StringIO(), **look)
    for p in parts:
        console.print(p)
    ours = Console(file=io.StringIO(), **look)
    assert "".join(render_part(p, ours, None) for p in parts) == console.file.getvalue()
    assert any(p.__class__.__name__ == "LayoutPicture" for p in parts)
