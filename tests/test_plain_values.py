"""Values of plain lines made from their sharding's prototype (`ScanCache.protos`): the
candidate walker's constraint lines (`lines.scan_plain`) and a signature's entries
(`fields.entry_values`), native (`fast/_values.c`) and their Python twins.

A scan that makes them gives the same values and problems as one that reads every line the
general way (no prototype is ever kept); the native readers give what their twins give."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scan_reference import value_fields

from meshdiag.ir import fields, linememo, lines, scan
from meshdiag.ir.fast import _fastscan
from meshdiag.ir.model import LineValues, Value
from meshdiag.ir.scan import scan_bytes, scan_file
from meshdiag.ir.scancache import ScanCache
from meshdiag.ir.text import split_group

ROOT = Path(__file__).resolve().parent.parent

#: shardings a plain line may carry: known meshes and axes, unknown ones and an axis used
#: twice (the checks' business), ones that do not parse (a problem at every line), quoted
#: axis names that look like a mesh op, a function or a diagnostic
SHARDINGS = [
    '[{"x"}, {}]',
    '[{}, {"y"}]',
    '[{"x"}, {"y"}]',
    '[{"y", "x"}, {}]',
    '[{"x"}, {"x"}]',
    '[{"z"}, {}]',
    '[{"x" "y"}, {}]',
    "[{x}, {}]",
    '[{"sdy.mesh @q = "}, {}]',
    '[{"func.func @f("}, {}]',
    '[{"a: error: b"}, {}]',
]
MESHES = ['"x"=2, "y"=4', '"x"=4, "y"=2', '"x"=8']
#: GSPMD shardings an op line may carry: one that does not parse, a tuple (two values)
GSPMD = [
    "{replicated}",
    "{devices=[2,1,4]<=[8] last_tile_dim_replicate}",
    "{devices=[4,2]<=[2,4]T(1,0)}",
    "{devices=[3,1]<=[8]}",
    "{{replicated}, {replicated}}",
]
#: what MLIR prints after an op or argument with debug info: plain, then other forms
LOCS = [
    "",
    "",
    " loc(#loc3)",
    ' loc("x")',
    ' loc("a.py":3:1)',
    " loc(unknown)",
    ' loc("#sdy.sharding<@mesh, [{}]>")',
    # a line `mlir.handle` reads as a mesh op or a function before anything else
    ' loc("sdy.mesh @q = ")',
    ' loc("func.func @f(")',
]


def _module(k: int, rng: random.Random) -> str:
    """A module of plain signature entries and constraint lines (and a few that are not
    plain), its shapes its own, its mesh one of `MESHES`."""
    mesh = MESHES[k % len(MESHES)]
    args = []
    for i in range(rng.randrange(1, 12)):
        ref = rng.choice(["mesh", "mesh", "mesh", "other"])
        tail = rng.choice(["", "", "", ', jax.result_info = "r"'])
        loc = rng.choice(LOCS)
        if rng.random() < 0.25:  # as XLA's export prints it
            attr = f'mhlo.sharding = "{rng.choice(GSPMD)}"'
        else:
            attr = f"sdy.sharding = #sdy.sharding<@{ref}, {rng.choice(SHARDINGS)}>"
        args.append(f"%arg{i}: tensor<{8 + i}x{k + 1}xf32> {{{attr}{tail}}}{loc}")
    body = []
    for i in range(rng.randrange(1, 30)):
        op = rng.choice(["sharding_constraint"] * 4 + ["reshard", "op", "op", "gspmd"])
        ref = rng.choice(["mesh"] * 6 + ["other"])
        tail = rng.choice([""] * 6 + [" {x = 1}", *LOCS])
        ty = f"tensor<{k + 2}x{i + 3}xbf16>"
        if op == "op":  # an op's sharding as Shardy's propagation prints it
            rule = rng.choice(["", ", sdy.sharding_rule = #sdy.op_sharding_rule<([i])->([i])>"])
            body.append(
                f"    %{i + 1} = stablehlo.tanh %{i} {{sdy.sharding = #sdy.sharding_per_value"
                f"<[<@{ref}, {rng.choice(SHARDINGS)}>]>{rule}}} : ({ty}) -> {ty}"
                f"{'' if tail.startswith(' {') else tail}\n"
            )
        elif op == "gspmd":  # and as XLA's export prints it
            body.append(
                f"    %{i + 1} = stablehlo.tanh %{i} {{mhlo.sharding = "
                f'"{rng.choice(GSPMD)}"}} : {ty}{tail if tail.startswith(" loc") else ""}\n'
            )
        else:
            body.append(
                f"    %{i + 1} = sdy.{op} %{i} <@{ref}, {rng.choice(SHARDINGS)}> : {ty}{tail}\n"
            )
    return (
        f"module @m{k} attributes {{mhlo.num_partitions = 8 : i32}} {{\n"
        f"  sdy.mesh @mesh = <[{mesh}]>\n"
        f"  func.func @main({', '.join(args)}) -> tensor<8xf32> {{\n"
        + "".join(body)
        + "    return %0 : tensor<8xf32>\n  }\n}\n"
    )


def _texts() -> list[str]:
    fixtures = sorted(ROOT.glob("fixtures/**/*.mlir"))
    rng = random.Random(15)
    made = "".join(_module(k, rng) for k in range(120))
    return [p.read_text() for p in fixtures] + [made]


def _report(r):
    values = [[value_fields(v) for v in m.values] for m in r.modules]
    return values, [(f.code, f.line, f.column, f.message) for f in r.findings]


def _general(text: str):
    """The file read whole with no prototype ever kept: every line the general way."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ScanCache, "keep_proto", lambda *a: None)
        return _report(scan_bytes("d.mlir", text.encode()))


