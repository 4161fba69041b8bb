"""The native candidate scanner (`meshdiag.ir.fast._fastscan.scan_known`) against its Python
reference (`lines.scan_known_py`): same results, same list appends, on the fixtures, on
generated blocks and on edge cases; bad arguments raise instead of crashing.

Both scanners are driven over a block the way `ir.scan` drives them: call, take the returned
line (maybe learning it into `known`), continue from `next` with the following line number.
"""

from __future__ import annotations

import io
import os
import random
import sys
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# the native path must be built in the test venv: a missing module is a failure, not a skip
from meshdiag.ir import lines
from meshdiag.ir.fast import _fastscan

native = _fastscan.scan_known
reference = lines.scan_known_py

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def drive(scan, buf: bytes, lineno: int, known: dict, learn, pos: int = 0, end=None):
    """Scan `buf` (its lines before `end`, when given) from `pos`; every result, the two
    output lists and `known`.

    `learn(key)` says whether a returned line is added to `known` (with a value naming it).
    """
    lines_out: list = []
    items_out: list = []
    results = []
    stop = len(buf) if end is None else end
    while True:
        if end is None:
            result = scan(buf, pos, lineno, known, lines_out, items_out)
        else:
            result = scan(buf, pos, lineno, known, lines_out, items_out, None, end)
        results.append(result)
        start, cut, lineno, pos = result
        if start < 0 or pos > stop:  # pos > stop: a last line without its newline
            break
        key = buf[start:cut]
        if learn(key):
            known[key] = ("value", key)
        lineno += 1
    return results, lines_out, items_out, known


def assert_same(buf: bytes, lineno: int, known: dict, learn, pos: int = 0, end=None) -> list:
    got = drive(native, buf, lineno, dict(known), learn, pos, end)
    want = drive(reference, buf, lineno, dict(known), learn, pos, end)
    assert got == want
    return got[0]


def never(key: bytes) -> bool:
    return False


def always(key: bytes) -> bool:
    return True


def some(key: bytes) -> bool:
    return zlib.crc32(key) % 3 == 0


def candidate_keys(buf: bytes) -> list[bytes]:
    keys = []
    for ls, le in lines.candidate_spans(buf):
        end = le - 1 if le > ls and buf[le - 1] == 13 else le
        keys.append(buf[ls:end])
    return keys


def blocks_of(data: bytes, size: int, prefix: int = 0) -> list[tuple[bytes, int, int, int]]:
    """`data` as `read_blocks` gives it in reads of `size` bytes (after a `prefix` of that
    many bytes read before): (buffer, start, end, first line) each."""
    old = lines.BLOCK
    lines.BLOCK = size
    try:
        f = io.BytesIO(data)
        head = f.read(prefix)
        return list(lines.read_blocks(f, lambda *a: None, prefix=head))
    finally:
        lines.BLOCK = old


# --- the module is the one in use ------------------------------------------------------


def test_native_module_is_built_and_picked(monkeypatch):
    from meshdiag.ir import fast

    monkeypatch.delenv("MESHDIAG_PURE_PYTHON", raising=False)
    assert fast.native("scan_known") is native and fast.why_not_native() == ""
    # the build has every function the scanners ask for (a stale build lacking one would
    # only be slower: `native` gives None for it)
    for name in (
        "scan_known",
        "match_end",
        "split_top",
        "top_colon",
        "word_lines",
        "find_any",
        "constraint_fields",
        "entry_fields",
    ):
        assert fast.native(name) is getattr(_fastscan, name)
    assert fast.native("no_such_function") is None
    if not os.environ.get("MESHDIAG_PURE_PYTHON"):
        assert lines.scan_known is native
    monkeypatch.setenv("MESHDIAG_PURE_PYTHON", "1")
    assert fast.native("scan_known") is None and fast.native("match_end") is None
    assert lines.scanner_kind() == "pure Python, MESHDIAG_PURE_PYTHON is set"


def _has_avx2() -> bool:
    try:
        return " avx2 " in Path("/proc/cpuinfo").read_text().replace("\n", " ")
    except OSError:
        return False


