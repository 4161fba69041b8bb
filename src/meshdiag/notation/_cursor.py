"""A tiny character cursor shared by the hand-written notation parsers.

Every failure is a `ParseError` at the cursor position, so callers never see a bare exception.
"""

from __future__ import annotations

import re

from meshdiag.errors import ParseError
from meshdiag.limits import check_annotation_length

_WS = " \t\r\n"
#: characters MLIR accepts in bare identifiers / symbol names
_IDENT_START = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
_IDENT_REST = _IDENT_START + "0123456789$."
#: the largest integer a size / id may have (int64, like MLIR and XLA)
INT64_MAX = (1 << 63) - 1


class Cursor:
    def __init__(self, text: str, pos: int = 0) -> None:
        check_annotation_length(text)
        self.text = text
        self.pos = pos

    # -- primitives ----------------------------------------------------------------------
    def error(self, expected: str, pos: int | None = None) -> ParseError:
        p = self.pos if pos is None else pos
        found = repr(self.text[p]) if p < len(self.text) else "end of text"
        return ParseError(expected, self.text, p, found=found)

    def ws(self) -> Cursor:
        t, p = self.text, self.pos
        while p < len(t) and t[p] in _WS:
            p += 1
        self.pos = p
        return self

    def at_end(self) -> bool:
        return self.ws().pos >= len(self.text)

    def peek(self, n: int = 1) -> str:
        self.ws()
        return self.text[self.pos : self.pos + n]

    def startswith(self, s: str) -> bool:
        self.ws()
        return self.text.startswith(s, self.pos)

    def accept(self, s: str) -> bool:
        if self.startswith(s):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str, what: str | None = None) -> None:
        if not self.accept(s):
            raise self.error(what or f"'{s}'")

    def accept_word(self, word: str) -> bool:
        """`word` as a whole identifier (not a prefix of a longer one)."""
        self.ws()
        end = self.pos + len(word)
        if self.text.startswith(word, self.pos) and (
            end >= len(self.text) or self.text[end] not in _IDENT_REST
        ):
            self.pos = end
            return True
        return False

    def ident(self, what: str = "an identifier") -> str:
        self.ws()
        t, p = self.text, self.pos
        if p >= len(t) or t[p] not in _IDENT_START:
            raise self.error(what)
        q = p + 1
        while q < len(t) and t[q] in _IDENT_REST:
            q += 1
        self.pos = q
        return t[p:q]

    def integer(self, what: str = "an integer", *, signed: bool = True) -> int:
        self.ws()
        t, p = self.text, self.pos
        q = p
        if signed and q < len(t) and t[q] == "-":
            q += 1
        start_digits = q
        while q < len(t) and "0" <= t[q] <= "9":  # ASCII only: int() refuses '²'
            q += 1
        if q == start_digits:
            raise self.error(what)
        if q - start_digits > 19:
            raise self.error(f"{what} that fits in 64 bits", p)
        value = int(t[p:q])
        if abs(value) > INT64_MAX:
            raise self.error(f"{what} that fits in 64 bits", p)
        self.pos = q
        return value

    def mlir_string(self) -> str:
        """An MLIR string literal `"..."` (escapes `\\"`, `\\\\`, `\\n`, `\\t`, `\\XX` hex)."""
        return self._quoted('"', hex_escapes=True)

    def quoted(self, quotes: str = "'\"") -> str:
        """A single- or double-quoted string with backslash escapes (XLA's lexer)."""
        self.ws()
        q = self.text[self.pos : self.pos + 1]
        if not q or q not in quotes:
            raise self.error("a quoted string")
        return self._quoted(q, hex_escapes=False)

    def _quoted(self, quote: str, *, hex_escapes: bool) -> str:
        self.ws()
        t, start = self.text, self.pos
        if not t.startswith(quote, start):
            raise self.error("string" if quote == '"' else "a quoted string")
        out = bytearray()  # `\XX` escapes are bytes of UTF-8 text
        p = start + 1
        simple = {'"': '"', "'": "'", "\\": "\\", "n": "\n", "t": "\t"}
        while True:
            if p >= len(t) or t[p] == "\n":
                raise self.error("the end of the string (closing quote)", start)
            c = t[p]
            if c == quote:
                self.pos = p + 1
                try:
                    return out.decode("utf-8")
                except UnicodeDecodeError:
                    raise self.error("a string of valid UTF-8", start) from None
            if c == "\\":
                nxt = t[p + 1 : p + 2]
                hx = t[p + 1 : p + 3]
                if hex_escapes and len(hx) == 2 and all(h in "0123456789abcdefABCDEF" for h in hx):
                    out.append(int(hx, 16))
                    p += 3
                    continue
                if nxt in simple:
                    out += simple[nxt].encode()
                    p += 2
                    continue
                raise self.error("a valid escape sequence", p)
            out += c.encode("utf-8", "surrogatepass")
            p += 1


def matching_end(text: str, pos: int, open_: str, close: str) -> int:
    """Index after the bracket matching `text[pos] == open_`, skipping quoted strings."""
    if not text.startswith(open_, pos):
        raise ParseError(f"'{open_}'", text, pos)
    depth = 0
    p = pos
    n = len(text)
    while p < n:
        c = text[p]
        if c in "\"'":
            q = p + 1
            while q < n and text[q] != c:
                q += 2 if text[q] == "\\" else 1
            if q >= n:
                raise ParseError("the end of the string (closing quote)", text, p)
            p = q + 1
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return p + 1
        p += 1
    raise ParseError(f"'{close}' to match '{open_}'", text, pos, found="end of text")


_ESC = re.compile(r"\\([0-9A-Fa-f]{2}|.)")
_SIMPLE = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'"}


def unescape(s: str) -> str:
    """Decode MLIR (`\\22`, `\\\\`, `\\NN` hex) and HLO (`\\"`) string escapes."""
    if "\\" not in s:
        return s

    def rep(m: re.Match) -> str:
        g = m.group(1)
        if len(g) == 2:
            return chr(int(g, 16))
        return _SIMPLE.get(g, g)

    return _ESC.sub(rep, s)
