"""`inspect.module_values_json` writes a module's values' JSON a value at a time from
pieces encoded once per module: it must be the text `json.dumps` gives of each value's
`value_json`, for every fixture module (HLO, GSPMD and Shardy MLIR, partitioned dumps,
tuple shardings, manual regions) and for names and shardings that need escaping; in C
(`ir/fast/_json.c`) and in its Python twin (`values_json_text_py`) alike."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meshdiag.ir.scan import scan_file
from meshdiag.memo import RunMemos
from meshdiag.pipeline import inspect

ROOT = Path(__file__).resolve().parent.parent / "fixtures"


def _modules():
    files = sorted(p for p in ROOT.rglob("*") if p.suffix in (".txt", ".mlir"))
    assert len(files) > 40
    return [m for p in files for m in scan_file(str(p), io.BytesIO(p.read_bytes())).modules]


def _by_json(m, memos) -> str:
    return json.dumps([inspect.value_json(v, m, inspect.gspmd_text(v, memos)) for v in m.values])


def _written(m, memos) -> str:
    """The module's values' JSON as `module_values_json` writes it (bytes), as text."""
    return inspect.module_values_json(m, memos).decode("ascii")


@pytest.fixture(params=["native", "twin"])
def writer(request, monkeypatch):
    """Each test runs with the native writer, then with its twin."""
    if request.param == "native":
        assert inspect._native_values_json is not None  # built in the test venv
    else:
        monkeypatch.setattr(inspect, "_native_values_json", None)
    return request.param


def test_every_fixture_module_as_json_dumps_writes_it(writer):
    """Also the modules holding lines shared with others (`LineValues`: the native writer
    reads the columns, each shared line's values at its occurrence's line), partitioned
    ones among them (their values' shapes per device)."""
    from meshdiag.ir.model import LineValues

    memos = RunMemos()
    modules = _modules()
    assert sum(len(m.values) for m in modules) > 300
    assert any(m.partitioned for m in modules)
    shared = [m for m in modules if any(it.__class__ is LineValues for it in m.items)]
    assert len(shared) > 10 and any(m.partitioned for m in shared)
    for m in modules:
        assert _written(m, memos) == _by_json(m, memos)


_NAME = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)


# the fixture only chooses the writer: the same for every example
@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(names=st.lists(_NAME, min_size=1, max_size=6), texts=st.lists(_NAME, max_size=3))
def test_names_and_texts_that_need_escaping(writer, names, texts):
    """Names with quotes, backslashes, control and non-ASCII characters; shardings whose
    text is not what the value was parsed from (the pieces are keyed by the text)."""
    m = next(m for m in _MODULES if len(m.values) >= len(names))
    memos = RunMemos()
    for v, name in zip(m.values, names, strict=False):
        v.name = name
    for v, text in zip(m.values, texts, strict=False):
        v.text = text
    assert _written(m, memos) == _by_json(m, memos)


def _own(m):
    """`m` with its values as Values of its own (no shared lines), so that editing one of
    `m.values` edits the module (a shared line's values in `m.values` are copies)."""
    m.values = list(m.values)
    return m


_MODULES = [_own(m) for m in _modules() if m.values and not m.partitioned][:5]


def test_a_files_json_around_its_modules_as_json_dumps_writes_it(tmp_path):
    """`file_json_parts` encodes the id space once for a run of files sharing it: the same
    text as `json.dumps` of the file's JSON, for files with a device assignment and
    without, alternating between them, and paths that need escaping."""
    from test_device_assignment import TEXTPROTO

    from meshdiag.pipeline.inspect import file_json_parts, ids_json

    mod = tmp_path / "module_0003.jit_f"
    mod.mkdir()
    (mod / "compile_options.textproto").write_text(TEXTPROTO)
    with_da = [str(tmp_path / f"module_0003.jit_f.000{k}.pass.txt") for k in range(3)]
    without = [str(tmp_path / "module_0004.jit_g.0001.pass.txt"), "<stdin>"]
    odd = ['a "quoted" \\ name.txt', "日本.mlir", "bad\udcff.txt"]
    paths = [*with_da, *without, with_da[0], *odd, with_da[1]]
    memos = RunMemos()
    for p in paths:
        want = json.dumps({"path": p, **ids_json(p), "modules": []})
        assert file_json_parts(p, memos) == (want[:-2], want[-2:])
    assert ids_json(with_da[0])["device_assignment"]["devices"] == [2, 3, 0, 1]


