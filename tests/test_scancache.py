"""The scanner's per-run memo: lines learned in one run are replayed in the same run, the
memo stays within its budget on a file with no repeated line, and a run's memo is its own
(nothing is remembered at module level between runs)."""

from __future__ import annotations

import io

import pytest
from scan_reference import value_fields

from meshdiag.ir import linememo, scancache
from meshdiag.ir.model import LineValues
from meshdiag.ir.scan import scan_bytes, scan_file
from meshdiag.ir.scancache import ScanCache

PASS = (
    "HloModule m{n}, num_partitions=8\n"
    "ENTRY %main (p: f32[8,16]) -> f32[8,16] {{\n"
    "  %p = f32[8,16]{{1,0}} parameter(0), sharding={{devices=[2,4]<=[8]}}\n"
    "  ROOT %a = f32[8,16]{{1,0}} add(%p, %p), sharding={{devices=[2,4]<=[8]}}, "
    'metadata={{op_name="sharding_constraint"}}\n'
    "}}\n"
)


def scan(text: str, cache: ScanCache | None = None):
    return scan_file("d.txt", io.BytesIO(text.encode()), cache=cache)


def learned(cache: ScanCache) -> int:
    return sum(len(known) for known, _ in cache._known.values())


def test_a_run_replays_its_lines_across_files():
    cache = ScanCache()
    first = scan(PASS.format(n=0), cache)
    again = scan(PASS.format(n=1), cache)  # another file of the same run: the same lines
    entries = [it for r in (first, again) for it in r.modules[0].items]
    assert all(isinstance(it, LineValues) for it in entries)
    assert entries[0] is entries[2] and entries[1] is entries[3]  # replayed, not re-read
    assert [v.line for v in again.modules[0].values] == [3, 4]


def test_runs_do_not_share_what_they_learned():
    a, b = ScanCache(), ScanCache()
    ra, rb = scan(PASS.format(n=0), a), scan(PASS.format(n=0), b)
    assert ra.modules == rb.modules
    assert ra.modules[0].items[0] is not rb.modules[0].items[0]
    assert learned(a) == learned(b) > 0


def test_the_line_memo_stays_within_its_budget(monkeypatch):
    monkeypatch.setattr(scancache, "MAX_LINE_BYTES", 4000)
    cache = ScanCache()
    text = "".join(
        f"  %v{i} = f32[{i + 1},16]{{1,0}} parameter(0), sharding={{devices=[2,4]<=[8]}}\n"
        for i in range(500)
    )
    r = scan("HloModule m, num_partitions=8\n" + text, cache)
    assert len(r.modules[0].values) == 500
    assert cache._line_bytes <= 4000
    assert 0 < learned(cache) < 500  # emptied along the way, still learning


def test_each_distinct_sharding_is_parsed_once_per_run():
    cache = ScanCache()
    scan(PASS.format(n=0) + PASS.format(n=1).replace("%p", "%q"), cache)
    parses = [k for k in cache._parses.data if k[0] == "hlo"]
    assert parses == [("hlo", "{devices=[2,4]<=[8]}")]


def test_each_parse_tells_the_run_what_it_holds():
    """A parse is weighed by the devices it lists (an iota assignment's at the bytes of its
    array, a listed one's at a tuple slot and an int each) and told to the run once, when
    first made; a hit tells nothing."""
    told: list[int] = []
    cache = ScanCache(told.append)
    listed = "{devices=[4,1]" + ",".join(map(str, (3, 1, 0, 2))) + "}"
    hlo = "HloModule m, num_partitions=4\n  %p = f32[8,16]{1,0} parameter(0), sharding=S\n"
    scan(hlo.replace("S", listed) + hlo.replace("S", listed), cache)
    assert len(told) == 1  # once per distinct text, in the file or the run
    assert told[0] == 4 * scancache.LISTED_DEVICE_BYTES + scancache.PARSED_BYTES + len(listed)
    scan(hlo.replace("S", "{devices=[4,1]<=[4]}"), cache)
    iota = 4 * scancache.IOTA_DEVICE_BYTES + scancache.PARSED_BYTES + len("{devices=[4,1]<=[4]}")
    assert told[1:] == [iota]
    told.clear()
    shardy = (
        "module @m {\n"
        '  sdy.mesh @mesh = <["x"=2, "y"=4], device_ids=[7, 6, 5, 4, 3, 2, 1, 0]>\n'
        '  func.func @main(%a: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>})'
        " -> tensor<8x8xf32> {\n    return %a : tensor<8x8xf32>\n  }\n}\n"
    )
    scan(shardy, cache)
    mesh = 8 * scancache.LISTED_DEVICE_BYTES + scancache.PARSED_BYTES
    assert told and told[0] >= mesh  # the mesh, with every device it lists
    assert sum(told) >= mesh + 8 * scancache.IOTA_DEVICE_BYTES  # and the sharding on it


