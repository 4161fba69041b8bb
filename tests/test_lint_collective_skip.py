"""`lint` skips the collective scan of a file when none of the enabled checks judges any of
its collectives (by default only MD202 judges, and only all-gathers of at least
remat-min-bytes) and `reads_clean` says the scan would find no problem. Skipped or scanned,
a file gets the same findings."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# --- a big file: its bytes are asked in chunks before its collective scan ----------------

#: words that make a text hold collectives, and text around them that does not
WORDS = [b"all-gather(", b"reduce-scatter(", b"sdy.all_slice ", b"sdy.reshard %", b"sdy.reshardx"]
FILLER = [b"sdy.sharding<@m>", b"\n", b"  %x = f32[8]{0} add(%p)", b"sdy.", b"all", b"-", b" "]


@settings(max_examples=150, deadline=None)
@given(
    parts=st.lists(st.sampled_from(FILLER + WORDS), max_size=40),
    chunk=st.integers(1, 48),
    start=st.integers(0, 20),
)
def test_a_file_in_chunks_holds_collectives_wherever_its_bytes_do(
    tmp_path_factory, parts, chunk, start
):
    data = b"".join(parts)
    path = tmp_path_factory.mktemp("chunks") / "f.mlir"
    path.write_bytes(data)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(comms_scan, "_CHUNK", chunk)
        whole = comms_scan.file_may_hold_collectives(str(path))
        part = comms_scan.file_may_hold_collectives(str(path), start, len(data) - start // 2)
    # a word across two chunks is found; the chunked answer may only err towards a scan
    # (a word cut at a chunk's end may look whole)
    if comms_scan.may_hold_collectives(data):
        assert whole
    if not any(w in data for w in (*comms_scan._HLO_WORDS, *comms_scan._SDY_OPS)):
        assert not whole
    if comms_scan.may_hold_collectives(data[start : len(data) - start // 2]):
        assert part


def test_a_file_in_chunks_is_scanned_for_a_long_line_when_unreadable_or_streamed(
    tmp_path, monkeypatch
):
    path = tmp_path / "long.mlir"
    path.write_bytes(b"short\n" + b"x" * 300 + b"\nshort\n")
    monkeypatch.setattr(comms_scan, "_CHUNK", 64)
    assert not comms_scan.file_may_hold_collectives(str(path))
    monkeypatch.setattr(comms_scan, "MAX_LINE", 299)  # the collective scan reports it
    assert comms_scan.file_may_hold_collectives(str(path))
    path.write_bytes(b"x" * 300)  # a last line without its newline
    assert comms_scan.file_may_hold_collectives(str(path))
    assert comms_scan.file_may_hold_collectives(str(tmp_path / "gone.mlir"))
    (tmp_path / "short.mlir.gz").write_bytes(b"short\n")  # streamed by the scan: not read
    assert comms_scan.file_may_hold_collectives(str(tmp_path / "short.mlir.gz"))
    assert comms_scan.file_may_hold_collectives("-")


@pytest.mark.parametrize("name", ["big gather", "all-reduce"])
def test_a_streamed_file_gets_the_findings_of_its_scan(tmp_path, monkeypatch, name):
    """A file too big to read whole (streamed, or in parts: no `data`) is asked in chunks:
    one naming no collective is not scanned, one that does gets its findings."""
    codes = frozenset(collective_checks())
    path = tmp_path / "big.txt"
    filler = "".join(f"  %n{i} = f32[8]{{0}} add(%p, %p)\n" for i in range(40))
    path.write_text(HLO.replace("{body}", filler + CASES[name]))
    scans = []
    real = comms_scan.scan_path
    monkeypatch.setattr(comms_scan, "scan_path", lambda *a: scans.append(a) or real(*a))
    got = runner._collective_findings(
        str(path), "big.txt", LintSettings(codes=codes), collective_checks()
    )
    assert len(scans) == 1  # named collectives: scanned
    assert [f.code for f in got] == (["MD202"] if name == "big gather" else [])
    path.write_text(HLO.replace("{body}", filler + ADD))
    got = runner._collective_findings(
        str(path), "big.txt", LintSettings(codes=codes), collective_checks()
    )
    assert got == [] and len(scans) == 1  # none named: not scanned


# --- a big file: its sharding scan's reads are asked, not the file again ------------------


@settings(max_examples=150, deadline=None)
@given(
    parts=st.lists(st.sampled_from(FILLER + WORDS), max_size=40),
    block=st.integers(1, 48),
    cut=st.integers(0, 40),
)
def test_a_streamed_scan_sees_collectives_wherever_its_bytes_hold_them(parts, block, cut):
    """Shown every buffer a streamed scan reads (whole, or a part from a line start), the
    sniff says `maybe` exactly when `file_may_hold_collectives` would of those bytes: never
    less (a word across two reads is whole in the block of its line), and only more where
    a word cut at a read's end looks whole."""
    import io

    from meshdiag.ir import lines
    from meshdiag.ir.scan import scan_file

    data = b"".join(parts)
    start = data.rfind(b"\n", 0, min(cut, len(data))) + 1
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lines, "BLOCK", block)
        for text in (data, data[start:]):
            sniff = comms_scan.CollectiveSniff()
            report = scan_file("f.mlir", io.BytesIO(text), on_block=sniff)
            if report.skipped:  # (no bytes: nothing to ask)
                continue
            if comms_scan.may_hold_collectives(text):
                assert sniff.maybe
            if not any(w in text for w in (*comms_scan._HLO_WORDS, *comms_scan._SDY_OPS)):
                assert not sniff.maybe