def test_candidates_are_found_32_bytes_at_a_time_where_the_processor_can():
    """The native walker finds candidates with AVX2 where the processor has it and
    MESHDIAG_NO_SIMD is not 1 (`_fastscan.SIMD`); the walker tests here run both ways."""
    assert _fastscan.SIMD in (True, False)
    if os.environ.get("MESHDIAG_NO_SIMD") == "1":
        assert _fastscan.SIMD is False
    elif sys.platform == "linux" and os.uname().machine == "x86_64":
        assert _fastscan.SIMD is _has_avx2()


@pytest.mark.skipif(not _fastscan.SIMD, reason="the sampled search is the only one built")
def test_the_sampled_search_walks_as_the_twin_too(tmp_path):
    """This module's walker tests again, in a process whose walker samples (the search
    of a processor without AVX2)."""
    import subprocess

    env = {**os.environ, "MESHDIAG_NO_SIMD": "1"}
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-x",
            "-p",
            "no:cacheprovider",
            __file__,
            "-k",
            "not sampled_search",
            "--basetemp",
            str(tmp_path),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-3000:]
    progress = "".join(line.split("[")[0].strip() for line in r.stdout.splitlines())
    assert len(progress) > 50 and set(progress) == {"."}  # (every test ran: none skipped)


# --- fixtures --------------------------------------------------------------------------

FIXTURE_FILES = sorted(p for p in FIXTURES.rglob("*") if p.is_file())


def test_fixtures_exist():
    assert len(FIXTURE_FILES) > 10


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture_files(path):
    with path.open("rb") as f:
        blocks = list(lines.read_blocks(f, lambda *a: None))
    data = path.read_bytes()
    # 1 MiB blocks like the scanner reads them, then small blocks for many block edges
    for block_list in (blocks, blocks_of(data, 4096)):
        known: dict = {}  # learnt across blocks, like the real caller's cache
        for block, start, end, lineno in block_list:
            assert_same(block, lineno, {}, never, start, end)
            assert_same(block, lineno, {}, some, start, end)
            keys = {k: 1 for k in candidate_keys(block[start:end])}
            assert_same(block, lineno, keys, never, start, end)
            results = assert_same(block, lineno, known, always, start, end)
            for r in results[:-1]:
                known[block[r[0] : r[1]]] = ("value", block[r[0] : r[1]])


# --- generated blocks ------------------------------------------------------------------

FRAGMENTS = [
    b"sharding",
    b"reshard",
    *lines._RARE,  # every word that makes a candidate line
    b"shard",
    b"shar",
    b"resh",
    b"re",
    b"ding",
    b"modul",
    b"odule",
    b"sdy.",
    b"HloMod",
    b"ENTR",
    b"error",
    b"warn",
    b"// --",
    b"} : ",
    b" : (",
    b"IR D",
    b"\r",
    b"\n",
    b"\r\n",
    b"\n\n",
    b"\xff",
    b"\xc3\xa9",
    b"\x00",
    b"x",
    b" ",
    b"=",
    b"{",
    b"}",
    b"%arg0 = f32[8,16]{1,0} parameter(0), ",
]


@st.composite
def scan_cases(draw):
    parts = draw(st.lists(st.sampled_from(FRAGMENTS), max_size=60))
    buf = b"".join(parts)
    if draw(st.booleans()):  # read_blocks' blocks end with a newline; others must not crash
        buf += b"\n"
    keys = candidate_keys(buf)
    known = {}
    for key in keys:
        choice = draw(st.integers(0, 3))
        if choice == 1:
            known[key] = draw(st.integers(-5, 5))
        elif choice == 2:
            known[key] = None  # a line known to yield nothing: skipped
    for extra in draw(st.lists(st.sampled_from(FRAGMENTS), max_size=3)):
        known[extra] = "extra"
    pos = draw(st.integers(0, len(buf)))
    if draw(st.booleans()):  # mostly a line start, like the caller
        pos = buf.rfind(b"\n", 0, pos) + 1
    lineno = draw(st.integers(-3, 10**6))
    learn = draw(st.sampled_from([never, always, some]))
    return buf, lineno, known, learn, pos


