"""The IR text helpers (bracket matching, top-level splits, result types) against
character-by-character reference implementations: the helpers jump between interesting
characters with regexes for speed and must give the same answers on any text."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from meshdiag.ir import text

# -- the reference: one character at a time -----------------------------------------------
_OPEN = {"<": ">", "[": "]", "{": "}", "(": ")"}
_CLOSE = {">", "]", "}", ")"}


def ref__closing_quote(s: str, pos: int, end: int) -> int:
    """Index of the `"` ending the string whose content starts at `pos` (`\\` escapes skipped);
    `end` or more when `s[pos:end]` does not close it."""
    q = pos
    while q < end and s[q] != '"':
        q += 2 if s[q] == "\\" else 1
    return q


def ref_match_end(s: str, pos: int) -> int:
    """Index after the bracket closing `s[pos]` (any of `<[{(`), skipping quoted strings and
    the `->` arrow; -1 when the line ends first."""
    n = len(s)
    stack = []
    p = pos
    while p < n:
        c = s[p]
        if c == '"':
            p = ref__closing_quote(s, p + 1, n) + 1
            continue
        if c in _OPEN:
            stack.append(_OPEN[c])
        elif c in _CLOSE:
            if c == ">" and p > 0 and s[p - 1] == "-":  # `->`
                p += 1
                continue
            if not stack or stack[-1] != c:
                return -1
            stack.pop()
            if not stack:
                return p + 1
        p += 1
    return -1


def ref_brace_end(s: str, pos: int) -> int:
    """Index after the `}` closing `s[pos] == "{"` (HLO text: only braces nest; `<=` is not
    a bracket), skipping quoted strings; -1 when the line ends first."""
    depth = 0
    n = len(s)
    p = pos
    while p < n:
        c = s[p]
        if c == '"':
            p = ref__closing_quote(s, p + 1, n) + 1
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return p + 1
        p += 1
    return -1


def ref_split_group(s: str, pos: int) -> tuple[int, list[tuple[int, int]]]:
    """A group opening at s[pos] (else none): where it ends, and the pieces inside."""
    if not (0 <= pos < len(s)) or s[pos] not in "<[{(":
        return -1, []
    end = ref_match_end(s, pos)
    return (end, ref_split_top(s, pos + 1, end - 1)) if end >= 0 else (-1, [])


def ref_split_top(s: str, start: int, end: int) -> list[tuple[int, int]]:
    """Spans of `s[start:end]` separated by commas at bracket depth 0 (quotes respected)."""
    spans = []
    depth = 0
    p = start
    item = start
    while p < end:
        c = s[p]
        if c == '"':
            p = ref__closing_quote(s, p + 1, end) + 1
            continue
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE and not (c == ">" and p > 0 and s[p - 1] == "-"):
            depth -= 1
        elif c == "," and depth == 0:
            spans.append((item, p))
            item = p + 1
        p += 1
    if item < end or spans:
        spans.append((item, end))
    return spans


def ref_string_end(s: str, pos: int) -> int:
    """Index of the closing quote of the string whose content starts at `pos`; -1 if none."""
    n = len(s)
    q = ref__closing_quote(s, pos, n)
    return q if q < n else -1


def ref_op_result_types(line: str, start: int) -> list[str]:
    """The result types of an MLIR op line: after the last top-level ` : ` (and `->`)."""
    body = text.strip_loc(line)
    n = len(body)
    depth = 0
    colon = -1
    arrow = -1
    p = start
    while p < n:
        c = body[p]
        if c == '"':
            p = ref__closing_quote(body, p + 1, n) + 1
            continue
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            if c == ">" and body[p - 1] == "-":
                if depth == 0 and colon >= 0:
                    arrow = p + 1
            else:
                depth -= 1
        elif c == ":" and depth == 0 and body[p - 1 : p + 2] == " : ":
            colon = p + 1
            arrow = -1
        p += 1
    if colon < 0:
        return []
    rest = body[arrow if arrow >= 0 else colon :].strip()
    at = rest.find(" attributes ")
    if at >= 0:
        rest = rest[:at]
    if rest.startswith("(") and ref_match_end(rest, 0) == len(rest):
        rest = rest[1:-1]
    return [rest[a:b].strip() for a, b in ref_split_top(rest, 0, len(rest))]


FRAGMENTS = list('<>[]{}()",:-\\ ab=#@%') + [" : ", "->", '\\"', "\n", "tensor<8x8xf32>", " loc(x)"]
FRAGMENTS += ["é", "非", "😀", "<" * 300, ">" * 300]  # wide characters; deeper than a small stack
lines = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join)


@settings(max_examples=3000, deadline=None, derandomize=True)
@given(lines, st.data())
def test_helpers_match_the_reference(s, data):
    pos = data.draw(st.integers(0, max(len(s) - 1, 0)))
    end = data.draw(st.integers(pos, len(s)))
    assert text._closing_quote(s, pos, end) == ref__closing_quote(s, pos, end)
    assert text.split_top(s, pos, end) == ref_split_top(s, pos, end)
    assert text.string_end(s, pos) == ref_string_end(s, pos)
    assert text.op_result_types(s, pos) == ref_op_result_types(s, pos)
    if s:
        assert text.match_end(s, pos) == ref_match_end(s, pos)
        assert text.brace_end(s, pos) == ref_brace_end(s, pos)
    assert text.split_group(s, pos) == ref_split_group(s, pos)


def test_real_annotated_lines():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "fixtures"
    n = 0
    for p in sorted(root.rglob("*")):
        if not p.is_file() or p.suffix == ".json":
            continue
        for line in p.read_text(errors="replace").splitlines():
            if "sharding" not in line:
                continue
            for ch in "({<[":
                pos = line.find(ch)
                if pos < 0:
                    continue
                n += 1
                assert text.match_end(line, pos) == ref_match_end(line, pos)
                assert text.brace_end(line, pos) == ref_brace_end(line, pos)
                assert text.split_top(line, pos, len(line)) == ref_split_top(line, pos, len(line))
                assert text.split_group(line, pos) == ref_split_group(line, pos)
                assert text.op_result_types(line, pos) == ref_op_result_types(line, pos)
    assert n > 100


# -- annotation tokens ---------------------------------------------------------------------

#: the tokens `annotations_in` finds, as one regex (the reference; too slow for the scanner)
ANNOT = re.compile(
    r"#sdy\.sharding_per_value<"
    r"|#sdy\.sharding<"
    r'|\bmhlo\.sharding = "'
    r'|\bxla\.sdy\.sharding = "'
    r"|\b(?:out_)?sharding=<"
)
#: the `sharding={` that `hlo_sharding_braces` finds, as one regex (its reference)
SHARDING = re.compile(r"(?<![\w.])sharding=\{")

TOKEN_FRAGMENTS = [
    "#sdy.",
    "sharding",
    "_per_value",
    "<",
    ' = "',
    "=<",
    "mhlo.",
    "xla.sdy.",
    "out_",
    "x",
    "_",
    " ",
    "{",
    "%0",
    "é",
    "2",
]
token_lines = st.lists(st.sampled_from(TOKEN_FRAGMENTS), max_size=30).map("".join)


@settings(max_examples=3000, deadline=None, derandomize=True)
@given(token_lines, st.data())
def test_annotation_tokens_match_the_regex(s, data):
    from meshdiag.ir.mlir import annotations_in

    start = data.draw(st.integers(0, len(s)))
    end = data.draw(st.integers(start, len(s)))
    expected = [(m.start(), m.end(), m.group(0)) for m in ANNOT.finditer(s, start, end)]
    assert annotations_in(s, start, end) == expected


def test_annotation_tokens_on_real_lines():
    from pathlib import Path

    from meshdiag.ir.mlir import annotations_in

    root = Path(__file__).resolve().parent.parent / "fixtures"
    n = 0
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.suffix != ".json":
            for line in p.read_text(errors="replace").splitlines():
                expected = [(m.start(), m.end(), m.group(0)) for m in ANNOT.finditer(line)]
                assert annotations_in(line, 0, len(line)) == expected
                n += len(expected)
    assert n > 100


def test_native_match_end_matches_python():
    from meshdiag.ir import text

    if text._native_match_end is None:
        import pytest

        pytest.fail("the native scanner is not built in this environment")
    samples = ["<" * 5000 + ">" * 5000, '<"\\">', '<"\\', "(a -> b)", "<x😀>", "[é}"]
    samples += ["a : b", ":x", " : ", '%0 = f "a : b" : (t<1>) -> t', "x, (y, z), 'é'"]
    for s in samples:
        for pos in range(min(len(s), 50)):
            assert text._native_match_end(s, pos) == text.match_end_py(s, pos)
            assert text._native_top_colon(s, pos) == text._top_colon(s, pos)
            for end in range(pos, min(len(s), pos + 12) + 1):
                assert text._native_split_top(s, pos, end) == text.split_top_py(s, pos, end)
            assert text._native_split_group(s, pos) == text.split_group_py(s, pos)


@settings(max_examples=2000, deadline=None, derandomize=True)
@given(
    st.lists(
        st.sampled_from(["sharding={", "sharding", "={", "x", ".", "_", " ", "é", "{"]), max_size=20
    ).map("".join),
    st.data(),
)
def test_hlo_sharding_braces_match_the_regex(s, data):
    from meshdiag.ir.text import hlo_sharding_braces as sharding_braces

    after = data.draw(st.integers(0, len(s)))
    assert sharding_braces(s, after) == [m.end() - 1 for m in SHARDING.finditer(s, after)]