@pytest.mark.parametrize("twin", [False, True], ids=["native", "twins"])
def test_values_made_from_prototypes_are_the_general_readers(monkeypatch, twin):
    """Streamed with learning off after a short window (the walker then reads the plain
    constraint lines it would not learn) and read whole (only the signatures' entries are
    made from prototypes): both give the general reader's values and problems, over the
    Shardy fixtures and generated modules whose meshes change under the same shardings."""
    if twin:
        monkeypatch.setattr(scan, "scan_plain", lines.scan_plain_py)
        monkeypatch.setattr(fields, "_native_entry_values", None)
        monkeypatch.setattr(linememo, "plain_line", lines.plain_line_py)
    monkeypatch.setattr(linememo, "WINDOW", 8)
    monkeypatch.setattr(linememo, "PROBE", 5)
    walked = entries = stopped = 0
    real_walk, real_entries, real_line = scan.scan_plain, fields.entry_values, linememo.plain_line

    def plain_line(*a):  # a plain line the walker stopped at: read without its handler
        nonlocal stopped
        got = real_line(*a)
        stopped += got
        return got

    monkeypatch.setattr(linememo, "plain_line", plain_line)

    def walk(*a):
        nonlocal walked
        got = real_walk(*a)
        walked += got[4]
        return got

    def entry_values(b, line, spans, k, lineno):
        nonlocal entries
        got = real_entries(b, line, spans, k, lineno)
        entries += got - k
        return got

    monkeypatch.setattr(scan, "scan_plain", walk)
    monkeypatch.setattr(fields, "entry_values", entry_values)
    for text in _texts():
        want = _general(text)
        assert _report(scan_file("d.mlir", io.BytesIO(text.encode()))) == want
        assert _report(scan_bytes("d.mlir", text.encode())) == want
    assert walked > 400 and entries > 50 and stopped > 400  # every way was taken


def test_learned_lines_hold_prototypes_at_line_0():
    """A plain line the walker stopped at and the scanner learned without its handler is a
    `LineValues` like the ones the handlers' lines make: values without a line number."""
    text = _texts()[-1]
    report = scan_bytes("d.mlir", text.encode())
    entries = [e for m in report.modules for e in m.items if isinstance(e, LineValues)]
    assert len(entries) > 1000
    assert {p.line for e in entries for p in e.protos} == {0}