@settings(
    max_examples=600,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(scan_cases())
def test_generated_blocks(case):
    buf, lineno, known, learn, pos = case
    assert_same(buf, lineno, known, learn, pos)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(scan_cases(), st.lists(st.sampled_from(FRAGMENTS), max_size=8))
def test_a_walk_to_end_is_a_walk_of_the_lines_before_it(case, after):
    """With `end` (after a newline), both walkers see `buf[:end]` and nothing after it,
    whatever follows (here: more fragments, candidate words among them, and no newline at
    the end: the unfinished line a read stops in)."""
    buf, lineno, known, learn, pos = case
    end = buf.rfind(b"\n") + 1
    pos = min(pos, end)
    longer = buf + b"".join(after).replace(b"\n", b"") + b" sharding"
    for scan in (native, reference):
        assert drive(scan, longer, lineno, dict(known), learn, pos, end) == drive(
            scan, buf[:end], lineno, dict(known), learn, pos
        )


def test_end_outside_the_block_is_refused():
    lines_out: list = []
    with pytest.raises(ValueError, match="end"):
        native(b"a\n", 0, 1, {}, lines_out, [], None, 3)
    with pytest.raises(ValueError, match="pos"):
        native(b"a\nb\n", 3, 1, {}, lines_out, [], None, 2)
    with pytest.raises(TypeError):
        native(b"a\n", 0, 1, {}, lines_out, [], None, "2")


@settings(max_examples=300, derandomize=True, deadline=None)
@given(
    st.lists(st.sampled_from([*FRAGMENTS, b"x" * 40, b"y" * 300]), max_size=80).map(b"".join),
    st.integers(1, 64),
    st.integers(0, 200),
)
def test_read_blocks_gives_every_line_once_in_order(data, size, prefix):
    """The ranges `read_blocks` gives are the input's lines, each once, in order, each
    range whole lines (from a line start to after a newline), numbered by the lines before
    it: whatever the read size and the prefix read before."""
    blocks = blocks_of(data, size, prefix)
    want = data if not data or data.endswith(b"\n") else data + b"\n"
    assert b"".join(buf[start:end] for buf, start, end, _ in blocks) == want
    seen = 0
    for buf, start, end, lineno in blocks:
        assert 0 <= start < end <= len(buf)
        assert buf[end - 1] == 10 and (start == 0 or buf[start - 1] == 10)
        assert lineno == 1 + want.count(b"\n", 0, seen)
        seen += end - start


def test_read_blocks_hands_over_each_read_without_copying_it():
    """Lines that end in a read come from the bytes that read gave, not a copy: only a line
    begun in the read before is joined (a small block of its own)."""
    data = b"".join(b"line %d sharding\n" % i for i in range(1000))
    reads: list[bytes] = []

    class Reader(io.BytesIO):
        def read(self, n=-1):
            got = super().read(n)
            reads.append(got)
            return got

    old = lines.BLOCK
    lines.BLOCK = 1000
    try:
        blocks = list(lines.read_blocks(Reader(data), lambda *a: None))
    finally:
        lines.BLOCK = old
    big = [buf for buf, start, end, _ in blocks if end - start > 100]
    assert big and all(any(buf is r for r in reads) for buf in big)
    assert all(end - start <= 100 for buf, start, end, _ in blocks if buf not in big)


def test_all_ascii_finds_a_byte_past_ascii_anywhere():
    """`all_ascii` (what `read_blocks` asks of each block before it checks its UTF-8): one
    byte past ASCII at any place of a 200-byte buffer, inside the range asked or out of it,
    answered as the twin answers; refusals of ranges outside the buffer."""
    for bad in range(200):
        buf = bytes(b"x" * bad + b"\xc3" + b"y" * (199 - bad))
        for start in (0, 1, 15, 16, 63, 64, 65, bad, bad + 1):
            for end in (start, start + 1, 64, 128, 130, bad, bad + 1, 199, 200):
                if not 0 <= start <= end <= 200:
                    continue
                want = lines.all_ascii_py(buf, start, end)
                assert want == (not start <= bad < end)
                assert _fastscan.all_ascii(buf, start, end) is want, (bad, start, end)
    for args in ((b"x", 0, 2), (b"x", -1, 1), (b"xy", 2, 1), ("x", 0, 1), (b"x", 0)):
        with pytest.raises((TypeError, ValueError)):
            _fastscan.all_ascii(*args)


def test_seeded_large_blocks():
    """Longer blocks than hypothesis builds: the unrolled sampling loop and its tail."""
    rng = random.Random(20240611)
    for _ in range(120):
        n = rng.randrange(1, 3000)
        buf = b"".join(rng.choice(FRAGMENTS) for _ in range(n)) + b"\n"
        keys = candidate_keys(buf)
        known = {k: i for i, k in enumerate(keys) if rng.random() < 0.5}
        assert_same(buf, rng.randrange(1, 1000), known, rng.choice([never, always, some]))


def test_every_offset_of_every_needle():
    """Each needle at each offset from a line start, in lines of every short length."""
    for needle in [b"sharding", b"reshard", *lines._RARE]:
        for before in range(0, 12):
            for after in range(0, 6):
                line = b"a" * before + needle + b"b" * after
                for buf in (line + b"\n", b"zz\n" + line + b"\r\nyy\n", line):
                    results = assert_same(buf, 1, {}, never)
                    assert results[0][0] >= 0, (needle, before, after)


# --- edge cases ------------------------------------------------------------------------


def call(scan, buf, pos=0, lineno=1, known=None):
    lines_out: list = []
    items_out: list = []
    result = scan(buf, pos, lineno, {} if known is None else known, lines_out, items_out)
    return result, lines_out, items_out


@pytest.mark.parametrize("scan", [native, reference], ids=["native", "python"])
def test_edge_cases(scan):
    assert call(scan, b"") == ((-1, -1, 1, 0), [], [])
    assert call(scan, b"a\nb\n", lineno=7) == ((-1, -1, 9, 4), [], [])
    buf = b"x sharding\r\n"
    assert call(scan, buf) == ((0, 10, 1, 12), [], [])
    assert call(scan, buf, known={b"x sharding": "v"}) == ((-1, -1, 2, 12), [1], ["v"])
    # one trailing `\r` only is dropped from the key
    buf = b"a\nx sharding\r\r\n"
    assert call(scan, buf) == ((2, 13, 2, 15), [], [])
    # needle at the very start and at the very end (no newline after it)
    assert call(scan, b"ENTRY\n") == ((0, 5, 1, 6), [], [])
    assert call(scan, b"a\nb\n} : (") == ((4, 9, 3, 10), [], [])
    # pos at the end, pos at a later line
    buf = b"module\nsharding\n"
    assert call(scan, buf, pos=len(buf), lineno=3) == ((-1, -1, 3, len(buf)), [], [])
    assert call(scan, buf, pos=7, lineno=2) == ((7, 15, 2, 16), [], [])
    # everything known: one call walks the whole block
    known = {b"module": 1, b"sharding": 2}
    assert call(scan, buf, known=known) == ((-1, -1, 3, 16), [1, 2], [1, 2])
    # a None value is a line known to yield nothing: skipped, not recorded
    assert call(scan, buf, known={b"module": None}) == ((7, 15, 2, 16), [], [])
    assert call(scan, buf, known={b"module": None, b"sharding": 2}) == ((-1, -1, 3, 16), [2], [2])
    # `shard` alone, `sdy.mes`, `HloModul` are not candidates
    assert call(scan, b"shard\nsdy.mes\nHloModul\n") == ((-1, -1, 4, 23), [], [])


def test_same_list_for_lines_and_items():
    buf = b"module\nx\nsharding\n"
    out: list = []
    known = {b"module": "m", b"sharding": "s"}
    assert native(buf, 0, 1, known, out, out) == (-1, -1, 4, len(buf))
    assert out == [1, "m", 3, "s"]


def test_lookup_errors_propagate():
    """A key whose comparison raises: the error comes out of both scanners, no crash."""
    line = b"x sharding"

    class Clash:
        def __hash__(self):
            return hash(line)

        def __eq__(self, other):
            raise RuntimeError("boom")

    for scan in (native, reference):
        with pytest.raises(RuntimeError, match="boom"):
            scan(line + b"\n", 0, 1, {Clash(): 1}, [], [])


def test_no_reference_leaks():
    buf = b"module\nsharding\nx\n" * 50
    value = object()
    known = {b"module": value, b"sharding": value}
    before = (sys.getrefcount(value), sys.getrefcount(buf))
    for _ in range(200):
        lines_out: list = []
        items_out: list = []
        native(buf, 0, 1, known, lines_out, items_out)
        assert len(items_out) == 100
        del lines_out, items_out
    assert (sys.getrefcount(value), sys.getrefcount(buf)) == before


BAD_ARGS = [
    ((bytearray(b"module\n"), 0, 1, {}, [], []), TypeError),
    ((memoryview(b"module\n"), 0, 1, {}, [], []), TypeError),
    (("module\n", 0, 1, {}, [], []), TypeError),
    ((None, 0, 1, {}, [], []), TypeError),
    ((b"module\n", 0.0, 1, {}, [], []), TypeError),
    ((b"module\n", None, 1, {}, [], []), TypeError),
    ((b"module\n", 0, "1", {}, [], []), TypeError),
    ((b"module\n", 0, 1, [], [], []), TypeError),
    ((b"module\n", 0, 1, None, [], []), TypeError),
    ((b"module\n", 0, 1, {}, (), []), TypeError),
    ((b"module\n", 0, 1, {}, [], None), TypeError),
    ((b"module\n", 0, 1, {}, []), TypeError),
    ((b"module\n", 0, 1, {}, [], [], []), TypeError),
    ((), TypeError),
    ((b"module\n", -1, 1, {}, [], []), ValueError),
    ((b"module\n", 8, 1, {}, [], []), ValueError),
    ((b"module\n", 2**70, 1, {}, [], []), ValueError),
    ((b"module\n", -(2**70), 1, {}, [], []), ValueError),
    ((b"module\n", 0, 2**70, {}, [], []), ValueError),
    ((b"module\n", 0, sys.maxsize, {}, [], []), ValueError),
]


@pytest.mark.parametrize(("args", "error"), BAD_ARGS)
def test_bad_arguments(args, error):
    with pytest.raises(error):
        native(*args)


def test_keyword_arguments_refused():
    with pytest.raises(TypeError):
        native(buf=b"", pos=0, lineno=1, known={}, lines_out=[], items_out=[])


def test_real_dump_files(dump):
    """Every file of a real every-pass XLA dump (conftest `dump`) the walk reads."""
    from meshdiag.ir.scan import expand_paths

    path, _ = dump
    files = [Path(p) for p in expand_paths([str(path)])]
    assert len(files) > 40
    for f in files:
        data = f.read_bytes()
        known: dict = {}
        for block, start, end, lineno in blocks_of(data, 4096):
            assert_same(block, lineno, {}, never, start, end)
            results = assert_same(block, lineno, known, always, start, end)
            for r in results[:-1]:
                known[block[r[0] : r[1]]] = ("value", block[r[0] : r[1]])


def test_native_walker_is_built_from_the_one_word_list():
    """setup.py passes `words.WORDS` to the compiler: the native walker looks for exactly
    the words the Python walker looks for."""
    from meshdiag.ir.fast import words

    assert _fastscan.WORDS == words.WORDS
    assert all(w.encode() in lines._RARE for w in words.RARE)
    body = words.c_initializer()
    assert body == ", ".join(f'"{w}"' for w in words.WORDS)


@pytest.mark.parametrize("word", ['say "hi"', "back\\slash", "new\nline", "abc", "x" * 12])
def test_word_list_refuses_what_the_native_walker_cannot_take(word, monkeypatch):
    from meshdiag.ir.fast import words

    monkeypatch.setattr(words, "WORDS", (*words.WORDS, word))
    with pytest.raises(ValueError, match="cannot be passed"):
        words.c_initializer()


# -- word_lines (the collective scan's candidate lines) ----------------------------------------


def _collective_words():
    from meshdiag.comms.scan import _WORDS

    return _WORDS


#: pieces of the collective scan's words: the native search stops at each word's rarest
#: byte (`-` of `all-`, `y` of `sdy.`) and checks the word around it, so blocks are built
#: with those bytes where a word does not fit (at a block's start or end, after a newline)
_PIECES = [
    *(b"all-", b"sdy.", b"module", b"HloModule ", b"reduce-scatter", b"collective-perm"),
    *(b"a", b"l", b"al", b"ll-", b"-", b"sd", b"y.", b"dy", b"y", b".", b"reduce-", b"perm"),
    *(b"\n", b" ", b"x", b"Hlo", b"Module "),
]
_BLOCKS = st.lists(st.sampled_from(_PIECES), max_size=60).map(b"".join)


@settings(max_examples=400, deadline=None)
@given(_BLOCKS)
def test_word_lines_native_equals_its_twin(block):
    from meshdiag.comms.scan import word_lines_py

    words = _collective_words()
    assert _fastscan.word_lines(block, words) == word_lines_py(block, words)


@settings(max_examples=400, deadline=None)
@given(_BLOCKS, st.lists(st.sampled_from(_PIECES[:12]), min_size=1, max_size=4).map(tuple))
def test_find_any_native_equals_its_twin(block, words):
    from meshdiag.comms.scan import find_any_py

    assert _fastscan.find_any(block, words) == find_any_py(block, words)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=3000), st.integers(0, 40), st.integers(0, 40))
