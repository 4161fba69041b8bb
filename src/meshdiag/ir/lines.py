"""Blocks of a dump and the candidate lines in them: the lines that may matter, with
their 1-based numbers.

`read_blocks` reads a stream in blocks of `BLOCK` bytes cut at line ends. Memory stays
bounded by the block size plus the longest line allowed (`MAX_ANNOTATION_CHARS * 4` bytes):
a longer line is reported and skipped in bounded chunks, never held whole.

A candidate line contains `sharding`, `reshard` or one of the words that mark structure
(`words.py`). `scan_known` walks a block's candidates in order, appending the ones a dict
already knows and stopping at the others; it is native (`_fastscan.c`, one pass over the
bytes) when built, else `scan_known_py`, its reference, built on `candidate_spans`.
`scan_plain` (twin `scan_plain_py`) also appends, up to a budget, the plain constraint and
op lines whose sharding has a prototype value (`fields.plain_value_py`).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Generator
from typing import BinaryIO

from meshdiag import limits
from meshdiag.ir.fast import native, why_not_native
from meshdiag.ir.fast.words import FREQUENT, RARE
from meshdiag.ir.fields import plain_value_py
from meshdiag.ir.prints import printed

BLOCK = 1 << 20

#: lines worth a closer look (annotations, headers, diagnostics, region ends of manual
#: bodies) contain one of the words in `words.py`. `shard` stands for its frequent ones
#: (`sharding`, `reshard`), which are checked at each hit; the rest are rare in dumps
_FREQUENT = b"shard"
#: each frequent word and where `shard` is in it
_FREQUENT_AT = tuple((w.encode(), w.index("shard")) for w in FREQUENT)
_RARE = tuple(w.encode() for w in RARE)

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


def check_utf8(block: bytes, first_line: int, problem: Problem) -> None:
    """Report invalid UTF-8 on the lines of a block (whole lines from `first_line`) that
    are not candidates: candidates report their own when decoded."""
    _check_utf8(block, first_line, {ls for ls, _ in candidate_spans(block)}, problem)


def decode_line(raw: bytes, lineno: int, problem: Problem) -> str:
    """A candidate line as text; invalid UTF-8 is reported and replaced."""
    return raw.decode("utf-8") if raw.isascii() else _decode(raw, lineno, problem)


class Bounded:
    """The next `left` bytes of an unbuffered binary file, as a stream (a part of a big
    file, `ir.parts`)."""

    def __init__(self, f: BinaryIO, left: int) -> None:
        self._f = f
        self._left = left

    def read(self, n: int = -1) -> bytes:
        want = self._left if n < 0 else min(n, self._left)
        data = self._f.read(want) if want > 0 else b""
        self._left -= len(data)
        return data


def read_blocks(
    raw: BinaryIO, problem: Problem, *, prefix: bytes = b"", first_line: int = 1
) -> Generator[tuple[bytes, int, int, int], int | None, None]:
    """`raw` as blocks of whole lines: (buffer, start, end, number of the line at `start`),
    the lines being `buffer[start:end]` (`end` is after a newline; one is added after a
    last line without it).

    Each buffer is what one read gave, not a copy of it: the lines it ends in the middle of
    come first in a small block of their own, joined with the rest of that line read
    before; the block of the rest of the read stops after its last newline (copying each
    read into a block of whole lines was a third of reading the 252 MB bench file).

    `prefix` is data already read from `raw` (the binary sniff); `first_line` is the
    number of its first line (a part of a file, `ir.parts`). Invalid UTF-8 on lines that
    are not candidates is reported here, after the consumer handled all the blocks of a read
    (findings keep the order of the lines: the candidates report their own when decoded,
    `decode_line`, then these).

    A consumer that counted the block's lines anyway (`scan_known` does) may `send` the
    number of the line after the block instead of calling `next`: it is not counted twice.
    """
    limit = max_line_bytes()
    lineno = first_line  # number of the first line in `tail`
    tail = prefix  # bytes read and not yet in a block: whole lines, then part of one
    count = bytes.count
    while True:
        chunk = raw.read(BLOCK)
        at_end = not chunk
        blocks: list[tuple[bytes, int, int]] = []  # this read's (buffer, start, end)
        if at_end:  # a last line without a newline is still a line
            if tail:
                whole = tail if tail.endswith(b"\n") else tail + b"\n"
                blocks.append((whole, 0, len(whole)))
            tail = b""
        else:
            first = chunk.find(b"\n") + 1
            if not first:  # no line ends in the chunk: the tail grows
                tail += chunk
                cut = tail.rfind(b"\n") + 1  # (a prefix may hold whole lines)
                if cut:
                    blocks.append((tail, 0, cut))
                    tail = tail[cut:]
            else:
                if tail:  # the lines ending in the chunk's first line, joined
                    seam = tail + chunk[:first]
                    blocks.append((seam, 0, len(seam)))
                cut = chunk.rfind(b"\n") + 1
                if cut > first or not tail:
                    blocks.append((chunk, first if tail else 0, cut))
                tail = chunk[cut:]
        firsts = []  # each block's first line, known once the one before it was read
        for buf, start, end in blocks:
            firsts.append(lineno)
            after = yield buf, start, end, lineno
            lineno = after if after is not None else lineno + count(buf, b"\n", start, end)
        for (buf, start, end), first_line_of in zip(blocks, firsts, strict=True):
            if not all_ascii(buf, start, end):
                check_utf8(buf[start:end], first_line_of, problem)
        if at_end:
            return
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


def candidate_spans(buf: bytes) -> list[tuple[int, int]]:
    """Sorted (start, end) offsets of the lines of `buf` (whole lines, so each ends with a
    newline at `end`) with a word of `words.WORDS`."""
    find = buf.find
    rfind = buf.rfind
    startswith = buf.startswith
    n = len(buf)
    spans: list[tuple[int, int]] = []
    add = spans.append
    p = find(_FREQUENT)
    while p >= 0:
        if any(p >= at and startswith(w, p - at) for w, at in _FREQUENT_AT):
            le = find(b"\n", p)
            if le < 0:
                le = n
            add((rfind(b"\n", 0, p) + 1, le))
            p = find(_FREQUENT, le + 1)
        else:
            p = find(_FREQUENT, p + 1)
    rare: dict[int, int] = {}
    for word in _RARE:
        p = find(word)
        while p >= 0:
            le = find(b"\n", p)
            if le < 0:
                le = n
            rare[rfind(b"\n", 0, p) + 1] = le
            p = find(word, le + 1)
    if rare:
        rare.update(spans)
        return sorted(rare.items())
    return spans


_UNKNOWN = object()
#: candidate spans of the block `scan_known_py` is walking: (block, span starts, spans)
_walk: tuple[bytes, list[int], list[tuple[int, int]]] = (b"", [], [])


def scan_known_py(
    buf: bytes,
    pos: int,
    lineno: int,
    known: dict,
    lines_out: list,
    items_out: list,
    prints: bytearray | None = None,
    end: int | None = None,
) -> tuple[int, int, int, int]:
    """Walk the candidate lines of `buf` (a block of whole lines; with `end`, those of
    `buf[:end]`, `end` being after a newline) from offset `pos`, a line start whose line
    number is `lineno`.

    A candidate whose bytes (without the newline and a trailing `\\r`) are a key of `known`
    is recorded (its number appended to `lines_out`, `known[line]` to `items_out`; nothing
    when `known[line]` is None, a line known to yield nothing) and the walk goes on. The
    first candidate that is not a key stops the walk: the result is
    `(start, end, number, next)` — its span in `buf`, its line number and the offset of the
    line after it. At the end of `buf` the result is `(-1, -1, number of the line after the
    block, end)` (`end` defaults to `len(buf)`).

    `prints`: the filter of `known`'s lines (`ir.prints`), or None: a line whose bit is
    clear is not looked up.

    The native scanner (`_fastscan.scan_known`) does exactly this in one pass over the
    bytes; this is its reference and the fallback where it is not built.
    """
    start, stop, lineno, after, _ = scan_plain_py(
        buf, pos, lineno, known, lines_out, items_out, {}, 0, prints, end
    )
    return start, stop, lineno, after


def scan_plain_py(
    buf: bytes,
    pos: int,
    lineno: int,
    known: dict,
    lines_out: list,
    items_out: list,
    protos: dict,
    budget: int,
    prints: bytearray | None = None,
    end: int | None = None,
) -> tuple[int, int, int, int, int]:
    """`scan_known_py`, but a candidate that is not known and is a plain constraint or op
    line whose sharding has a prototype in `protos` (`fields.plain_value_py`) is appended
    as the value made from it, up to `budget` of them, instead of stopping the walk. The
    result has a fifth item: how many were. The reference for the native `scan_plain`.

    `prints`: the filter of `known`'s lines (`ir.prints`, `ScanCache.lines`) or None: a
    line whose bit is clear is not looked up."""
    global _walk
    if _walk[0] is not buf:  # once per block: every call on it bisects into the same spans
        spans = candidate_spans(buf)
        _walk = (buf, [s for s, _ in spans], spans)
    _, starts, spans = _walk
    stop = len(buf) if end is None else end
    count = buf.count
    get = known.get
    last = pos
    read = 0
    # (`stop` is after a newline: a candidate before it ends before it)
    for i in range(bisect_left(starts, pos), bisect_left(starts, stop)):
        ls, le = spans[i]
        lineno += count(b"\n", last, ls)
        last = ls
        cut = le - 1 if le > ls and buf[le - 1] == 13 else le  # 13: `\r`
        line = buf[ls:cut]
        item = _UNKNOWN
        if known and (prints is None or printed(prints, line)):
            item = get(line, _UNKNOWN)
        if item is _UNKNOWN:
            if read < budget and plain_line_py(line, lineno, protos, lines_out, items_out):
                read += 1
                continue
            return ls, cut, lineno, le + 1, read
        if item is None:  # known to yield nothing
            continue
        lines_out.append(lineno)
        items_out.append(item)
    return -1, -1, lineno + count(b"\n", last, stop), stop, read


def plain_line_py(raw: bytes, lineno: int, protos: dict, lines_out: list, items_out: list) -> bool:
    """The plain constraint or op line `raw` (`fields.plain_value_py`) appended as the value
    made from its sharding's prototype in `protos`, as `scan_plain_py` appends it; False,
    nothing appended, for any other line. The reference for the native `plain_line`."""
    # (latin-1 decodes any bytes; a line that is not ASCII is refused in there)
    v = plain_value_py(raw.decode("latin-1"), lineno, protos) if protos else None
    if v is None:
        return False
    lines_out.append(lineno)
    items_out.append(v)
    return True


#: the native walker when it is built and not switched off (`ir/fast/`), else the reference
scan_known: Callable[..., tuple[int, int, int, int]] = native("scan_known") or scan_known_py
scan_plain: Callable[..., tuple[int, int, int, int, int]] = native("scan_plain") or scan_plain_py
plain_line: Callable[[bytes, int, dict, list, list], bool] = native("plain_line") or plain_line_py


def all_ascii_py(buf: bytes, start: int, end: int) -> bool:
    """Whether buf[start:end] is all ASCII: the reference for the native `all_ascii`
    (64 bytes a step; `bytes.isascii` was 2% of a big file's scan)."""
    return buf.isascii() or buf[start:end].isascii()  # (a copy only when some byte is not)


all_ascii: Callable[[bytes, int, int], bool] = native("all_ascii") or all_ascii_py


def scanner_kind() -> str:
    """Which scanner runs: `native`, or `pure Python` and why (`meshdiag --version`)."""
    why = why_not_native()
    return f"pure Python, {why}" if why else "native"