def test_a_prototype_is_kept_only_for_a_clean_value_outside_manual_regions():
    text = (
        'module @m {\n  sdy.mesh @mesh = <["x"=2]>\n'
        '  func.func @f(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}, '
        "%arg1: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{q}]>}) {\n"
        '    %0 = sdy.sharding_constraint %arg0 <@mesh, [{"x"}]> : tensor<8xf32>\n'
        '    %1 = sdy.manual_computation(%0) in_shardings=[<@mesh, [{"x"}]>] '
        'out_shardings=[<@mesh, [{"x"}]>] manual_axes={"x"} (%a: tensor<4xf32>) {\n'
        "      %2 = sdy.sharding_constraint %a <@mesh, [{}]> : tensor<4xf32>\n"
        "      sdy.return %2 : tensor<4xf32>\n"
        "    } : (tensor<8xf32>) -> tensor<8xf32>\n  }\n}\n"
    )
    cache = ScanCache()
    scan_bytes("d.mlir", text.encode(), cache=cache)
    kept = {t for d in cache._protos.values() for t in d}
    # not the sharding that does not parse (a problem at each line), not the constraint in
    # the manual body
    assert kept == {'#sdy.sharding<@mesh, [{"x"}]>', '<@mesh, [{"x"}]>'}
    proto = next(d for d in cache._protos.values())['<@mesh, [{"x"}]>']
    assert proto.line == 0 and proto.local_shape is None


def test_prototypes_stay_within_their_bound(monkeypatch):
    from meshdiag.ir import scancache

    monkeypatch.setattr(scancache, "MAX_PARSES", 16)
    cache = ScanCache()
    v = Value("%0", 1, 1, "t", "sdy", "arg", None, (8,), None, "f32", "mesh", None, None)
    for i in range(100):
        cache.keep_proto(i % 3, f"t{i}", v)
        assert cache._n_protos <= 16
        assert sum(len(d) for d in cache._protos.values()) == cache._n_protos


# --- the native readers against their twins -----------------------------------------------

LINES = [
    "    %{i} = sdy.sharding_constraint %{j} <@mesh, {s}> : tensor<{d}xf32>",
    "    %{i} = sdy.reshard %{j} <@mesh, {s}> : tensor<{d}xbf16>",
    "  %{i} = sdy.sharding_constraint %{j} <@mesh, {s}> : tensor<{d}xf32> {{a}}",
    "    %{i} = sdy.sharding_constraint %{j} <@mesh, {s}> : tensor<{d}xf32>\r",
    "    %{i} = stablehlo.add %{j}, %{j} {{sdy.sharding = #sdy.sharding_per_value<[<@mesh, {s}>]>}}"
    " : tensor<{d}xf32>",
    "    %{i} = stablehlo.add %{j}, %{j} {{sdy.sharding = #sdy.sharding_per_value<[<@mesh, {s}>]>}}"
    " : (tensor<{d}xf32>, tensor<{d}xf32>) -> tensor<{d}xf32> loc(#loc)",
    '    %{i} = stablehlo.add %{j}, %{j} {{mhlo.sharding = "{g}"}} : tensor<{d}xf32>',
    '    %{i}:2 = stablehlo.add %{j}, %{j} {{mhlo.sharding = "{g}"}} : tensor<{d}xf32>',
    "    %{i} = sdy.sharding_constraint %{j} <@mesh, {s}> : tensor<{d}xf32> // café",
    "    %{i} = stablehlo.tanh %{j} : tensor<{d}xf32>",
    '  sdy.mesh @mesh = <["x"=2, "y"=4]>',
]


@st.composite
def blocks(draw):
    rng = random.Random(draw(st.integers(0, 2**32)))
    out = []
    for i in range(draw(st.integers(0, 60))):
        s = rng.choice(SHARDINGS)
        d = "x".join(str(rng.randrange(1, 40)) for _ in range(rng.randrange(0, 3)))
        g = rng.choice(GSPMD)
        out.append(rng.choice(LINES).format(i=i, j=max(i - 1, 0), s=s, d=d or "1", g=g))
    buf = ("\n".join(out) + "\n").encode()
    texts = [f"<@mesh, {s}>" for s in SHARDINGS]
    texts += [f"#sdy.sharding_per_value<[<@mesh, {s}>]>" for s in SHARDINGS] + GSPMD
    protos = {t: _proto(t) for t in texts if rng.random() < 0.6}
    known = {}
    for line in buf.split(b"\n")[: draw(st.integers(0, 5))]:
        known[line] = rng.choice([None, "known"])
    return buf, protos, known, draw(st.integers(0, 9)), draw(st.integers(1, 10**6))


