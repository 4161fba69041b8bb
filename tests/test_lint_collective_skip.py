"""`lint` skips the collective scan of a file when none of the enabled checks judges any of
its collectives (by default only MD202 judges, and only all-gathers of at least
remat-min-bytes) and `reads_clean` says the scan would find no problem. Skipped or scanned,
a file gets the same findings."""

from __future__ import annotations

from pathlib import Path

import pytest

from meshdiag.checks.context import CheckContext
from meshdiag.checks.registry import collective_checks
from meshdiag.comms import scan as comms_scan
from meshdiag.inputs.mesh_input import parse_mesh
from meshdiag.lint import runner
from meshdiag.lint.config import LintSettings
from meshdiag.pipeline.comms_checks import judged_before_scan

ROOT = Path(__file__).resolve().parent.parent

HLO = "HloModule m, num_partitions=4\n\nENTRY %main (p: f32[8]) -> f32[8] {\n{body}\n}\n"
ADD = "  %p = f32[8]{0} parameter(0)\n"
#: files with collectives but no all-gather, readable or not
CASES = {
    "all-reduce": ADD + "  ROOT %a = f32[8]{0} all-reduce(%p), replica_groups={{0,1},{2,3}}",
    "bad groups": ADD + "  ROOT %a = f32[8]{0} all-reduce(%p), replica_groups={{0,1},{2,x}}",
    "bad permute": ADD + "  ROOT %c = f32[8]{0} collective-permute(%p), source_target_pairs={{0,",
    "reduce-scatter": ADD
    + "  ROOT %r = f32[2]{0} reduce-scatter(%p), replica_groups=[1,4]<=[4], dimensions={0}",
    "operand only": ADD + "  ROOT %f = f32[8]{0} fusion(%all-reduce.1), kind=kLoop",
    # an all-gather's name, not the op: MD202 has nothing to judge
    "gathered name": ADD + "  ROOT %f = f32[8]{0} fusion(%all-gather.1), kind=kLoop",
    # all-gathers whole on all 4 devices: 128 B (under the default 1 MiB), 1 MiB (at it),
    # and the async form of each
    "small gather": "  %p = f32[8]{0} parameter(0)\n"
    "  ROOT %g = f32[32]{0} all-gather(%p), replica_groups=[1,4]<=[4], dimensions={0}",
    "big gather": "  %p = f32[65536]{0} parameter(0)\n"
    "  ROOT %g = f32[262144]{0} all-gather(%p), replica_groups=[1,4]<=[4], dimensions={0}",
    "small gather start": "  %p = f32[8]{0} parameter(0)\n"
    "  %s = (f32[8]{0}, f32[32]{0}) all-gather-start(%p), replica_groups=[1,4]<=[4], "
    "dimensions={0}\n  ROOT %d = f32[32]{0} all-gather-done(%s)",
    "big gather start": "  %p = f32[65536]{0} parameter(0)\n"
    "  %s = (f32[65536]{0}, f32[262144]{0}) all-gather-start(%p), replica_groups=[1,4]<=[4], "
    "dimensions={0}\n  ROOT %d = f32[262144]{0} all-gather-done(%s)",
    # a big all-gather over 2 of the 4 devices, then one over the other 2: whole only
    # through the first, and under 1 MiB only at the first
    "chain": "  %p = f32[65536]{0} parameter(0)\n"
    "  %a = f32[131072]{0} all-gather(%p), replica_groups={{0,1},{2,3}}, dimensions={0}\n"
    "  %c = f32[131072]{0} convert(%a)\n"
    "  ROOT %b = f32[262144]{0} all-gather(%c), replica_groups={{0,2},{1,3}}, dimensions={0}",
}
SDY_BAD = (
    "module @m attributes {mhlo.num_partitions = 8 : i32} {\n"
    '  sdy.mesh @mesh = <["x"=2, "y"=4]>\n'
    "  func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {\n"
    '    %0 = sdy.all_reduce {"q"} %arg0 out_sharding=<@mesh, [{}]> : tensor<8xf32>\n'
    "    return %0 : tensor<8xf32>\n  }\n}\n"
)
MESH_BAD = (
    'HloModule m, num_partitions=2, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=oops]>}}'
    "\n\nENTRY %main (p: f32[8]) -> f32[8] {\n"
    + ADD
    + "  ROOT %a = f32[8]{0} all-reduce(%p), replica_groups={{0,1}}\n}\n"
)