def test_count_lines_native_equals_its_twin(data, cut_head, cut_tail):
    """Any buffer, any length and alignment (the native count reads 16 bytes at a time, or
    8 without SSE2, and folds its byte counters every 255 steps)."""
    from meshdiag.ir.parts import count_lines_py

    view = memoryview(data)[cut_head : max(cut_head, len(data) - cut_tail)]
    assert _fastscan.count_lines(view) == count_lines_py(view) == view.tobytes().count(b"\n")
    many = bytearray(b"\n" * 5000 + data)  # past 255 steps of all-newline bytes
    assert _fastscan.count_lines(many) == bytes(many).count(b"\n")
    with pytest.raises(TypeError):
        _fastscan.count_lines("text")


@settings(max_examples=200, deadline=None)
@given(_BLOCKS, st.lists(st.sampled_from(_PIECES[:12]), min_size=17, max_size=24).map(tuple))
def test_find_any_of_many_words_equals_its_twin(block, words):
    """More words than the native finder groups by their rarest byte: one pass a word."""
    from meshdiag.comms.scan import find_any_py

    assert _fastscan.find_any(block, words) == find_any_py(block, words)


def test_find_any_groups_words_that_share_their_rarest_byte():
    """Words found in one pass over their shared rarest byte: the earliest start wins, also
    when a word anchored further in starts before one found at an earlier anchor."""
    from meshdiag.comms.scan import _HLO_WORDS, _SDY_OPS, find_any_py

    block = b"x sdy.sharding sdy.reshard sdy.all_gather y reduce-scatter all-reduce"
    for words in (_SDY_OPS, _HLO_WORDS, (b"xy.", b"abcxy."), (b"abcxy.", b"xy.")):
        assert _fastscan.find_any(block, words) == find_any_py(block, words)
    assert _fastscan.find_any(b"--abcxy.xy.", (b"xy.", b"abcxy.")) == 2
    assert _fastscan.find_any(b"sdy.sdy.all_", _SDY_OPS) == 4