def _proto(text: str) -> Value:
    return Value("%p", 0, 1, text, "sdy", "op", None, (1,), None, "f32", "mesh", ("s", text), None)


def test_a_plain_line_with_a_byte_past_ascii_anywhere_is_left_to_the_general_reader():
    """Native and twin: one byte past ASCII at any place of a plain constraint line (the
    native check reads 8 bytes a step, then the rest one by one) and the line is not
    plain; the same line in ASCII is."""
    text = '<@mesh, [{"x"}, {}]>'
    protos = {text: _proto(text)}
    # (a byte in the location's string is one only the ASCII check refuses)
    loc = 'loc("model/layers/attention/query_projection.py":12:34)'
    line = f"    %1 = sdy.sharding_constraint %0 {text} : tensor<8x8xf32> {loc}".encode()
    for k in range(-1, len(line)):
        raw = line if k < 0 else line[:k] + b"\xe9" + line[k + 1 :]
        took = _fastscan.plain_line(raw, 1, protos, [], [])
        assert took == lines.plain_line_py(raw, 1, protos, [], []) == (k < 0)


def _walk(fn, buf, protos, known, budget, lineno):
    lines_out: list = []
    items_out: list = []
    pos = 0
    results = []
    while True:
        got = fn(buf, pos, lineno, known, lines_out, items_out, protos, budget)
        results.append(got)
        start, _end, lineno, pos, read = got
        budget -= read
        if start < 0 or pos > len(buf):
            break
        lineno += 1
    items = [value_fields(v) if isinstance(v, Value) else v for v in items_out]
    return results, lines_out, items