def _inputs(tmp_path: Path) -> list[Path]:
    files = sorted(p for p in (ROOT / "fixtures").rglob("*") if p.suffix in (".txt", ".mlir"))
    for name, body in CASES.items():
        p = tmp_path / f"{name.replace(' ', '_')}.txt"
        p.write_text(HLO.replace("{body}", body))
        files.append(p)
    for name, text in {"sdy_bad.mlir": SDY_BAD, "mesh_bad.txt": MESH_BAD}.items():
        (tmp_path / name).write_text(text)
        files.append(tmp_path / name)
    return files


def _findings(path: Path, settings: LintSettings) -> list:
    from meshdiag.ir.scan import read_small_file

    data = read_small_file(str(path))
    return runner._collective_findings(str(path), path.name, settings, collective_checks(), data)


@pytest.mark.parametrize("remat", [1 << 20, 0])
@pytest.mark.parametrize("mesh", [None, "x=2,y=2"])
def test_skipped_files_get_the_findings_of_a_scan(tmp_path, monkeypatch, mesh, remat):
    files = _inputs(tmp_path)
    codes = frozenset(collective_checks())
    where = {"mesh": parse_mesh(mesh) if mesh else None, "remat_min_bytes": remat}
    fast = LintSettings(codes=codes, **where)
    skipped = []
    real = comms_scan.reads_clean

    def counting(data, memo, judged=None):
        clean = real(data, memo, judged)
        skipped.append(clean)
        return clean

    monkeypatch.setattr(comms_scan, "reads_clean", counting)
    got = {p: _findings(p, fast) for p in files}
    monkeypatch.setattr(comms_scan, "reads_clean", lambda data, memo, judged=None: False)
    full = LintSettings(codes=codes, **where)
    want = {p: _findings(p, full) for p in files}
    assert got == want
    # without a mesh only MD202 judges, and the all-reduce files are skipped; with one,
    # MD203 judges every collective and nothing is
    assert any(skipped) == (mesh is None)
    assert any(f.code == "MD001" for p in files for f in want[p])  # the broken ones
    remats = {p.stem for p in files for f in want[p] if f.code == "MD202"}
    # the big all-gathers are whole on all devices; the small ones only count with no floor
    big = {"big_gather", "big_gather_start", "chain"}
    assert big <= remats
    assert ({"small_gather", "small_gather_start"} <= remats) == (remat == 0)


def test_reads_clean_only_when_the_scan_finds_no_problem(tmp_path):
    memo = comms_scan.ScanMemo()
    for name, body in CASES.items():
        data = HLO.replace("{body}", body).encode()
        problems = comms_scan.scan_bytes("t", data, comms_scan.ScanMemo()).problems
        assert comms_scan.reads_clean(data, memo) == (not problems), name
    assert not comms_scan.reads_clean(SDY_BAD.encode(), memo)  # Shardy: always scanned
    assert not comms_scan.reads_clean(MESH_BAD.encode(), memo)  # a mesh: always scanned


def _collective(kind: str):
    """A collective of a 1 MiB result as its own line reads."""
    from meshdiag.comms.model import Collective

    return Collective(kind, kind, "%c", 0, 1, "hlo", results=(((1 << 18,), "f32"),))


def test_what_is_judged_follows_the_settings():
    checks = collective_checks()
    judged = judged_before_scan(checks, CheckContext("f"))  # by default only MD202 judges
    assert judged(_collective("all-gather"))
    assert not judged(_collective("all-reduce"))
    assert judged_before_scan(checks, CheckContext("f", collective_budget=1)) is None
    assert judged_before_scan(checks, CheckContext("f", mesh=parse_mesh("x=2"))) is None
    nothing = judged_before_scan({}, CheckContext("f"))
    assert not nothing(_collective("all-gather")) and not nothing(_collective("all-reduce"))


def test_only_big_all_gathers_are_judged_before_a_scan():
    memo = comms_scan.ScanMemo()
    for floor in (1 << 20, 0):
        judged = judged_before_scan(collective_checks(), CheckContext("f", remat_min_bytes=floor))
        for name in ("small gather", "big gather", "small gather start", "big gather start"):
            data = HLO.replace("{body}", CASES[name]).encode()
            assert comms_scan.reads_clean(data, memo)  # it reads
            kept = not comms_scan.reads_clean(data, memo, judged)
            assert kept == (name.startswith("big") or floor == 0), (name, floor)
