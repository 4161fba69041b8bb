"""Stream a dump and yield only the lines that may matter, with their 1-based numbers.

The file is read in blocks of `BLOCK` bytes. Candidate lines are found over the whole block
with `bytes.find` (C substring search, far faster than one alternation regex over every
byte): one loop over the frequent word (`shard`: sharding / reshard), one `find` per rare
word. Lines are yielded as raw bytes (the scanner replays lines it has seen without decoding
them). Memory stays bounded by the block size plus the longest line allowed
(`MAX_ANNOTATION_CHARS * 4` bytes): a longer line is reported and skipped in bounded chunks,
never held whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import BinaryIO

from .. import limits

BLOCK = 1 << 20

#: lines worth a closer look (annotations, headers, diagnostics, region ends of manual
#: bodies) contain one of these words. `shard` stands for `sharding` and `reshard`, which are
#: checked at each hit; the rest are rare in dumps
_FREQUENT = b"shard"
_RARE = (
    b"sdy.mesh",
    b"IR Dump",
    b"HloModule",
    b"module",
    b"ENTRY",
    b"error:",
    b"warning:",
    b"// -----",
    b"} : (",
)

#: callback for reading problems: (message, line, column)
Problem = Callable[[str, int, int], None]


def max_line_bytes() -> int:
    return limits.MAX_ANNOTATION_CHARS * 4


def _decode(raw: bytes, lineno: int, problem: Problem) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        col = len(raw[: e.start].decode("utf-8", errors="replace")) + 1
        problem(
            f"invalid UTF-8 (byte 0x{raw[e.start]:02x}); decoded with replacements", lineno, col
        )
        return raw.decode("utf-8", errors="replace")


def _check_utf8(block: bytes, first_line: int, interesting: set[int], problem: Problem) -> None:
    """Report invalid UTF-8 on lines that are not decoded anyway (one finding per line)."""
    if block.isascii():
        return
    pos = 0
    while True:
        try:
            block[pos:].decode("utf-8")
            return
        except UnicodeDecodeError as e:
            bad = pos + e.start
        start = block.rfind(b"\n", 0, bad) + 1
        end = block.find(b"\n", bad)
        end = len(block) if end < 0 else end
        if start not in interesting:  # interesting lines report their own decode errors
            lineno = first_line + block.count(b"\n", 0, start)
            _decode(block[start:end], lineno, problem)
        pos = end + 1
        if pos >= len(block):
            return


def decode_line(raw: bytes, lineno: int, problem: Problem) -> str:
    """A candidate line as text; invalid UTF-8 is reported and replaced."""
    return raw.decode("utf-8") if raw.isascii() else _decode(raw, lineno, problem)


def candidate_lines(
    raw: BinaryIO, problem: Problem, *, prefix: bytes = b""
) -> Iterator[tuple[int, bytes]]:
    """(line number, raw line without its newline or `\\r`) for each candidate line.

    `prefix` is data already read from `raw` (the binary sniff).

    Invalid UTF-8 on lines that are not candidates is reported here; candidates report
    their own when decoded (`decode_line`).
    """
    limit = max_line_bytes()
    lineno = 1  # number of the first line in `tail`
    tail = prefix
    while True:
        chunk = raw.read(BLOCK)
        if not chunk:
            if tail:  # a last line without a newline
                yield from _block_lines(tail + b"\n", lineno, problem)
            return
        buf = tail + chunk if tail else chunk
        last = buf.rfind(b"\n")
        if last >= 0:
            whole = buf[: last + 1]
            yield from _block_lines(whole, lineno, problem)
            lineno += whole.count(b"\n")
            tail = buf[last + 1 :]
        else:
            tail = buf
        if len(tail) > limit:  # the unfinished line is already too long: drop it
            lineno, tail = _skip_long_line(raw, lineno, limit, problem)


def _skip_long_line(raw: BinaryIO, lineno: int, limit: int, problem: Problem) -> tuple[int, bytes]:
    """Drop the rest of an over-long line in bounded chunks.

    Returns the next line's number and the bytes read after the line's end.
    """
    problem(
        f"line {lineno} is longer than {limit} characters; skipped "
        f"(raise MESHDIAG_MAX_ANNOTATION_CHARS to read it)",
        lineno,
        1,
    )
    while True:
        chunk = raw.read(BLOCK)
        if not chunk:
            return lineno + 1, b""
        nl = chunk.find(b"\n")
        if nl >= 0:
            return lineno + 1, chunk[nl + 1 :]


def candidate_starts(buf: bytes) -> list[int]:
    """Sorted offsets of the lines of `buf` (whole lines) with `sharding`, `reshard` or a word
    of `_RARE`."""
    find = buf.find
    starts: list[int] = []
    add = starts.append
    p = find(_FREQUENT)
    while p >= 0:
        if buf.startswith(b"sharding", p) or (p >= 2 and buf.startswith(b"reshard", p - 2)):
            add(buf.rfind(b"\n", 0, p) + 1)
            le = find(b"\n", p)
            if le < 0:
                break
            p = find(_FREQUENT, le + 1)
        else:
            p = find(_FREQUENT, p + 1)
    rare: set[int] = set()
    for word in _RARE:
        p = find(word)
        while p >= 0:
            ls = buf.rfind(b"\n", 0, p) + 1
            rare.add(ls)
            le = find(b"\n", p)
            if le < 0:
                break
            p = find(word, le + 1)
    if rare:
        rare.update(starts)
        return sorted(rare)
    return starts


def _block_lines(buf: bytes, first_line: int, problem: Problem) -> Iterator[tuple[int, bytes]]:
    """Candidate lines of a block made of whole lines (ends with a newline)."""
    starts = candidate_starts(buf)
    find = buf.find
    count = buf.count
    lineno = first_line
    last = 0
    for ls in starts:
        lineno += count(b"\n", last, ls)
        last = ls
        le = find(b"\n", ls)
        raw = buf[ls:le]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        yield lineno, raw
    if not buf.isascii():
        _check_utf8(buf, first_line, set(starts), problem)