@settings(
    max_examples=300, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(blocks())
def test_the_native_walker_reads_plain_lines_like_its_twin(case):
    buf, protos, known, budget, lineno = case
    got = _walk(_fastscan.scan_plain, buf, protos, dict(known), budget, lineno)
    want = _walk(lines.scan_plain_py, buf, protos, dict(known), budget, lineno)
    assert got == want
    # each line alone, as the scanner reads one the walker stopped at
    for k, raw in enumerate(buf.split(b"\n")):
        native_cols: tuple[list, list] = ([], [])
        twin_cols: tuple[list, list] = ([], [])
        took = _fastscan.plain_line(raw, lineno + k, protos, *native_cols)
        assert took == lines.plain_line_py(raw, lineno + k, protos, *twin_cols)
        assert native_cols[0] == twin_cols[0] == ([lineno + k] if took else [])
        assert [value_fields(v) for v in native_cols[1]] == [value_fields(v) for v in twin_cols[1]]
    # with no budget, it is scan_known
    assert _walk(_fastscan.scan_plain, buf, protos, dict(known), 0, lineno)[0] == [
        (*r, 0) for r in _walk_known(buf, dict(known), lineno)
    ]


def _walk_known(buf, known, lineno):
    lines_out: list = []
    items_out: list = []
    pos = 0
    results = []
    while True:
        got = _fastscan.scan_known(buf, pos, lineno, known, lines_out, items_out)
        results.append(got)
        start, _end, lineno, pos = got
        if start < 0 or pos > len(buf):
            break
        lineno += 1
    return results


ENTRIES = [
    "%arg{i}: tensor<{d}xf32> {{sdy.sharding = #sdy.sharding<@mesh, {s}>}}",
    '%arg{i}: tensor<{d}xf32> {{mhlo.sharding = "{g}"}}',
    " %arg{i}: tensor<{d}xbf16> {{sdy.sharding = #sdy.sharding<@mesh, {s}>}} ",
    '%arg{i}: tensor<{d}xf32> {{sdy.sharding = #sdy.sharding<@mesh, {s}>, jax.result_info = "r"}}',
    "%arg{i}: tensor<{d}xf32>",
    "%arg{i}: tensor<?x{d}xf32> {{sdy.sharding = #sdy.sharding<@mesh, {s}>}}",
    '%arg{i}: tensor<{d}xf32> {{sdy.sharding = #sdy.sharding<@mesh, {s}>}} loc("a,b)":3:1)',
    "%arg{i}: tensor<{d}xf32> {{sdy.sharding = #sdy.sharding<@mesh, {s}>}} loc(#loc{i})",
    '\t%arg{i}: tensor<{d}xf32> {{mhlo.sharding = "{g}"}}  ',
    "%arg{i}: tensor<{d}xf32> {{sdy.sharding = #sdy.sharding<@mesh, {s}>}} x",
    "%arg{i}: tensor<{d}xf32> {{sdy.sharding = #sdy.sharding<@mesh, {s}>}}]",
]


def _signature(rng: random.Random) -> str:
    """A signature line of up to 11 entries of the forms in `ENTRIES`, the plain ones read one
    after the other by the native `entry_group` until one is not."""
    parts = [
        rng.choice(ENTRIES).format(
            i=i,
            s=rng.choice(SHARDINGS),
            d="x".join(str(rng.randrange(1, 9)) for _ in "ab"),
            g=rng.choice(GSPMD),
        )
        for i in range(rng.randrange(0, 12))
    ]
    # (the group closed after a space or a comma too: a last span of a space, or empty)
    return "  func.func @main(" + ",".join(parts) + rng.choice([")", " )", ",)"]) + " -> f32 {"


def _some_protos(rng: random.Random) -> dict:
    """Prototypes of about 7 in 10 of the shardings an entry may carry."""
    texts = [f"#sdy.sharding<@mesh, {s}>" for s in SHARDINGS] + GSPMD
    return {t: _proto(t) for t in texts if rng.random() < 0.7}


def _native_and_twin(native_fn, twin_fn, *args) -> list:
    """What each of a native maker and its twin answers for `args` and the columns it
    appends to (the lines, the values' fields)."""
    outs = []
    for fn in (native_fn, twin_fn):
        lines_out: list = []
        items_out: list = []
        got = fn(*args, lines_out, items_out)
        outs.append((got, lines_out, [value_fields(v) for v in items_out]))
    return outs


@settings(max_examples=300, derandomize=True, deadline=None)
@given(seed=st.integers(0, 2**32), k=st.integers(-2, 12), lineno=st.integers(1, 10**6))
def test_native_entry_values_read_like_their_twin(seed, k, lineno):
    rng = random.Random(seed)
    line = _signature(rng)
    spans = split_group(line, line.index("("))[1]
    protos = _some_protos(rng)
    native, twin = _native_and_twin(
        _fastscan.entry_values, fields.entry_values_py, line, spans, k, lineno, protos
    )
    assert native == twin


@settings(max_examples=300, derandomize=True, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    lineno=st.integers(1, 10**6),
    cut=st.integers(0, 3),
    at=st.sampled_from(["paren", "other"]),
)
def test_native_entry_group_reads_like_its_twin(seed, lineno, cut, at):
    """`entry_group` (a signature split and its plain entries made in one native call)
    gives what `split_group` then `entry_values_py` give: the group's end, the first entry
    not made, the spans when one is left (None when none is), the same values; on lines cut
    short (the group never closes) and at a position that opens no group too."""
    rng = random.Random(seed)
    line = _signature(rng)
    if cut:  # the group does not close
        line = line[: line.index("(") + 1 + rng.randrange(0, len(line) - line.index("("))]
    pos = line.index("(") if at == "paren" else rng.randrange(0, len(line))
    protos = _some_protos(rng)
    native, twin = _native_and_twin(
        _fastscan.entry_group, fields.entry_group_py, line, pos, lineno, protos
    )
    assert native == twin


def test_native_entry_group_reads_thousands_of_signatures_like_its_twin():
    """Whole signatures (the native call reads their plain entries one after the other up to
    the first that is not plain, then splits the group) and each cut short once (the group
    never closes: nothing made), 3,000 seeds."""
    for seed in range(3000):
        rng = random.Random(seed)
        line = _signature(rng)
        protos = _some_protos(rng)
        pos = line.index("(")
        for text in (line, line[: pos + 1 + rng.randrange(0, len(line) - pos)]):
            native, twin = _native_and_twin(
                _fastscan.entry_group, fields.entry_group_py, text, pos, seed, protos
            )
            assert native == twin, text


def test_native_entry_group_leaves_other_text_to_the_twin():
    line = "  func.func @main(%ärg: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}) {"
    assert _fastscan.entry_group(line, line.index("("), 1, {}, [], []) is NotImplemented


def test_names_and_columns_kept_by_content_stay_their_own():
    """The native makers keep the names and ints they made in small tables by content
    (`fs_str_piece`, `fs_int_piece`): 3,000 names of one length and their columns (more
    than the tables' slots: some share one) read twice, each value's its own."""
    parts = [
        f'%a{i:04d}: tensor<{1000 + i}x{300 + i % 7}xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{{"x"}}, {{}}]>}}'
        for i in range(3000)
    ]
    line = "  func.func @main(" + ", ".join(parts) + ") -> f32 {"
    spans = split_group(line, line.index("("))[1]
    protos = {'#sdy.sharding<@mesh, [{"x"}, {}]>': _proto('#sdy.sharding<@mesh, [{"x"}, {}]>')}
    for _ in range(2):
        outs = []
        for fn in (_fastscan.entry_values, fields.entry_values_py):
            items_out: list = []
            assert fn(line, spans, 0, 7, protos, [], items_out) == 3000
            outs.append([value_fields(v) for v in items_out])
        assert outs[0] == outs[1]
        assert [v[0] for v in outs[0]] == [f"%a{i:04d}" for i in range(3000)]


def test_names_kept_by_content_differ_anywhere():
    """A kept name is its slot's only when every byte matches (`fs_str_piece` compares the
    first and last words, and the bytes between past 16): names of every length from 2 to
    40 that differ in one byte only, at its start, its middle or its end, each stay their
    own, read natively and by the twin."""
    names = []
    for n in range(2, 41):
        for at in sorted({0, n // 2, n - 1}):
            for c in "xyz":
                base = ["%"] + ["a"] * (n - 1)
                if at:
                    base[at] = c
                names.append("".join(base))
    names = list(dict.fromkeys(names))
    parts = [
        f'{name}: tensor<{8 + i}xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{{"x"}}]>}}'
        for i, name in enumerate(names)
    ]
    line = "  func.func @main(" + ", ".join(parts) + ") -> f32 {"
    spans = split_group(line, line.index("("))[1]
    protos = {'#sdy.sharding<@mesh, [{"x"}]>': _proto('#sdy.sharding<@mesh, [{"x"}]>')}
    for _ in range(2):  # the second time, every name is in the table already
        items_out: list = []
        assert _fastscan.entry_values(line, spans, 0, 7, protos, [], items_out) == len(names)
        assert [v.name for v in items_out] == names


def test_native_readers_refuse_bad_arguments():
    with pytest.raises(TypeError):
        _fastscan.entry_values("x", [0], 0, 1, {"x": _proto("x")}, [], [])
    with pytest.raises(TypeError):
        _fastscan.entry_values("x", [], 0, "1", {}, [], [])
    with pytest.raises(TypeError):
        _fastscan.scan_plain(b"x\n", 0, 1, {}, [], [], [], 3)
    with pytest.raises(TypeError):
        _fastscan.scan_plain(b"x\n", 0, 1, {}, [], [], {}, "3")
    with pytest.raises(TypeError):
        _fastscan.plain_line("x", 1, {}, [], [])
    with pytest.raises(TypeError):
        _fastscan.plain_line(b"x", 1, {}, [])
    with pytest.raises(TypeError):
        _fastscan.plain_line(b"x", "1", {}, [], [])


def test_native_readers_leak_no_references():
    import sys

    text = '<@mesh, [{"x"}, {}]>'
    proto = _proto(text)
    per_value = f"#sdy.sharding_per_value<[{text}]>"
    protos = {text: proto, per_value: proto, "{replicated}": proto}
    buf = (
        f"    %1 = sdy.sharding_constraint %0 {text} : tensor<8x8xf32>\n" * 30
        + f"    %2 = stablehlo.tanh %1 {{sdy.sharding = {per_value}}} : tensor<8x8xf32>\n" * 10
        + '    %3 = stablehlo.tanh %2 {mhlo.sharding = "{replicated}"} : tensor<8x8xf32>\n' * 10
    ).encode()
    entry = f"%arg0: tensor<8x8xf32> {{sdy.sharding = #sdy.sharding<@mesh, {SHARDINGS[0]}>}}"
    line = "  func.func @f(" + ", ".join([entry] * 20) + ") {"
    from meshdiag.ir.text import split_top

    spans = split_top(line, line.index("(") + 1, line.index(")"))
    entry_protos = {"#sdy.sharding<@mesh, " + SHARDINGS[0] + ">": proto}
    import tracemalloc

    def refs():
        return [sys.getrefcount(x) for x in (proto, proto.sharding, buf, line)]

    def run(times: int) -> None:
        for _ in range(times):
            lines_out: list = []
            items_out: list = []
            got = _fastscan.scan_plain(buf, 0, 1, {}, lines_out, items_out, protos, 10**6)
            assert got[4] == 50 and len(items_out) == 50
            got = _fastscan.entry_values(line, spans, 0, 7, entry_protos, lines_out, items_out)
            assert got == 20 and len(items_out) == 70 and items_out[-1].name == "%arg0"
            for raw in buf.splitlines()[::5]:
                assert _fastscan.plain_line(raw, 9, protos, lines_out, items_out)
            assert len(items_out) == 80

    run(5)  # the first calls make what stays (interned strings, caches)
    before = refs()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        run(200)  # 16,000 values made and dropped
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert refs() == before
    assert grown < 20_000  # a leaked name, shape or dict per value would be megabytes


@settings(
    max_examples=400, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    parts=st.lists(
        st.one_of(
            st.sampled_from(
                [line.format(i=1, j=0, s=SHARDINGS[0], d="4x4", g=GSPMD[1]) for line in LINES]
            ),
            st.sampled_from(["\n", " loc(#l)", ' loc("a":1:2)', "<@mesh, [{}]>", "é", "\0"]),
            st.binary(max_size=12).map(lambda b: b.decode("latin-1")),
        ),
        max_size=30,
    ),
    budget=st.integers(0, 50),
)
def test_the_native_walker_takes_any_bytes_like_its_twin(parts, budget):
    """Arbitrary bytes among the lines (non-ASCII, NUL, unfinished forms): the native walker
    neither crashes nor reads a line its twin would not."""
    buf = "".join(parts).encode("utf-8", "surrogateescape") + b"\n"
    texts = (
        [f"<@mesh, {s}>" for s in SHARDINGS]
        + [f"#sdy.sharding_per_value<[<@mesh, {s}>]>" for s in SHARDINGS]
        + GSPMD
    )
    protos = {t: _proto(t) for t in texts}
    got = _walk(_fastscan.scan_plain, buf, protos, {}, budget, 1)
    assert got == _walk(lines.scan_plain_py, buf, protos, {}, budget, 1)


_ASCII = st.text(st.characters(min_codepoint=0, max_codepoint=127), max_size=12)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(
    parts=st.lists(
        st.one_of(
            st.sampled_from(
                [e.format(i=1, s=SHARDINGS[0], d="4x4", g=GSPMD[1]) for e in ENTRIES]
                + [e.format(i=2, s=SHARDINGS[1], d="8", g=GSPMD[0]) + ' loc("x")' for e in ENTRIES]
            ),
            _ASCII,
        ),
        max_size=6,
    ),
    spans=st.one_of(
        st.none(), st.lists(st.tuples(st.integers(-5, 400), st.integers(-5, 400)), max_size=6)
    ),
    k=st.integers(-3, 8),
)
def test_native_entry_values_take_any_spans_like_their_twin(parts, spans, k):
    """Plain entries among arbitrary ASCII text, with the line's own spans or any spans
    (out of range, reversed): the same values and stopping index as the twin."""
    line = "  func.func @f(" + ",".join(parts) + ") {"
    if spans is None:  # the line's own entries, as `mlir._func` splits them
        from meshdiag.ir.text import split_top

        start = line.index("(") + 1
        spans = split_top(line, start, len(line) - 3)
    protos = {f"#sdy.sharding<@mesh, {s}>": _proto(f"#sdy.sharding<@mesh, {s}>") for s in SHARDINGS}
    outs = []
    for fn in (_fastscan.entry_values, fields.entry_values_py):
        lines_out: list = []
        items_out: list = []
        got = fn(line, list(spans), k, 3, protos, lines_out, items_out)
        outs.append((got, lines_out, [value_fields(v) for v in items_out]))
    assert outs[0] == outs[1]