def _streamed(tmp_path, monkeypatch, body: str, name: str = "big.txt"):
    """A file linted as a big one (streamed: no bytes read ahead), its collective findings
    and how many times its collective scan or the search of its bytes ran."""
    from meshdiag.ir import lines
    from meshdiag.ir import scan as ir_scan

    path = tmp_path / name
    path.write_text(HLO.replace("{body}", body))
    monkeypatch.setattr(ir_scan, "BLOCK", 64)  # not read whole: streamed
    monkeypatch.setattr(lines, "BLOCK", 64)  # in reads of 64 bytes
    calls = {"scan": 0, "search": 0}
    real_scan, real_search = comms_scan.scan_path, comms_scan.file_may_hold_collectives

    def scan(*a):
        calls["scan"] += 1
        return real_scan(*a)

    def search(*a):
        calls["search"] += 1
        return real_search(*a)

    monkeypatch.setattr(comms_scan, "scan_path", scan)
    monkeypatch.setattr(comms_scan, "file_may_hold_collectives", search)
    settings_ = LintSettings(codes=frozenset(collective_checks()) | {"MD001"})
    found = runner.lint_file(str(path), settings_)
    return [f.code for f in found], calls


def test_a_streamed_file_is_read_once_for_both_scans(tmp_path, monkeypatch):
    filler = "".join(f"  %n{i} = f32[8]{{0}} add(%p, %p)\n" for i in range(40))
    codes, calls = _streamed(tmp_path, monkeypatch, filler + CASES["big gather"])
    assert codes == ["MD202"] and calls == {"scan": 1, "search": 0}
    codes, calls = _streamed(tmp_path, monkeypatch, filler + ADD)
    assert codes == [] and calls == {"scan": 0, "search": 0}  # named none: not scanned


def test_a_line_the_sharding_scan_skipped_is_searched_again(tmp_path, monkeypatch):
    """A line too long for the sharding scan (an MD001) was not shown to the sniff: the
    file's bytes are searched again, and its collective is scanned and judged."""
    from meshdiag import limits

    monkeypatch.setattr(limits, "MAX_ANNOTATION_CHARS", 64)  # lines of 256 bytes at most
    gather = CASES["big gather"].replace("dimensions={0}", "dimensions={0}" + " " * 300)
    # (past the first 8 KiB, which the scan reads whole to tell text from binary)
    filler = "".join(f"  %n{i} = f32[8]{{0}} add(%p, %p)\n" for i in range(400))
    codes, calls = _streamed(tmp_path, monkeypatch, filler + gather)
    assert "MD001" in codes and "MD202" in codes
    assert calls == {"scan": 1, "search": 1}
