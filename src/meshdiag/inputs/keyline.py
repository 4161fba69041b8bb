"""The line a key path sits on in TOML or JSON text.

`tomllib` and `json` give no positions, so the text is read again: line by line for TOML
(table headers, dotted keys, inline tables), and for JSON along the path only, skipping the
values beside it with the C decoder. The answer is the line
of the deepest part of the path found: `("mesh", "axes", "x")` in an inline table
`axes = {x = 0}` is the `axes` line. No TOML parser; for JSON only `json`'s decoder.
"""

from __future__ import annotations

import json
import re

KeyPath = tuple[str | int, ...]

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_WS = " \t"


def _key_parts(text: str, pos: int) -> tuple[list[str], int] | None:
    """A (dotted) TOML key starting at `pos`: its parts and where it ends; None if none."""
    parts: list[str] = []
    n = len(text)
    while True:
        while pos < n and text[pos] in _WS:
            pos += 1
        if pos >= n:
            return None
        c = text[pos]
        if c == '"':
            end = pos + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            if end >= n:
                return None
            try:
                parts.append(json.loads(text[pos : end + 1]))
            except ValueError:
                parts.append(text[pos + 1 : end])
            pos = end + 1
        elif c == "'":
            end = text.find("'", pos + 1)
            if end < 0:
                return None
            parts.append(text[pos + 1 : end])
            pos = end + 1
        else:
            m = _BARE.match(text, pos)
            if m is None:
                return None
            parts.append(m.group())
            pos = m.end()
        while pos < n and text[pos] in _WS:
            pos += 1
        if pos < n and text[pos] == ".":
            pos += 1
            continue
        return parts, pos


def _common(a: KeyPath, b: list[str] | tuple) -> int:
    k = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        k += 1
    return k


def toml_key_line(text: str, path: KeyPath) -> int | None:
    """1-based line of `path` (or of its deepest part written in the file) in TOML `text`."""
    path = tuple(path)
    table: list[str] = []
    best_line, best_depth = None, 0
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.lstrip(_WS)
        if not s or s[0] == "#":
            continue
        if s[0] == "[":  # a table header: [a.b] or [[a.b]]
            double = s.startswith("[[")
            got = _key_parts(s, 2 if double else 1)
            if got is None:
                continue
            table = got[0]
            full = table
        else:
            got = _key_parts(s, 0)
            if got is None or got[1] >= len(s) or s[got[1]] != "=":
                continue
            full = table + got[0]
        depth = _common(path, full)
        if depth == len(full) and depth > best_depth:
            # the whole key is on the path: deeper keys may sit in its inline value
            best_line, best_depth = lineno, depth
            if depth == len(path):
                break
            rest = s[got[1] :]
            for part in path[depth:]:  # keys of an inline table on the same line
                if not isinstance(part, str) or not re.search(
                    r"[{,]\s*(?:" + re.escape(part) + r"|\"" + re.escape(part) + r"\")\s*=", rest
                ):
                    break
                best_depth += 1
    return best_line


_DECODER = json.JSONDecoder()
_JSON_WS = " \t\r\n"


def _ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in _JSON_WS:
        i += 1
    return i


def _member(text: str, i: int, part: str | int) -> int | None:
    """Where the value of key/index `part` starts in the object/array at `i` (None: absent).
    Values off the path are skipped whole by the C decoder; a repeated key's last copy wins,
    as in `json.loads`."""
    if text[i] == "{" and isinstance(part, str):
        i, hit = _ws(text, i + 1), None
        while i < len(text) and text[i] == '"':
            key, i = _DECODER.raw_decode(text, i)
            i = _ws(text, _ws(text, i) + 1)  # past ':'
            if key == part:
                hit = i
            _, i = _DECODER.raw_decode(text, i)
            i = _ws(text, i)
            if i < len(text) and text[i] == ",":
                i = _ws(text, i + 1)
        return hit
    if text[i] == "[" and isinstance(part, int):
        i = _ws(text, i + 1)
        for _ in range(part):
            if i >= len(text) or text[i] == "]":
                return None
            _, i = _DECODER.raw_decode(text, i)
            i = _ws(text, i)
            if i < len(text) and text[i] == ",":
                i = _ws(text, i + 1)
        return i if i < len(text) and text[i] != "]" else None
    return None


def json_key_line(text: str, path: KeyPath) -> int | None:
    """1-based line of `path`'s value (or of the deepest part found) in JSON `text`."""
    i, found = _ws(text, 0), None
    try:
        for part in path:
            if i >= len(text):
                break
            i = _member(text, i, part)
            if i is None:
                break
            found = i
    except ValueError:  # not JSON after all: what was found so far
        pass
    return None if found is None else text.count("\n", 0, found) + 1


def key_line(text: str, path: KeyPath, *, is_json: bool) -> int | None:
    return json_key_line(text, path) if is_json else toml_key_line(text, path)
