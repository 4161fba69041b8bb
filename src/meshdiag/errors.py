"""Errors meshdiag reports to users.

Every error a user can cause is a `MeshdiagError`: the CLI prints its message as one line on
stderr and exits 2. Parsers raise `ParseError`, which always knows where in the text it stopped.
"""

from __future__ import annotations


class MeshdiagError(Exception):
    """A problem with the user's input or request (not a bug in meshdiag)."""


class LimitError(MeshdiagError):
    """An input exceeds a configured resource limit; refused before any work is done."""


#: control characters shown as their Unicode control pictures (one character each, so the
#: snippet keeps its columns): an error message stays one line whatever the input holds
_VISIBLE = {c: 0x2400 + c for c in range(32)} | {0x7F: 0x2421}


def _snippet(text: str, pos: int, width: int = 40) -> str:
    """The start of `text` up to a little past `pos`, elided, for error messages."""
    end = min(len(text), max(pos + 8, 16), width)
    if pos >= width:  # show a window around the position instead of the start
        start = max(0, pos - width // 2)
        end = min(len(text), pos + width // 2)
        return ("..." if start else "") + text[start:end] + ("..." if end < len(text) else "")
    return text[:end] + ("..." if end < len(text) else "")


class ParseError(MeshdiagError):
    """Text that does not follow a notation's grammar.

    `pos` is the 0-based character offset in `text` where parsing failed; `column` is 1-based.
    `line`/`path` are filled in by the IR scanner when the text came from a file.
    """

    def __init__(self, expected: str, text: str, pos: int, *, found: str | None = None):
        self.expected = expected
        self.text = text
        self.pos = max(0, min(pos, len(text)))
        self.found = found
        self.path: str | None = None
        self.line: int | None = None
        super().__init__(self._format())

    @property
    def column(self) -> int:
        return self.pos + 1

    def _format(self) -> str:
        what = f"expected {self.expected}"
        if self.found is not None:
            what += f", found {self.found}"
        msg = f"{what} at column {self.column} in '{_snippet(self.text, self.pos)}'"
        return msg.translate(_VISIBLE)

    def __str__(self) -> str:  # message may be re-located after construction
        return self._format()