def test_a_cleared_cache_reads_on_as_a_fresh_one():
    """`clear` (the run's memos starting over) forgets every line and parse, and a mesh
    state's number is never given again: a scan after it reads what a fresh cache reads."""
    cache = ScanCache()
    before = scan(PASS.format(n=0), cache)
    token = cache.token((("m", 1),))  # (any key)
    cache.clear()
    assert learned(cache) == 0 and len(cache._parses) == 0 and not cache._protos
    assert cache.token((("m", 1),)) > token
    after = scan(PASS.format(n=0), cache)
    assert after.modules == before.modules == scan(PASS.format(n=0)).modules
    assert learned(cache) > 0


def test_structure_lines_are_read_once_and_long_ones_never_kept():
    """Module headers and mesh declarations are read once per distinct line of at most
    MAX_LINE characters; a longer one is read each time and not kept."""
    from meshdiag.ir.mlir import module_header

    cache = ScanCache()
    calls = []

    def read(line):
        calls.append(line)
        return module_header(line)

    short = "module @m attributes {mhlo.num_partitions = 8 : i32} {"
    assert cache.structure(read, short) == ("m", 8) == cache.structure(read, short)
    assert calls == [short]
    long = 'module @m attributes {x = "' + "a" * scancache.MAX_LINE + '"} {'
    assert cache.structure(read, long) == module_header(long)
    assert cache.structure(read, long) == module_header(long)
    assert calls == [short, long, long]


# --- which new lines a streamed file learns (linememo.Sampling) ---------------------------


def _new_lines(module: int, n: int) -> str:
    """An HLO module of `n` annotated lines no other module repeats."""
    body = "".join(
        f"  %v{i} = f32[{module + 1},{i + 1}]{{1,0}} parameter({i}), "
        "sharding={devices=[2,4]<=[8]}\n"
        for i in range(n)
    )
    return f"HloModule m{module}, num_partitions=8\nENTRY %main () -> f32[] {{\n{body}}}\n"


def _fields(report):
    return [[value_fields(v) for v in m.values] for m in report.modules]


def test_a_file_of_new_lines_learns_one_in_probe_after_a_window(monkeypatch):
    monkeypatch.setattr(linememo, "WINDOW", 64)
    text = "".join(_new_lines(k, 100) for k in range(10))  # 1000 lines, none repeated
    cache = ScanCache()
    streamed = scan(text, cache)
    # the first window is learned whole, then one new line in PROBE
    assert 64 <= learned(cache) <= 64 + 1000 // linememo.PROBE + 10
    assert _fields(streamed) == _fields(scan_bytes("d.txt", text.encode()))  # all learned


@pytest.mark.parametrize("dialect", ["hlo", "mlir"])
def test_a_probe_leaves_its_values_to_the_module(monkeypatch, dialect):
    """While a streamed file is not learning, the one line in PROBE it learns stays values
    of the module's own (a file of new lines never replays it); the entry learned holds
    copies at line 0. The lines of the first window, learned while learning is on, are the
    module's shared entries. Both ways give what the file read whole gives."""
    monkeypatch.setattr(linememo, "WINDOW", 64)
    monkeypatch.setattr(linememo, "PROBE", 8)
    if dialect == "hlo":
        text = "".join(_new_lines(k, 100) for k in range(10))
    else:
        text = "".join(_TRICKY.format(k=k + 1) for k in range(200))
    cache = ScanCache()
    streamed = scan(text, cache)
    kinds = [it.__class__ for m in streamed.modules for it in m.items]
    first_shared = kinds.index(LineValues)
    assert LineValues not in kinds[first_shared + 64 :]  # after the first window: own only
    entries = [e for d, _ in cache._known.values() for e in d.values() if e is not None]
    assert len(entries) > 64 + len(kinds) // (2 * linememo.PROBE)  # the window, the probes
    assert {p.line for e in entries for p in e.protos} == {0}
    assert _fields(streamed) == _fields(scan_bytes("d.txt", text.encode()))