def test_word_lines_on_fixtures_and_edges():
    from meshdiag.comms.scan import find_any_py, word_lines_py

    words = _collective_words()
    root = Path(__file__).resolve().parent.parent / "fixtures"
    blocks = [p.read_bytes() for p in sorted(root.rglob("*.txt"))[:80]]
    blocks += [b"", b"\n", b"all-", b"\nall-", b"all-\n", b"xall-yall-\nall-", b"sdy.all-\n\n"]
    for block in blocks:
        assert _fastscan.word_lines(block, words) == word_lines_py(block, words)
    assert _fastscan.word_lines(b"ab\nxx all-y\nsdy. all-\nzz", (b"all-", b"sdy.")) == [3, 12]
    for block in blocks:
        for ws in (words, (b"sdy.",), (b"all-", b"reduce-scatter", b"collective-perm")):
            assert _fastscan.find_any(block, ws) == find_any_py(block, ws)
    assert _fastscan.find_any(b"xx all-y sdy.", (b"sdy.", b"all-")) == 3
    assert _fastscan.find_any(b"sdy", (b"sdy.",)) == -1  # the anchor byte past the end
    assert _fastscan.find_any(b".sdy", (b"sdy.",)) == -1  # the anchor byte before the word
    with pytest.raises(TypeError):
        _fastscan.find_any(b"x", (b"",))
    with pytest.raises(TypeError):
        _fastscan.find_any("x", (b"a",))
    with pytest.raises(TypeError):
        _fastscan.word_lines(b"x", (b"",))
    with pytest.raises(TypeError):
        _fastscan.word_lines("x", (b"a",))