@pytest.mark.parametrize(
    "name", ['%a"b', "%a\\b", "%a\x7fb", "%a\nb", "%a\x1fb", "%\u00e9", "%\U0001f600", "%a b~"]
)
def test_names_json_escapes(writer, name):
    """Each kind of character json's ASCII encoder escapes, and the printable ones it
    does not."""
    m = _MODULES[0]
    memos = RunMemos()
    m.values[0].name = name
    assert _written(m, memos) == _by_json(m, memos)


def test_shapes_beyond_a_long_long_and_values_the_writer_does_not_know(writer):
    """Dims past 2**63 are written as Python writes them; a value whose fields are not what
    the native writer expects (a shape as a list) is written by the twin, the same text."""
    m = next(m for m in _MODULES if len(m.values) >= 2)
    memos = RunMemos()
    vs = m.values
    vs[0].shape = (10**30, 2**63, 2**63 - 1, 0)
    assert _written(m, memos) == _by_json(m, memos)
    vs[1].shape = [4, 8]  # type: ignore[assignment]
    want = inspect.values_json_text_py(m, memos)
    assert _written(m, memos) == want
    assert json.loads(want)[1]["shape"] == [4, 8]


_OWN_MODULE = _own(next(m for m in _modules() if len(m.values) >= 2 and not m.partitioned))
_INT = st.one_of(
    st.integers(-(2**64), 2**64),
    st.sampled_from([0, -1, 9, 10, -10, 2**63 - 1, -(2**63), -(2**63) - 1, 2**63, 10**18]),
)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(dims=st.lists(_INT, max_size=5), line=_INT, column=_INT)
def test_every_int_as_python_writes_it(writer, dims, line, column):
    """Dims, lines and columns of any sign and size (the native writer prints a long long's
    digits itself, and leaves bigger ones to Python)."""
    m = _OWN_MODULE  # (not one the tests above edit: a list shape sends it to the twin)
    memos = RunMemos()
    v = m.values[0]
    v.shape, v.line, v.column = tuple(dims), line, column
    assert _written(m, memos) == _by_json(m, memos)


def test_the_native_writer_leaks_nothing():
    import tracemalloc

    m = max(_MODULES, key=lambda m: len(m.values))
    memos = RunMemos()
    for _ in range(3):  # what stays (the run's memos) is made by the first calls
        _written(m, memos)
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for _ in range(300):
            _written(m, memos)
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert grown < 20_000, grown


def test_the_runs_json_pieces_stay_within_their_bound(writer, monkeypatch):
    """The pieces are kept for the run (the fixture test shares them across modules) and
    start over past `MAX_JSON_PIECES`, the text unchanged."""
    monkeypatch.setattr(inspect, "MAX_JSON_PIECES", 3)
    memos = RunMemos()
    for m in _modules()[:40]:
        assert _written(m, memos) == _by_json(m, memos)
        heads, tails = memos.slot("inspect.json_pieces", lambda: ({}, {}))
        assert len(heads) + len(tails) <= 3 + 2 * len(m.values)


