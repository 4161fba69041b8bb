"""Inputs that once crashed meshdiag (found by the atheris harnesses in fuzz/ and the property
tests), replayed through the harnesses' own checks and pinned to the behaviour of the fix.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from meshdiag.errors import LimitError, MeshdiagError, ParseError

ROOT = Path(__file__).resolve().parents[1]


def _load_targets():
    spec = importlib.util.spec_from_file_location("fuzz_targets", ROOT / "fuzz" / "targets.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # our own harness module, not input
    return mod


targets = _load_targets()

HUGE_REPLICATED = (
    b"module @m {\n"
    b"  func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {\n"
    b'    %0 = stablehlo.custom_call @Sharding(%arg0) {mhlo.sharding = "{replicated}"} : '
    b"(tensor<8xf32>) -> tensor<3299999999999999999999x32xf32>\n"
    b"    return %arg0 : tensor<8xf32>\n  }\n}\n"
)

HUGE_PARTITIONS = (
    b"HloModule m, num_partitions=1000000000000000000000\n\n"
    b"ENTRY %e (p: f32[8,8]) -> f32[16,8] {\n"
    b"  %p = f32[8,8]{1,0} parameter(0)\n"
    b"  ROOT %ag = f32[16,8]{1,0} all-gather(f32[8,8]{1,0} %p), dimensions={0}\n}\n"
)

#: (harness, input bytes as the fuzzer gave them)
CRASHES = [
    # ParseError messages carried the input's newlines: not one line
    ("gspmd", b"\xff\xfe\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n"),
    ("shardy", b'<["a\n"=2]'),
    # a single metadata entry starting with '{' printed as `metadata={{a}e}`: reads as a list
    ("gspmd", b"{replicated metadata={{{a}e}}}"),
    # str.isdigit() accepts '\xc2\xb9' (superscript one), int() does not
    ("mesh", "\u00b9".encode()),
    ("mesh", "P(\u00b2)".encode()),
    ("gspmd", "{maximal device=\u00b3}".encode()),
    # mesh sizes: 10,000 digits hit int()'s digit limit; '\x1c' matched \s but was not stripped
    ("mesh", b"x=" + b"9" * 10_000),
    ("mesh", b"9" * 10_000 + b"x2"),
    ("mesh", b"4\x1cx2"),
    # a list as a dict key in a torch_xla-style mesh dict: TypeError, unhashable
    ("mesh", b"{'mesh': ('data', '),[\"dta\", None]: array([]){'m"),
    ("mesh", b"{[1]: 2}"),
    # the duplicate-axis message quoted the raw text, newlines and all
    ("mesh", b"b=2\n,b=2,l=5"),
    # HLO shapes with non-ASCII digits crashed the whole scan
    (
        "scan",
        "HloModule m\nENTRY %e {\n  %p = f32[8,\u00b2] parameter(0), sharding={replicated}\n}\n".encode(),
    ),
    # a replicated value with a dim past int64: its layout's rows overflowed numpy (found by a
    # mutation run over the fixtures once the harness drew summaries too)
    ("scan", HUGE_REPLICATED),
    # a module header claiming 10**21 partitions: an all-gather without replica groups made
    # the list of all of them (an overflow here; 10**9 would have been gigabytes)
    ("comms", HUGE_PARTITIONS),
    # `unreduced=max{}`: a reduction of no axes, kept, but never printed: the round trip
    # read back a sharding without it
    ("shardy", b'#sdy.sharding<mesh<["a"=2]>, [{"a", ?}], unreduced=max{}>'),
]


@pytest.mark.parametrize(
    ("harness", "data"), CRASHES, ids=[f"{h}-{i}" for i, (h, _) in enumerate(CRASHES)]
)
def test_crash_inputs_now_pass_their_harness(harness: str, data: bytes) -> None:
    if harness == "scan":
        targets.check_scan(data)
    else:
        getattr(targets, f"check_{harness}")(targets.decode(data))


def test_corpus_seeds_pass_their_harness() -> None:
    for d in sorted((ROOT / "fuzz" / "corpus").iterdir()):
        for f in sorted(d.iterdir()):
            data = f.read_bytes()
            if d.name == "scan":
                targets.check_scan(data)
            else:
                getattr(targets, f"check_{d.name}")(targets.decode(data))


def test_parse_errors_are_one_line_and_keep_their_column() -> None:
    from meshdiag.notation.gspmd import parse_gspmd

    with pytest.raises(ParseError) as info:
        parse_gspmd("{devices=[2,\n2]0,1,\t2,3 \x00bogus}")
    msg = str(info.value)
    assert "\n" not in msg and "\t" not in msg and "\x00" not in msg
    assert "\u240a" in msg  # the newline is shown as a control picture, column kept
    col = info.value.column
    assert col == len("{devices=[2,\n2]0,1,\t2,3 ") + 1  # at the NUL
    snippet = msg.split(" in '", 1)[1]
    assert snippet[col - 1] == "\u2400"  # one picture per character: columns still line up


def test_metadata_entry_starting_with_a_brace_round_trips() -> None:
    from meshdiag.notation.gspmd import parse_gspmd, print_gspmd

    s = parse_gspmd("{replicated metadata={{{a}e}}}")
    assert s.metadata == ("{a}e",)
    printed = print_gspmd(s, metadata=True)
    assert printed == "{replicated metadata={{{a}e}}}"
    assert parse_gspmd(printed).metadata == ("{a}e",)
    # the ordinary single entry still prints XLA's way
    plain = parse_gspmd('{replicated metadata={op_name="a"}}')
    assert print_gspmd(plain, metadata=True) == '{replicated metadata={op_name="a"}}'


@pytest.mark.parametrize("digit", ["\u00b2", "\u0663", "\u09e8", "\uff12"])
def test_only_ascii_digits_are_numbers(digit: str) -> None:
    from meshdiag.inputs.mesh_input import parse_mesh
    from meshdiag.notation.gspmd import parse_gspmd
    from meshdiag.notation.pspec import parse_pspec
    from meshdiag.notation.shardy import parse_mesh_attr
    from meshdiag.notation.ttnn import parse_shape

    for fn, text in [
        (parse_pspec, f"P({digit})"),
        (parse_gspmd, f"{{maximal device={digit}}}"),
        (parse_mesh_attr, f'<["x"={digit}]>'),
        (parse_mesh, f"x={digit}"),
        (parse_mesh, f"{digit}x2"),
        (parse_shape, f"1,{digit}"),
    ]:
        with pytest.raises(MeshdiagError):
            fn(text)


def test_unclosed_python_literal_names_what_is_missing() -> None:
    from meshdiag.notation.pspec import parse_pspec

    for text in ("(", "P(", "[None,"):
        with pytest.raises(ParseError, match="Python literal") as info:
            parse_pspec(text)
        assert "nesting" not in str(info.value)
        assert info.value.column == len(text) + 1


def test_huge_mesh_sizes_are_refused_before_conversion() -> None:
    from meshdiag.inputs.mesh_input import parse_mesh

    start = time.monotonic()
    for text in ("x=" + "9" * 100_000, "9" * 100_000 + "x2", "2x" + "9" * 25):
        with pytest.raises(LimitError, match="too large"):
            parse_mesh(text)
    assert time.monotonic() - start < 1


def test_a_layout_with_a_dim_past_int64_is_refused_whatever_its_sharding() -> None:
    """Tiled or not, a layout of a dim of 2**62 or more is a LimitError (an untiled one
    splits no dim, so only the shape's own check sees it); `inspect --layouts` then gives
    that value no devices, and the run goes on."""
    from meshdiag.layouts.engine import layout
    from meshdiag.notation.gspmd import parse_gspmd

    for text in ("{replicated}", "{maximal device=1}", "{devices=[2,1]<=[2]}"):
        with pytest.raises(LimitError, match="too large"):
            layout(parse_gspmd(text), (2**62, 4), num_devices=2)
    assert (
        len(list(layout(parse_gspmd("{replicated}"), (2**62 - 1, 4), num_devices=2).devices())) == 2
    )
    out = subprocess.run(
        [sys.executable, "-m", "meshdiag", "inspect", "-", "--format", "json", "--layouts"],
        input=HUGE_REPLICATED,
        capture_output=True,
        check=True,
    )
    (value,) = [v for v in json.loads(out.stdout)["files"][0]["modules"][0]["values"]]
    assert value["shape"] == [3299999999999999999999, 32] and value["devices"] is None


def test_a_module_claiming_more_devices_than_the_limit_has_collectives_of_unknown_groups():
    """`num_partitions` past MESHDIAG_MAX_DEVICES (by one here: a billion would be
    gigabytes if the list came back): the all-gather is still measured as a collective,
    its groups unknown, with no list of all its devices made."""
    from meshdiag.comms.report import groups_of, measure_file
    from meshdiag.comms.scan import scan_stream
    from meshdiag.limits import MAX_DEVICES
    from meshdiag.memo import RunMemos

    for n, want in ((4, ((0, 1, 2, 3),)), (MAX_DEVICES + 1, None)):
        text = HUGE_PARTITIONS.replace(b"1000000000000000000000", str(n).encode())
        start = time.monotonic()
        f = scan_stream("m.txt", io.BytesIO(text))
        ((c,),) = [m.collectives for m in f.modules]
        assert groups_of(c, f.modules[0]) == want
        ((row,),) = [mc.rows for mc in measure_file(f, None, RunMemos()).modules]
        assert row.collective.kind == "all-gather" and row.groups == want
        assert time.monotonic() - start < 1


def test_mesh_file_with_300k_axes_is_refused_at_once(tmp_path: Path) -> None:
    from meshdiag.inputs.mesh_input import parse_mesh

    f = tmp_path / "mesh.json"
    f.write_text(json.dumps({"axes": {f"a{i}": 1 for i in range(300_000)}}))
    start = time.monotonic()
    with pytest.raises(LimitError, match="300000 axes"):
        parse_mesh(str(f))
    assert time.monotonic() - start < 3  # the duplicate check used to be quadratic


def test_a_bad_hlo_shape_does_not_end_the_scan() -> None:
    from meshdiag.ir.scan import scan_file

    text = (
        "HloModule m\nENTRY %e {\n"
        "  %p = f32[8,\u00b2] parameter(0), sharding={replicated}\n"
        "  %q = f32[8,8] parameter(1), sharding={devices=[2,1]0,1}\n}\n"
    )
    report = scan_file("m.hlo.txt", io.BytesIO(text.encode()))
    values = {v.name: v for m in report.modules for v in m.values}
    assert values["%q"].shape == (8, 8)
    assert values["%p"].shape is None  # unknown, not a crash


def test_layout_shape_with_non_ascii_digit_is_a_clean_error() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "meshdiag", "layout", "{replicated}", "--shape", "2,\u00b2"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("meshdiag: error: --shape") and "internal" not in proc.stderr


def test_empty_file_is_reported_as_skipped() -> None:
    from meshdiag.ir.scan import scan_file

    report = scan_file("empty.mlir", io.BytesIO(b""))
    assert [(f.code, f.severity) for f in report.findings] == [("MD001", "info")]
    assert "empty" in report.findings[0].message


def _op_module(result: str) -> bytes:
    return (
        b"module @m {\n  func.func @main(%a: tensor<8xf32>) -> tensor<8xf32> {\n"
        b"    " + result.encode() + b' = stablehlo.add %a, %a {mhlo.sharding = "{replicated}"}'
        b" : tensor<8xf32>\n    return %a : tensor<8xf32>\n  }\n}\n"
    )


def test_a_result_group_of_no_values_is_a_problem_not_a_crash() -> None:
    """`%x:0 = ...` (found by a mutation run over the fixtures: an IndexError, an internal
    error of `inspect`): reported where it is, its annotation read as `%x`'s."""
    from meshdiag.ir.scan import scan_file

    data = _op_module("%x:0")
    targets.check_scan(data)
    r = scan_file("m.mlir", io.BytesIO(data))
    assert [(f.line, f.column, "no values" in f.message) for f in r.findings] == [(3, 5, True)]
    assert [v.name for m in r.modules for v in m.values] == ["%x"]


def test_a_result_group_of_a_trillion_values_is_named_at_once() -> None:
    """`%x:999999999999 = ...` made a list of a trillion names (the run never ended): the
    names an op line can use are at most one a character of it."""
    from meshdiag.ir.scan import scan_file

    for count in ("99999999999", "999999999999", "9" * 40):
        start = time.perf_counter()
        data = _op_module(f"%x:{count}")
        targets.check_scan(data)
        r = scan_file("m.mlir", io.BytesIO(data))
        assert [v.name for m in r.modules for v in m.values] == ["%x#0"]
        assert time.perf_counter() - start < 5


def test_more_out_shardings_than_results_are_named_past_them() -> None:
    """A manual computation of 2 results with 3 out shardings (an IndexError): the third
    is named as a plain op's extra values are (`%0#2`)."""
    from meshdiag.ir.scan import scan_file

    text = (ROOT / "fixtures" / "jax" / "shard_map_shardy.mlir").read_text()
    old = 'out_shardings=[<@mesh, [{"batch"}, {"model"}]>]'
    assert "%0 = sdy.manual_computation" in text and old in text
    text = text.replace("%0 = sdy.manual_computation", "%0:2 = sdy.manual_computation", 1)
    text = text.replace(old, old[:-1] + ', <@mesh, [{}, {}]>, <@mesh, [{"model"}, {}]>]', 1)
    data = text.encode()
    targets.check_scan(data)
    r = scan_file("m.mlir", io.BytesIO(data))
    outs = [v.name for m in r.modules for v in m.values if v.kind == "manual_out"]
    assert outs[:3] == ["%0#0", "%0#1", "%0#2"]
