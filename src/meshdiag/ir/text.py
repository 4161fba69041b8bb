"""Small text helpers for IR lines: string escapes, bracket matching, types → shapes.

They work on one line and never raise on malformed text: a missing bracket gives `-1`, an
unreadable type gives `None`, and the caller reports what it could not read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from meshdiag.ir.fast import native
from meshdiag.notation._cursor import unescape as _unescape

_OPEN = {"<": ">", "[": "]", "{": "}", "(": ")"}
_CLOSE = {">", "]", "}", ")"}

# The scans below jump from one interesting character to the next with a compiled regex
# (C speed) instead of looking at every character in Python: annotated lines run to
# kilobytes (a function signature with every argument's sharding), mostly plain text.
#: the rest of a string's content: anything but a quote, `\\` escaping any one character
_STRING_BODY = re.compile(r'(?:[^"\\]|\\.)*', re.DOTALL)
_BRACKETS = re.compile(r'[<\[{(>\]})"]')
_BRACES = re.compile(r'[{}"]')
_BRACKETS_COMMA = re.compile(r'[<\[{(>\]})",]')
_BRACKETS_COLON = re.compile(r'[<\[{(>\]})":]')


def _closing_quote(s: str, pos: int, end: int) -> int:
    """Index of the `"` ending the string whose content starts at `pos` (`\\` escapes skipped);
    `end` or more when `s[pos:end]` does not close it."""
    q = _STRING_BODY.match(s, pos, end).end()  # type: ignore[union-attr]
    if q < end and s[q] == "\\":  # a lone backslash at the end: it escapes what follows
        return end + 1
    return q


def _tokens(s: str, pattern: re.Pattern, start: int, end: int) -> Iterator[tuple[int, str]]:
    """(position, character) of each character `pattern` matches in `s[start:end]`, left
    to right, quoted strings skipped (the walk ends in one not closed before `end`)."""
    search = pattern.search
    m = search(s, start, end)
    while m is not None:
        p = m.start()
        c = s[p]
        if c == '"':
            m = search(s, _closing_quote(s, p + 1, end) + 1, end)
            continue
        yield p, c
        m = search(s, p + 1, end)


def match_end(s: str, pos: int) -> int:
    """Index after the bracket closing `s[pos]` (any of `<[{(`), skipping quoted strings and
    the `->` arrow; -1 when the line ends first. Native when the extension is built."""
    if _native_match_end is not None and pos >= 0:
        return _native_match_end(s, pos)
    return match_end_py(s, pos)


def match_end_py(s: str, pos: int) -> int:
    """`match_end` in Python: the reference for the native one, and the fallback."""
    stack: list[str] = []
    for p, c in _tokens(s, _BRACKETS, pos, len(s)):
        if c in _OPEN:
            stack.append(_OPEN[c])
        elif not (c == ">" and p > 0 and s[p - 1] == "-"):  # `->` is not a bracket
            if not stack or stack[-1] != c:
                return -1
            stack.pop()
            if not stack:
                return p + 1
    return -1


_native_match_end = native("match_end")
_native_split_top = native("split_top")
_native_top_colon = native("top_colon")
_native_split_group = native("split_group")


def brace_end(s: str, pos: int) -> int:
    """Index after the `}` closing `s[pos] == "{"` (HLO text: only braces nest; `<=` is not
    a bracket), skipping quoted strings; -1 when the line ends first."""
    close = s.find("}", pos)
    if (
        close > pos
        and s.startswith("{", pos)
        and s.find("{", pos + 1, close) < 0
        and s.find('"', pos, close) < 0
    ):
        return close + 1  # the common `{...}` with nothing nested or quoted: two finds
    depth = 0
    for p, c in _tokens(s, _BRACES, pos, len(s)):
        if c == "{":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return p + 1
    return -1


def split_top(s: str, start: int, end: int) -> list[tuple[int, int]]:
    """Spans of `s[start:end]` separated by commas at bracket depth 0 (quotes respected).
    Native when the extension is built."""
    if _native_split_top is not None and 0 <= start and end <= len(s):
        return _native_split_top(s, start, end)
    return split_top_py(s, start, end)


def split_top_py(s: str, start: int, end: int) -> list[tuple[int, int]]:
    """`split_top` in Python: the reference for the native one, and the fallback."""
    spans = []
    depth = 0
    item = start
    for p, c in _tokens(s, _BRACKETS_COMMA, start, end):
        if c in _OPEN:
            depth += 1
        elif c == ",":
            if depth == 0:
                spans.append((item, p))
                item = p + 1
        elif not (c == ">" and p > 0 and s[p - 1] == "-"):
            depth -= 1
    if item < end or spans:
        spans.append((item, end))
    return spans


def split_group(s: str, pos: int) -> tuple[int, list[tuple[int, int]]]:
    """The bracket group opening at `s[pos]`: the index after its closing bracket
    (`match_end`) and the spans between its top-level commas (`split_top` of its inside);
    (-1, []) when it does not close, or `s[pos]` opens no group. Native (one pass) when the
    extension is built."""
    if _native_split_group is not None:
        return _native_split_group(s, pos)
    return split_group_py(s, pos)


def split_group_py(s: str, pos: int) -> tuple[int, list[tuple[int, int]]]:
    """`split_group` in Python: the reference for the native one, and the fallback."""
    if not (0 <= pos < len(s)) or s[pos] not in _OPEN:
        return -1, []
    end = match_end_py(s, pos)
    return (end, split_top_py(s, pos + 1, end - 1)) if end >= 0 else (-1, [])


def string_end(s: str, pos: int) -> int:
    """Index of the closing quote of the string whose content starts at `pos`; -1 if none."""
    n = len(s)
    q = _closing_quote(s, pos, n)
    return q if q < n else -1


# string escapes are the notations' (`notation/_cursor.py`); the scanner decodes with them
unescape = _unescape


# -- types ---------------------------------------------------------------------------------

_TENSOR = re.compile(r"tensor<((?:(?:\d+|\?)x)*)([a-zA-Z!][\w.]*)")


def tensor_shape(t: str) -> tuple[tuple[int, ...] | None, str | None] | None:
    """(shape, dtype) of the first `tensor<...>` in `t`; shape None when dynamic; None if no
    tensor type."""
    m = _TENSOR.search(t)
    if m is None:
        return None
    dims = m.group(1).split("x")[:-1]
    if any(d == "?" for d in dims):
        return None, m.group(2)
    return tuple(int(d) for d in dims), m.group(2)


def key_end(line: str, key: str, start: int) -> int:
    """Where the value of the first `key` (`replica_groups=`) at a word boundary at or after
    `start` begins; -1 if none. Found with `str.find`: a regex starting at a word boundary
    has no literal prefix to search for, and the engine tries it at every position of a
    long line."""
    p = line.find(key, start)
    while p >= 0:
        if p == 0 or not (line[p - 1].isalnum() or line[p - 1] == "_"):
            return p + len(key)
        p = line.find(key, p + 1)
    return -1


def keyed(line: str, key: str, value: re.Pattern, start: int) -> re.Match | None:
    """The `value` match after the first `key` at a word boundary at or after `start` whose
    value matches (what the regex `\bkey(value)` searched from `start` finds), else None."""
    at = key_end(line, key, start)
    while at >= 0:
        m = value.match(line, at)
        if m is not None:
            return m
        at = key_end(line, key, at - len(key) + 1)
    return None


def tensor_type(t: str) -> tuple[tuple[int, ...] | None, str | None]:
    """`tensor_shape(t)`, (None, None) when `t` holds no tensor type."""
    r = tensor_shape(t) if t else None
    return (None, None) if r is None else r


_HLO_ARRAY = re.compile(r"([a-z][a-z0-9]*)\[([^\]]*)\]")


def hlo_shapes(t: str) -> list[tuple[tuple[int, ...] | None, str]]:
    """Leaf array shapes of an HLO shape (`f32[4,8]{1,0}` or a tuple `(f32[2], s32[])`)."""
    out = []
    for m in _HLO_ARRAY.finditer(t):
        dims_text = m.group(2).strip()
        if not dims_text:
            out.append(((), m.group(1)))
            continue
        dims: list[int] | None = []
        for d in dims_text.split(","):
            d = d.strip()
            if d.isascii() and d.isdigit():  # int() refuses '²'
                dims.append(int(d))  # type: ignore[union-attr]
            else:  # `<=8` bounded dynamic, `?`
                dims = None
                break
        out.append((tuple(dims) if dims is not None else None, m.group(1)))
    return out


def op_result_types(line: str, start: int) -> list[str]:
    """The result types of an MLIR op line: after the last top-level ` : ` (and `->`)."""
    body = strip_loc(line)
    if _native_top_colon is not None:
        colon, arrow = _native_top_colon(body, start)
    else:
        colon, arrow = _top_colon(body, start)
    return _types_after(body, colon, arrow)


def op_operands(line: str, start: int) -> list[tuple[str, str]]:
    """(name, type) of each operand of an MLIR op line whose op name starts at `start`:
    names from the parenthesised list after the op name (and `@callee`), types from the
    function type after the last top-level ` : ` (`(t1, t2) -> ...`); a type is "" where
    the line gives none."""
    body = strip_loc(line)
    end, spans = split_group(body, body.find("(", start))
    if end < 0:
        return []
    names = [body[a:b].strip() for a, b in spans]
    names = [n for n in names if n]
    if _native_top_colon is not None:
        colon, arrow = _native_top_colon(body, start)
    else:
        colon, arrow = _top_colon(body, start)
    types: list[str] = []
    if colon >= 0 and arrow >= 0:
        ins = body[colon : arrow - 2].strip()
        if ins.startswith("(") and match_end(ins, 0) == len(ins):
            ins = ins[1:-1]
        types = [ins[a:b].strip() for a, b in split_top(ins, 0, len(ins))]
    return [(n, types[k] if k < len(types) else "") for k, n in enumerate(names)]


def _top_colon(body: str, start: int) -> tuple[int, int]:
    """Where the last top-level ` : ` of an op line ends, and the `->` after it (-1 when
    none): the reference for the native `top_colon`, and the fallback."""
    depth = 0
    colon = -1
    arrow = -1
    for p, c in _tokens(body, _BRACKETS_COLON, start, len(body)):
        if c in _OPEN:
            depth += 1
        elif c == ":":
            if depth == 0 and body[p - 1 : p + 2] == " : ":
                colon = p + 1
                arrow = -1
        elif c == ">" and body[p - 1] == "-":
            if depth == 0 and colon >= 0:
                arrow = p + 1
        else:
            depth -= 1
    return colon, arrow


def _types_after(body: str, colon: int, arrow: int) -> list[str]:
    if colon < 0:
        return []
    rest = body[arrow if arrow >= 0 else colon :].strip()
    at = rest.find(" attributes ")
    if at >= 0:
        rest = rest[:at]
    if rest.startswith("(") and match_end(rest, 0) == len(rest):
        rest = rest[1:-1]
    return [rest[a:b].strip() for a, b in split_top(rest, 0, len(rest))]


# -- an MLIR op line's parts ---------------------------------------------------------------

#: an op's results (`%0 = `, `%0:2 = `) and its name (`stablehlo.add`, `"stablehlo.add"`)
RESULT = re.compile(r"^\s*(%[\w.$\-]+)(?::(\d+))?\s*=\s*")
OP_NAME = re.compile(r'(?:"([\w.]+)"|([a-z_][\w]*\.[\w.]+))')
#: where an annotation token's `sharding` is, and what follows it (`annotations_in`)
_SHARDING_TOKEN = re.compile(r'sharding(?:_per_value<|<| = "|=<)')


def _word(c: str) -> bool:
    return c.isalnum() or c == "_"


def annotations_in(line: str, start: int, end: int) -> list[tuple[int, int, str]]:
    """`(start, end, text)` of each annotation token in `line[start:end]`, left to right:
    `#sdy.sharding_per_value<`, `#sdy.sharding<`, `mhlo.sharding = "`,
    `xla.sdy.sharding = "`, `sharding=<` and `out_sharding=<` (the last four at a word
    boundary). Found from the literal `sharding` every token contains: one regex with
    that alternation makes the engine try every position of a long op line (the tests
    check this against it)."""
    out = []
    for m in _SHARDING_TOKEN.finditer(line, start, end):
        p, e = m.span()
        suffix = line[p + 8 : e]
        if suffix in ("<", "_per_value<"):
            if p - 5 >= start and line.startswith("#sdy.", p - 5):
                out.append((p - 5, e, line[p - 5 : e]))
        elif suffix == ' = "':
            for prefix in ("mhlo.", "xla.sdy."):
                q = p - len(prefix)
                if q >= start and line.startswith(prefix, q) and (q == 0 or not _word(line[q - 1])):
                    out.append((q, e, line[q:e]))
                    break
        else:  # `=<`: `sharding=<` or `out_sharding=<`, each at a word boundary
            q = p - 4
            if q >= start and line.startswith("out_", q) and (q == 0 or not _word(line[q - 1])):
                out.append((q, e, line[q:e]))
            elif p == 0 or not _word(line[p - 1]):
                out.append((p, e, line[p:e]))
    return out


# -- an HLO instruction's parts -------------------------------------------------------------

#: an instruction's name (`%dot.3 = `, `ROOT %t = `) and its opcode with the `(` after it
HLO_INSTR = re.compile(r"^\s*(?:ROOT\s+)?(%?[\w.\-]+)\s*=\s*")
HLO_OPCODE = re.compile(r"\s*([\w\-]+)\(")


def hlo_sharding_braces(line: str, after: int) -> list[int]:
    """Where the `{` of each `sharding={` at or after `after` is (not preceded by a word
    character or `.`), by `str.find`: a regex that starts with a lookbehind tries every
    position of the line (the tests check this against one)."""
    out = []
    p = line.find("sharding={", after)
    while p >= 0:
        if p == 0 or not (line[p - 1].isalnum() or line[p - 1] in "_."):
            out.append(p + len("sharding="))
        p = line.find("sharding={", p + 1)
    return out


def strip_loc(line: str) -> str:
    """The line without a trailing ` loc(...)`."""
    s = line.rstrip()
    i = s.rfind(" loc(")
    if i >= 0 and s.endswith(")") and match_end(s, i + 4) == len(s):
        return s[:i]
    return s