# --- the filter of learned lines (`ir.prints`) ------------------------------------------


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=40))
def test_line_print_native_equals_its_twin(line):
    from meshdiag.ir.prints import PRINT_BITS, line_print_py

    got = _fastscan.line_print(line)
    assert got == line_print_py(line) and 0 <= got < PRINT_BITS


def _filtered(scan, buf: bytes, known: dict, prints: bytearray):
    """`drive`, the filter `prints` given to each call."""
    lines_out: list = []
    items_out: list = []
    results = []
    pos, lineno = 0, 1
    while True:
        result = scan(buf, pos, lineno, known, lines_out, items_out, prints)
        results.append(result)
        start, _, lineno, pos = result
        if start < 0 or pos > len(buf):
            break
        lineno += 1
    return results, lines_out, items_out


@pytest.mark.parametrize("scan", [native, reference], ids=["native", "twin"])
def test_the_walkers_look_up_only_the_lines_whose_print_is_set(scan):
    """With the filter of every known line's print set, a walk is what it is without one; a
    known line whose print is not set is walked past as unknown (it is not looked up), and
    the native walker refuses a filter of another size."""
    from meshdiag.ir.prints import PRINT_BITS, mark

    data = (FIXTURES / "seed" / "distorted_mesh.mlir").read_bytes()
    keys = candidate_keys(data)
    known = {k: ("value", k) for k in keys[::2]}
    prints = bytearray(PRINT_BITS // 8)
    for k in known:
        mark(prints, k)
    want = drive(scan, data, 1, dict(known), never)[:3]
    assert _filtered(scan, data, dict(known), prints) == want
    assert want[1]  # (some known lines walked past)
    nothing_marked = bytearray(PRINT_BITS // 8)
    assert _filtered(scan, data, dict(known), nothing_marked) == drive(scan, data, 1, {}, never)[:3]
    if scan is native:
        with pytest.raises(TypeError):
            scan(data, 0, 1, known, [], [], bytearray(16))


def test_the_memo_marks_what_it_learns_and_forgets_it_with_the_lines():
    from meshdiag.ir.prints import printed
    from meshdiag.ir.scancache import MAX_LINE_BYTES, ScanCache

    cache = ScanCache()
    cache.learn(1, "mlir", b"  %0 = a sharding line", None)
    prints = cache.lines(1, "mlir")[1]
    assert printed(prints, b"  %0 = a sharding line")
    assert sum(bin(byte).count("1") for byte in prints) == 1
    # another module state: its own filter, none while it has learned nothing
    assert cache.lines(2, "mlir") == ({}, None)
    cache.learn(1, "mlir", b"x" * (MAX_LINE_BYTES // 2), None)
    cache.learn(1, "mlir", b"y" * (MAX_LINE_BYTES // 2), None)  # past the budget: all forgotten
    assert not printed(cache.lines(1, "mlir")[1], b"  %0 = a sharding line")
    assert list(cache.lines(1, "mlir")[0]) == [b"y" * (MAX_LINE_BYTES // 2)]


def test_the_memos_filters_are_made_as_lines_are_learned_and_bounded():
    """A module state the walker only asks about costs no filter; one is made with a
    state's first line learned, at most MAX_PRINTS of them before the memo starts over, so
    a run of thousands of states (every module on a mesh of its own) holds a few MB."""
    from meshdiag.ir.scancache import MAX_PRINTS, ScanCache

    cache = ScanCache()
    for token in range(5000):
        assert cache.lines(token, "mlir")[1] is None
    for token in range(5000):
        cache.learn(token, "mlir", b"  %0 = a sharding line", None)
        assert sum(p is not None for _, p in cache._known.values()) <= MAX_PRINTS
    assert cache.lines(4999, "mlir")[0] == {b"  %0 = a sharding line": None}