def test_a_probe_copy_is_its_value_at_line_0():
    """`model.at_line`, which a probe's learned copy is made with: every field but the
    line is the value's."""
    import dataclasses
    from pathlib import Path

    from meshdiag.ir.model import at_line

    root = Path(__file__).resolve().parent.parent / "fixtures"
    values = [
        v
        for p in sorted(root.glob("**/*.mlir"))[:20]
        for m in scan_bytes(str(p), p.read_bytes()).modules
        for v in m.values
    ]
    assert len(values) > 100
    for v in values:
        c = at_line(v, 0)
        assert c is not v and c == dataclasses.replace(v, line=0)


def _sampled(sampling: linememo.Sampling, lines: int, repeat: float) -> None:
    """`lines` candidate lines through `sampling` as the scanner asks: while off, the walker
    reads the unlearned ones and the probes are asked; a share `repeat` of the lines are
    repeats, of which the ones learned before (one in PROBE while off) replay."""
    import random

    rng = random.Random(1)
    for _ in range(lines):
        if rng.random() < repeat and (sampling.on or rng.random() < 1 / linememo.PROBE):
            sampling.replayed(1)
        elif sampling.unlearned():
            sampling.skipped(1)
        else:
            sampling.learns()


@pytest.mark.parametrize("repeat, on", [(0.0, False), (0.02, False), (0.35, False), (0.7, True)])
def test_learning_comes_back_when_half_the_lines_repeat(repeat, on):
    """With the real window and probe rate: a stream of new lines stops learning after its
    first window; it learns again once about half of its lines are repeats (few probes, but
    the decision is the same as with many)."""
    sampling = linememo.Sampling()
    _sampled(sampling, linememo.WINDOW + 10, 0.0)
    assert not sampling.on
    _sampled(sampling, 3 * linememo.WINDOW * linememo.PROBE // 8, repeat)
    assert sampling.on is on


def test_a_file_that_repeats_its_modules_learns_again(monkeypatch):
    monkeypatch.setattr(linememo, "WINDOW", 64)
    one = _new_lines(0, 300)  # more new lines than a window: learning goes off in it
    streamed = scan(one * 8)
    modules = streamed.modules
    first, last = modules[-2].items, modules[-1].items
    shared = sum(a is b for a, b in zip(first, last, strict=True))
    assert shared >= 0.9 * len(last)  # the last copies replay the lines the copies before learned
    assert _fields(streamed) == _fields(scan_bytes("d.txt", (one * 8).encode()))


def test_the_parts_of_a_file_read_by_one_worker_go_on_sampling(monkeypatch, tmp_path):
    """A part of a big file (`ir.parts`) is probed from its start: its lines are mostly
    new. A worker's next part of the same file goes on with the sampling its last part left
    (a file repeating itself keeps the learning it turned on); another file starts afresh.
    What each part yields is the same whatever was learned."""
    from meshdiag.ir.scan import scan_part

    monkeypatch.setattr(linememo, "WINDOW", 64)
    monkeypatch.setattr(linememo, "PROBE", 4)
    one, two = _new_lines(0, 300), _new_lines(1, 300)
    whole = (one + two).encode()
    path = tmp_path / "big.txt"
    path.write_bytes(whole)
    cut, after = len(one.encode()), one.count("\n") + 1
    cache = ScanCache()
    first = scan_part(str(path), 0, cut, 1, cache=cache)
    sampling = cache.sampling(str(path), linememo.Sampling)
    assert learned(cache) <= 300 // linememo.PROBE + 2  # probes only
    probes = sampling.probe
    second = scan_part(str(path), cut, len(whole), after, cache=cache)
    assert cache.sampling(str(path), linememo.Sampling) is sampling
    assert sampling.probe > probes  # went on counting
    fresh = cache.sampling(str(tmp_path / "other.txt"), linememo.Sampling)
    assert fresh is not sampling and fresh.on and fresh.new == 0
    again = scan_part(str(path), cut, len(whole), after, cache=ScanCache())
    assert _fields(second) == _fields(again)
    assert _fields(first) + _fields(second) == _fields(scan_bytes("d.txt", whole))
    # a part of a file repeating one module: learning turns on in the first part and stays
    # on in the next
    path.write_text(one * 8)
    cache = ScanCache()
    scan_part(str(path), 0, 4 * cut, 1, cache=cache)
    assert cache.sampling(str(path), linememo.Sampling).on
    seen = learned(cache)
    scan_part(str(path), 4 * cut, 8 * cut, 4 * (after - 1) + 1, cache=cache)
    assert learned(cache) == seen  # every line replayed, none new


def test_a_big_regular_file_is_probed_from_its_start(monkeypatch, tmp_path):
    """`scan_path` streams a regular file too big to read whole with learning off from its
    first line (one new line in PROBE learned); a stream of unknown kind (stdin, gzip, a
    pipe) learns a first window whole, in case it repeats itself."""
    from meshdiag.ir import scan as ir_scan

    monkeypatch.setattr(linememo, "WINDOW", 64)
    text = "".join(_new_lines(k, 100) for k in range(10))  # 1000 lines, none repeated
    path = tmp_path / "big.txt"
    path.write_text(text)
    monkeypatch.setattr(ir_scan, "BLOCK", 1024)  # too big to read whole
    cache = ScanCache()
    report = ir_scan.scan_path(str(path), cache=cache)
    assert learned(cache) <= 1000 // linememo.PROBE + 2
    assert _fields(report) == _fields(scan_bytes("d.txt", text.encode()))
    cache = ScanCache()
    scan(text, cache)  # a stream of unknown kind
    assert learned(cache) >= linememo.WINDOW - 1


def test_a_small_file_learns_every_line(monkeypatch):
    monkeypatch.setattr(linememo, "WINDOW", 64)
    cache = ScanCache()
    scan_bytes("d.txt", _new_lines(0, 500).encode(), cache=cache)
    assert learned(cache) == 500


# --- a streamed file's plain constraint lines ----------------------------------------------

_TRICKY = """module @m{k} attributes {{mhlo.num_partitions = 8 : i32}} {{
  sdy.mesh @mesh = <["x"=2, "y"=4]>
  func.func @main(%arg0: tensor<8x{k}xf32>) -> tensor<8x{k}xf32> {{
    %0 = sdy.sharding_constraint %arg0 <@mesh, [{{"x"}}, {{}}]> : tensor<8x{k}xf32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{{"sdy.mesh @q = "}}, {{}}]> : tensor<8x{k}xf32>
    %2 = sdy.sharding_constraint %1 <@mesh, [{{"func.func @f("}}, {{}}]> : tensor<8x{k}xf32>
    %3 = sdy.sharding_constraint %2 <@mesh, [{{"a: error: b"}}, {{}}]> : tensor<8x{k}xf32>
    %4 = sdy.sharding_constraint %3 <@other, [{{"x"}}, {{}}]> : tensor<8x{k}xf32>
    %5 = sdy.sharding_constraint %4 <@mesh, [{{"x"}}, {{"x"}}]> : tensor<8x{k}xf32>
    %6 = sdy.reshard %5 <@mesh, [{{}}, {{"y"}}]> : tensor<8x{k}xf32>
    %7 = sdy.sharding_constraint %6 <@mesh, [{{}}, {{"y"}}]> : tensor<8x{k}xf32> {{x = 1}}
    return %7 : tensor<8x{k}xf32>
  }}
}}
"""


def _problems(report):
    return [(f.code, f.line, f.column, f.message) for f in report.findings]


def test_streamed_plain_constraints_give_what_a_whole_file_gives(monkeypatch):
    """A streamed file that stopped learning reads most of its plain constraint lines in
    the walker (copies of their sharding's prototype) and the rest through the field
    reader: the same values and problems as the file read whole, which learns every line. Real Shardy dumps (manual
    regions, reshards, named computations), a constraint before any module, unknown
    meshes, an axis used twice, and quoted axis names that look like a mesh op, a function
    or a diagnostic."""
    from pathlib import Path

    from meshdiag.ir import fields

    monkeypatch.setattr(linememo, "WINDOW", 8)
    monkeypatch.setattr(linememo, "PROBE", 5)
    taken: list[int] = []
    add = fields.add_constraint

    def counted(b, line, lineno, f):
        taken.append(lineno)
        add(b, line, lineno, f)

    monkeypatch.setattr(fields, "add_constraint", counted)
    fixtures = sorted(Path(__file__).resolve().parent.parent.glob("fixtures/**/*.mlir"))
    texts = [p.read_text() for p in fixtures]
    texts.append(
        '%9 = sdy.sharding_constraint %8 <@mesh, [{"x"}]> : tensor<4xf32>\n'
        + "".join(_TRICKY.format(k=k) for k in range(1, 40))
    )
    for text in texts:
        taken.clear()
        streamed = scan(text)
        whole = scan_bytes("d.txt", text.encode())
        assert _fields(streamed) == _fields(whole)
        assert _problems(streamed) == _problems(whole)
    # the field reader was taken, but not for a line naming a mesh op or a function
    lines = texts[-1].splitlines()
    straight = {lines[n - 1].split(" <", 1)[1][:18] for n in taken}
    assert '@mesh, [{"x"}, {}]' in straight
    assert not any("sdy.mesh" in k or "func.func" in k for k in straight)


def test_a_tiled_form_parsed_again_is_one_object_only_when_every_field_is_the_same():
    """A sharding parsed again (another mesh state, a per-value list, another spelling) has
    the run's one object for its tiled form, so memos keyed by it find it by identity;
    forms equal but for what equality leaves out (metadata, the tile assignment's
    spelling, the named form's mesh name) stay apart."""
    from dataclasses import replace

    from meshdiag.ir.annot import Parsed, parse_named_mesh

    cache = ScanCache()
    mesh = parse_named_mesh('<["x"=2, "y"=4]>', "mesh")[0]
    other = parse_named_mesh('<["z"=8]>', "other")[0]
    one = (("mesh", mesh),)
    two = (("mesh", mesh), ("other", other))  # a module declaring one more mesh
    text = '#sdy.sharding<@mesh, [{"x"}, {}]>'
    a = cache.named(text, one, (), cache.token(one))
    b = cache.named(text, two, (), cache.token(two))
    assert a is not b and a.hlo is b.hlo
    items, err, _ = cache.per_value('#sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>', one)
    assert err is None and items[0].hlo is a.hlo

    plain = cache.hlo("{devices=[2,4]<=[8]}")[0]
    spaced = cache.hlo("{devices=[2,4]<=[8] }")[0]  # the same in every field
    assert spaced.hlo is plain.hlo and spaced.sharding is plain.hlo
    for apart in ("{devices=[2,4]0,1,2,3,4,5,6,7}", '{devices=[2,4]<=[8] metadata={op_name="a"}}'):
        p = cache.hlo(apart)[0]
        assert p.hlo == plain.hlo and p.hlo is not plain.hlo

    ns = a.sharding  # a named form on `mesh` (what a V3 GSPMD text's tiled form keeps)
    assert ns is not None and ns.mesh is not None
    h1 = replace(plain.hlo, named=ns)
    h2 = replace(plain.hlo, named=replace(ns, mesh=replace(ns.mesh, name="elsewhere")))
    assert h1 == h2
    assert cache._same_tiled(Parsed(ns, h1)).hlo is h1
    assert cache._same_tiled(Parsed(ns, h2)).hlo is h2  # its mesh's name differs: apart
    assert cache._same_tiled(Parsed(ns, replace(h1))).hlo is h1  # the same in every field