def test_a_modules_whole_json_in_bytes_is_its_head_values_and_end(writer):
    """`module_values_json` (what a module's JSON is written as: the bytes of a prefix,
    the values' JSON and a suffix, made at once in C): for every fixture module, with the
    prefix and suffix a module's JSON puts around its values and with none, the bytes of
    the values' text between them; the native writer refuses a prefix that is not bytes,
    and leaks nothing."""
    import tracemalloc

    memos = RunMemos()
    for m in _modules():
        want = _by_json(m, memos).encode()
        for before, after in ((b'{"name": "m", "values": ', b"}"), (b"", b"")):
            got = inspect.module_values_json(m, memos, before, after)
            assert got.__class__ is bytes and got == before + want + after
    if writer == "native":
        m = max(_MODULES, key=lambda m: len(m.values))
        with pytest.raises(TypeError):
            inspect.module_values_json(m, memos, "[", b"]")  # type: ignore[arg-type]
        for _ in range(3):
            inspect.module_values_json(m, memos, b"(", b")")
        tracemalloc.start()
        try:
            start = tracemalloc.get_traced_memory()[0]
            for _ in range(300):
                inspect.module_values_json(m, memos, b"(", b")")
            grown = tracemalloc.get_traced_memory()[0] - start
        finally:
            tracemalloc.stop()
        assert grown < 20_000, grown


def test_values_longer_than_the_writers_first_guess(writer):
    """Names far longer than the room the native writer makes at first for a value (it
    grows its buffer, or the bytes it writes in, as it goes): the same text and bytes."""
    m = next(m for m in _MODULES if len(m.values) >= 2 and not m.partitioned)
    memos = RunMemos()
    for v, n in zip(m.values, (3000, 70000), strict=False):
        v.name = "%" + "x" * n
    want = _by_json(m, memos)
    assert _written(m, memos) == want
    assert inspect.module_values_json(m, memos, b"<", b">") == b"<" + want.encode() + b">"


def test_values_that_cycle_through_more_pieces_than_the_writer_keeps_at_hand(writer):
    """The native writer keeps its last few answers (`LAST_SLOTS`, 8) by the objects they
    were asked with: values cycling through more shardings, kinds, types and texts than
    that, in runs and interleaved, each with combinations that share all but one of those
    objects, write what `json.dumps` writes."""
    modules = _modules()
    m = _own(max((m for m in modules if not m.partitioned), key=lambda m: len(m.values)))
    assert len(m.values) >= 30
    hlos = list({id(v.hlo): v.hlo for mm in modules for v in mm.values}.values())
    assert len(hlos) > 10
    texts = [f'<@mesh, [{{"x{i}"}}]>' for i in range(11)]
    kinds = [("op", "stablehlo.add"), ("op", "stablehlo.dot"), ("arg", None), ("result", None)]
    dtypes = ["f32", "bf16", "s32"]
    for order in (lambda i: i, lambda i: i // 3, lambda i: (i * 7) % 13):
        memos = RunMemos()
        for i, v in enumerate(m.values):
            k = order(i)
            v.hlo = hlos[k % len(hlos)]
            v.text = texts[k % len(texts)]
            v.kind, v.op = kinds[k % len(kinds)]
            v.dtype = dtypes[(k // 2) % len(dtypes)]
        assert _written(m, memos) == _by_json(m, memos)


def test_every_count_of_digits_and_every_pair_of_last_digits(writer):
    """The native writer prints two digits at a time: ints of every length up to a long
    long's, around each power of ten, each ending in every pair of digits, either sign."""
    m = _OWN_MODULE
    memos = RunMemos()
    v = m.values[0]
    ints = {s * (10**k + d) for k in range(19) for d in (-1, 0, 1) for s in (1, -1)}
    ints |= {s * (1234567 * 100 + d) for d in range(100) for s in (1, -1)}
    ints |= set(range(-120, 121))
    ints = sorted(i for i in ints if -(2**63) <= i < 2**63)
    for at in range(0, len(ints), 3):
        line, column, *dims = ints[at : at + 5]
        v.shape, v.line, v.column = tuple(dims), line, column
        assert _written(m, memos) == _by_json(m, memos)
