"""The streaming collective scan: paths → CollectiveFiles (modules and their collectives).

In blocks of whole lines, in bounded memory: `bytes.find` jumps to the lines that may
matter (a collective's or a Shardy op's name, a module or pass-dump section header, HLO's
source tables); a collective looks back for its computation's header; everything else is
never decoded. `scan_stream_lines` does the same line by line: the reference. HLO:
`all-gather`, `all-reduce`, `reduce-scatter`, `all-to-all`, `ragged-all-to-all`,
`collective-permute` and their `-start` forms (the `-done` halves are the same transfer and
are not counted again; a collective inside an async computation, which a generic
`async-start` calls, is counted where it is printed). Shardy: `sdy.all_gather`,
`sdy.all_slice`, `sdy.all_to_all`, `sdy.all_reduce`, `sdy.reduce_scatter`,
`sdy.collective_permute` and `sdy.reshard`. Text that cannot be read is a Problem with its
line and column; the scan goes on.
"""

from __future__ import annotations

import gzip
import heapq
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import TYPE_CHECKING, BinaryIO

from meshdiag.comms.groups import (
    Groups,
    ReplicaGroups,
    parse_pairs,
    parse_replica_groups,
    replica_groups_end,
)
from meshdiag.comms.model import Collective, CollectiveFile, CollectiveModule, Problem
from meshdiag.errors import MeshdiagError, ParseError
from meshdiag.ir import scancache
from meshdiag.ir.fast import native
from meshdiag.ir.hlo import _header
from meshdiag.ir.mlir import MODULE
from meshdiag.ir.text import (
    HLO_INSTR,
    HLO_OPCODE,
    brace_end,
    hlo_shapes,
    key_end,
    keyed,
    match_end,
    split_top,
    strip_loc,
    tensor_shape,
)
from meshdiag.memo import Recent, Table

if TYPE_CHECKING:
    from meshdiag.memo import RunMemos
    from meshdiag.model.sharding import NamedSharding

#: HLO opcode → kind; the -start forms are async halves of the same kind
HLO_KINDS = {
    "all-gather": "all-gather",
    "all-gather-start": "all-gather",
    "all-reduce": "all-reduce",
    "all-reduce-start": "all-reduce",
    "reduce-scatter": "reduce-scatter",
    "all-to-all": "all-to-all",
    "ragged-all-to-all": "ragged-all-to-all",
    "collective-permute": "collective-permute",
    "collective-permute-start": "collective-permute",
}
SDY_KINDS = {
    "all_gather": "all-gather",
    "all_slice": "all-slice",
    "all_to_all": "all-to-all",
    "all_reduce": "all-reduce",
    "reduce_scatter": "reduce-scatter",
    "collective_permute": "collective-permute",
    "reshard": "reshard",
}
#: words without which a text holds no collective: the HLO opcodes' common parts
#: (`all-` covers all-gather, all-reduce, all-to-all and ragged-all-to-all), and the
#: Shardy ops (one pattern: its literal prefix `sdy.` is searched for in C)
_HLO_WORDS = (b"all-", b"reduce-scatter", b"collective-perm")
_SDY_WORD = re.compile(rb"sdy\.(?:" + "|".join(SDY_KINDS).encode() + rb")\b")


def may_hold_collectives(data: bytes) -> bool:
    """False when `data` names no collective, so its scan would find none (a whole file's
    bytes: no line may be cut). In the cold bench 113 of the 209 MB scanned are such
    files; asking this of every file took 0.26 s, scanning those 1.1 s."""
    if find_any(data, _HLO_WORDS) >= 0:
        return True
    at = find_any(data, _SDY_OPS)  # every match of the regex starts with one of them
    return at >= 0 and _SDY_WORD.search(data, at) is not None


def file_may_hold_collectives(path: str, start: int = 0, stop: int | None = None) -> bool:
    """`may_hold_collectives` of a regular file's bytes from `start` to `stop` (a big file,
    or a part of one: `ir.parts`), read in chunks that overlap by more than any word is
    long, so a word across two chunks is whole in the second. Also True where the scan
    would have something to say without a collective: a line longer than MAX_LINE, a file
    that cannot be read. The 252 MB MLIR file of the cold bench names none: its collective
    scan was a quarter of `lint`'s time, this pass over it takes 0.17 s. True, unread, for
    stdin and a gzip file (`scan_path` streams them: read twice, stdin could not be)."""
    if path == "-" or path.endswith(".gz"):
        return True
    try:
        with open(path, "rb", buffering=0) as f:
            f.seek(start)
            left = -1 if stop is None else stop - start
            tail = b""
            line = 0  # bytes of the line the last chunk ended in
            while left:
                data = f.read(_CHUNK if left < 0 else min(_CHUNK, left))
                if not data:
                    return False
                left = max(left - len(data), 0) if left > 0 else left
                first = data.find(b"\n")
                if first < 0:
                    line += len(data)
                elif line + first > MAX_LINE:
                    return True
                else:
                    # the line it ends in; a line within is shorter than a chunk, and
                    # _CHUNK < MAX_LINE
                    line = len(data) - 1 - data.rfind(b"\n")
                if line > MAX_LINE or may_hold_collectives(data):
                    return True
                if tail and may_hold_collectives(tail + data[:_OVERLAP]):  # across the two
                    return True
                # the last bytes read, however short the reads were
                tail = data[-_OVERLAP:] if len(data) >= _OVERLAP else (tail + data)[-_OVERLAP:]
    except OSError:
        return True  # the scan says why
    return False


class CollectiveSniff:
    """`file_may_hold_collectives` asked of the buffers a sharding scan reads anyway (its
    `on_block`, `ir.scan.OnBlock`), so a big file is not read a second time for it (`lint`):
    after the scan, `maybe` is False when no buffer names a collective. Buffers hold whole
    lines but for a line begun or ended in the one before or after, which holds it whole
    too, so no word is missed; a buffer longer than MAX_LINE holds such a line. Only an
    answer for every byte of the file when the scan reported no problem (a line too long to
    scan, bytes it could not read or decode, a file skipped)."""

    __slots__ = ("maybe",)

    def __init__(self) -> None:
        self.maybe = False

    def __call__(self, buf: bytes) -> None:
        if not self.maybe:
            self.maybe = len(buf) > MAX_LINE or may_hold_collectives(buf)


#: what `file_may_hold_collectives` reads at a time, and how much of the last read it reads
#: again (more than the longest word: `sdy.collective_permute` and the byte after it)
_CHUNK = 4 << 20
_OVERLAP = 64


#: what every Shardy op and mesh names (searched for natively before any regex)
_SDY = (b"sdy.",)
#: how every Shardy collective's name starts (`sdy.all_gather`, ...: `_SDY_WORD`'s
#: alternatives): a Shardy file names `sdy.` on most lines, these seldom
_SDY_OPS = (b"sdy.all_", b"sdy.reduce_scatter", b"sdy.collective_permute", b"sdy.reshard")
#: what a Shardy mesh declaration names
_SDY_MESHES = (b"sdy.mesh", b"xla.sdy.meshes")


_SDY_OP = re.compile(r"^\s*(%[\w.$\-#:]+)\s*=\s*sdy\.(" + "|".join(SDY_KINDS) + r")\b")
_SDY_MESH = re.compile(r'^\s*sdy\.mesh\s+@([\w.$\-]+|"[^"]*")\s*=\s*')
_SECTION = re.compile(r"^// -----// (IR Dump .*?) //----- //")
_COMPUTATION = re.compile(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s*\(")
#: `key=value` attributes of a collective's line: (the key, its value's pattern), found by
#: `text.keyed` through the literal key
_CHANNEL = ("channel_id=", re.compile(r"(\d+)"))
_DIMS = ("dimensions={", re.compile(r"([\d,\s]*)\}"))
_OP_NAME = ('op_name="', re.compile(r'((?:[^"\\]|\\.)*)"'))
_SOURCE_FILE = ('source_file="', re.compile(r'((?:[^"\\]|\\.)*)"'))
_SOURCE_LINE = ("source_line=", re.compile(r"(\d+)"))
_STACK_FRAME = ("stack_frame_id=", re.compile(r"(\d+)"))


_A2A_PARAM = re.compile(r"\s*:\s*(\d+)\s*->\s*(\d+)\s*")

#: lines longer than this are not read (reported once each)
MAX_LINE = 1 << 24


def expand(paths: Iterable[str]) -> Iterator[str]:
    from meshdiag.ir.scan import expand_paths

    return expand_paths(paths)


class ScanMemo:
    """What one run of the collective scan remembers (one per run: a slot of the run's
    `RunMemos`, see `scan_collectives`; a fresh one per call without): small files by
    content (dump directories hold the same pass output under many names), what each HLO
    line it stops at is (a collective, or one that may take a gathered value) by its
    bytes, HLO source tables by their text, module headers, meshes, and each distinct
    Shardy sharding and axis check. Bounded by entries, and by what its lines and parses
    hold: each new one is weighed and told to the run (`hold`: `RunMemos.hold`, whose
    memos, this one too, start over past their budget); a replica group list of 2,048
    devices holds its 11 KB of text and 16 KB of ids."""

    __slots__ = ("files", "hlo", "calls", "tables", "headers", "hold")

    def __init__(self, hold: Callable[[int], None] | None = None) -> None:
        self.files = Recent()  # small files read a little before, by their bytes
        self.hlo: dict[bytes, tuple] = {}
        # Shardy and replica group parses, axis checks: `calls.call(fn, text, ...)`
        self.calls = scancache.ParseTable(MAX_MEMO, hold, held_bytes)
        self.tables = Table(MAX_TABLES_MEMO)  # HLO source tables by their text
        # module headers: a table of their own, so one-off headers cannot evict parses
        self.headers = Table(MAX_HEADERS)
        self.hold = hold

    def clear(self) -> None:
        for t in (self.files, self.hlo, self.calls, self.tables, self.headers):
            t.clear()


#: what a device id of replica groups or pairs holds (`groups.Groups` keeps them flat)
GROUP_ID_BYTES = 8


def held_bytes(parsed: object) -> int:
    """`ir.scancache.held_bytes`, which also weighs replica groups and id pairs (by their
    ids, `GROUP_ID_BYTES` each)."""
    if isinstance(parsed, ReplicaGroups):
        n = scancache.PARSED_BYTES + held_bytes(parsed.mesh)
        return n + GROUP_ID_BYTES * (parsed.num_devices or 0)
    if isinstance(parsed, Groups):  # id pairs
        return scancache.PARSED_BYTES + GROUP_ID_BYTES * parsed.num_ids
    if isinstance(parsed, (list, tuple)):
        return sum(held_bytes(p) for p in parsed)
    return scancache.held_bytes(parsed)


def run_memo(memos: RunMemos) -> ScanMemo:
    """The collective scan's memo of the run: a slot of its `memos`, telling them what it
    holds."""
    return memos.slot("comms.scan", lambda: ScanMemo(memos.hold))


def scan_collectives(
    paths: Iterable[str], memos: RunMemos | None = None
) -> Iterator[CollectiveFile]:
    memo = ScanMemo() if memos is None else run_memo(memos)
    for p in expand(paths):
        yield scan_path(p, memo)


def scan_path(path: str, memo: ScanMemo | None = None) -> CollectiveFile:
    """Open `path` (gzip by extension, `-` = stdin) and scan it; unreadable files are one
    Problem, never an exception."""
    memo = ScanMemo() if memo is None else memo
    if path == "-":
        return scan_stream("<stdin>", sys.stdin.buffer, memo)
    try:
        stream: BinaryIO = gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")  # type: ignore[assignment]
    except OSError as e:
        return CollectiveFile(
            path, problems=[Problem(f"cannot read {path}: {e.strerror}", 0, in_sharding_scan=True)]
        )
    with stream:
        if path.endswith(".gz"):
            return scan_stream(path, stream, memo)
        data = stream.read(BLOCK + 1)
        if len(data) > BLOCK:  # big: streamed
            return scan_stream(path, _Prefixed(data, stream), memo)
    return _scan_small(path, data, memo)


def scan_part(
    path: str, start: int, stop: int, first_line: int, memo: ScanMemo | None = None
) -> CollectiveFile:
    """`scan_path` of one part of a big file (`ir.parts.FilePart`): bytes `start` to
    `stop`, its first line numbered `first_line`, as the whole file's scan reads them."""
    from meshdiag.ir.lines import Bounded

    try:
        with open(path, "rb", buffering=0) as f:
            f.seek(start)
            return scan_stream(path, Bounded(f, stop - start), memo, first_line, sniff=False)
    except OSError as e:
        return CollectiveFile(
            path, problems=[Problem(f"cannot read {path}: {e.strerror}", 0, in_sharding_scan=True)]
        )


def scan_bytes(
    path: str, data: bytes, memo: ScanMemo | None = None, remember: bool = True
) -> CollectiveFile:
    """A whole file read already (`ir.scan.read_small_file`). `remember=False`: the caller
    remembers the files it read itself (`lint`, whose memo of recent files answers a
    repeated file first): none is kept here."""
    memo = ScanMemo() if memo is None else memo
    if len(data) > BLOCK:
        import io

        return scan_stream(path, io.BytesIO(data), memo)
    if not remember:
        return _scan_whole(path, data, memo)
    return _scan_small(path, data, memo)


def _scan_small(path: str, data: bytes, memo: ScanMemo) -> CollectiveFile:
    """A file of at most one block, scanned once while its content repeats a file read a
    little before: dump directories hold the same pass output under many names (its modules
    and problems are shared, read-only). Found by Python's own hash of the bytes (the
    content hash this memo used to take cost several times more)."""
    hit = memo.files.get(data, data)
    if hit is None:
        hit = memo.files.put(data, data, _scan_whole(path, data, memo))
    return CollectiveFile(path, hit.modules, hit.problems)


def _scan_whole(path: str, data: bytes, memo: ScanMemo) -> CollectiveFile:
    """`scan_stream` of a file's bytes (at most one block): the same blocks, without the
    stream (a last line without its newline is a block of its own there too)."""
    s = _Scan(path, memo)
    if data.find(b"\0", 0, 8192) >= 0:  # binary: nothing to read
        return s.out
    cut = data.rfind(b"\n") + 1
    lineno = s.block(data if cut == len(data) else data[:cut], 1) if cut else 1
    if cut < len(data):
        s.block(data[cut:], lineno)
    return s.out


#: HLO source tables a run keeps, and module headers
MAX_TABLES_MEMO = 64
MAX_HEADERS = 1024


class _Prefixed:
    """A stream whose first bytes were already read."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self.head = head
        self.rest = rest

    def read(self, n: int = -1) -> bytes:
        if self.head:
            out, self.head = (
                (self.head, b"")
                if n < 0 or n >= len(self.head)
                else (
                    self.head[:n],
                    self.head[n:],
                )
            )
            return out
        return self.rest.read(n)


def scan_text(path: str, text: str) -> CollectiveFile:
    """Scan text already in memory (tests, stdin copies)."""
    import io

    return scan_stream(path, io.BytesIO(text.encode()), ScanMemo())


def scan_stream(
    path: str,
    stream: BinaryIO,
    memo: ScanMemo | None = None,
    first_line: int = 1,
    sniff: bool = True,
) -> CollectiveFile:
    """Scan a stream in blocks of whole lines: the regex `_Scan.pattern` jumps (in C) to the
    next line that may matter, so the lines between are never split or decoded. Memory
    stays bounded: a line longer than MAX_LINE is reported and skipped. `first_line`: the
    number of the stream's first line; `sniff=False`: the stream is a part of a file
    (`ir.parts`) whose start was sniffed, and a NUL in its first bytes is not a binary file."""
    s = _Scan(path, ScanMemo() if memo is None else memo)
    lineno = first_line
    try:
        buf = stream.read(8192)
        if sniff and b"\0" in buf:  # binary: nothing to read
            return s.out
        eof = False
        skipping = False  # inside a line too long to keep
        while True:
            more = b"" if eof else stream.read(BLOCK)
            eof = eof or not more
            if skipping:
                nl = more.find(b"\n")
                if nl < 0:
                    if eof:
                        break
                    continue
                skipping = False
                lineno += 1
                more = more[nl + 1 :]
            buf += more
            if eof and not buf:
                break
            cut = len(buf) if eof else buf.rfind(b"\n") + 1
            if cut == 0:  # no whole line yet
                if len(buf) > MAX_LINE:
                    s.problem(f"line longer than {MAX_LINE} bytes not read", lineno, shared=True)
                    buf = b""
                    skipping = True
                continue
            block, buf = buf[:cut], buf[cut:]
            lineno = s.block(block, lineno)
            if eof:
                break
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        s.problem(f"cannot read {path} to the end: {e}", lineno, shared=True)
    return s.out


def scan_stream_lines(path: str, stream: BinaryIO, memo: ScanMemo | None = None) -> CollectiveFile:
    """`scan_stream` one line at a time: the reference the tests hold the block scan to."""
    s = _Scan(path, ScanMemo() if memo is None else memo)
    data = stream.read()
    if data.find(b"\0", 0, 8192) >= 0:
        return s.out
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for lineno, raw in enumerate(lines, 1):
        s.line_checked(raw, lineno)
    return s.out


BLOCK = 1 << 20
#: a line that may matter names a collective or a Shardy op, or starts a module, a pass-dump
#: section or a source table (computation headers are found when a collective needs one)
_WORDS = (
    *_HLO_WORDS,
    b"sdy.",
    b"HloModule ",
    b"module",
    b"// -----",
    b"FileNames",  # the first of the source tables (the others follow it)
)
#: where the source tables end: the first line that is not a row (starting with a digit),
#: blank or a table's name
_TABLE_END = re.compile(rb"\n(?![0-9\n]|FunctionNames|FileLocations|StackFrames|FileNames)")


def word_lines_py(block: bytes, words: tuple[bytes, ...]) -> list[int]:
    """Where the lines of `block` that hold any of `words` start, ascending, each once
    (the twin of the native `word_lines`)."""
    starts = set()
    for w in words:
        at = block.find(w)
        while at >= 0:
            starts.add(block.rfind(b"\n", 0, at) + 1)
            end = block.find(b"\n", at)
            if end < 0:
                break
            at = block.find(w, end + 1)
    return sorted(starts)


#: the native line finder when built (see `meshdiag.ir.fast`), else its twin
word_lines: Callable[[bytes, tuple[bytes, ...]], list[int]] = native("word_lines") or word_lines_py


def find_any_py(block: bytes, words: tuple[bytes, ...]) -> int:
    """Where the first occurrence of any of `words` in `block` starts, -1 when none occurs
    (the twin of the native `find_any`, which stops at the occurrences of each word's
    rarest byte only: `bytes.find` of a word, `sdy.` or `all-`, went at 1.5 GB/s)."""
    found = [at for at in (block.find(w) for w in words) if at >= 0]
    return min(found) if found else -1


#: the native word finder when built, else its twin
find_any: Callable[[bytes, tuple[bytes, ...]], int] = native("find_any") or find_any_py


class _Finder:
    """The next candidate position in a block at or after `pos` (a line start): the next
    line holding one of `_WORDS` (all found at once, natively when built), or the next
    occurrence of a name the all-gather following watches for. Those come and go: each
    one's next occurrence is kept in a heap until the scan passes it."""

    def __init__(self, block: bytes, names: dict[str, int]) -> None:
        self.block = block
        self.lines = word_lines(block, _WORDS)
        self.i = 0  # the first of `lines` not yet passed
        self.heap: list[tuple[int, bytes]] = []
        self.names: set[bytes] = set()
        self._of: dict[str, int] | None = None  # the dict `names` were last taken from
        self._taken = 0  # how many of its keys
        self.sync(names, 0)

    def _push(self, word: bytes, pos: int) -> None:
        at = self.block.find(word, pos)
        if at >= 0:
            heapq.heappush(self.heap, (at, word))

    def sync(self, names: dict[str, int], pos: int) -> None:
        """Watch for exactly the keys of `names` from `pos` on. The scan only adds to its
        dict, or starts a new one: only the keys added since the last call are new (a
        dict keeps its keys in the order they came)."""
        if names is self._of and len(names) >= self._taken:
            for n in islice(names, self._taken, None):
                word = n.encode()
                if word not in self.names:
                    self.names.add(word)
                    self._push(word, pos)
        else:
            now = {n.encode() for n in names}
            for word in now - self.names:
                self._push(word, pos)
            self.names = now
        self._of = names
        self._taken = len(names)

    def next(self, pos: int) -> int:
        lines, i = self.lines, self.i
        while i < len(lines) and lines[i] < pos:
            i += 1
        self.i = i
        line = lines[i] if i < len(lines) else -1
        heap = self.heap
        if not heap:
            return line
        while heap and heap[0][0] < pos:
            _, word = heapq.heappop(heap)
            if word in self.names:
                self._push(word, pos)
        if not heap:
            return line
        return heap[0][0] if line < 0 else min(line, heap[0][0])


class _Scan:
    """The scan's state: the current module and computation."""

    def __init__(self, path: str, memo: ScanMemo) -> None:
        self.memo = memo
        self.out = CollectiveFile(path)
        self.module: CollectiveModule | None = None
        self.computation: str | None = None
        self.section: str | None = None  # a pass-dump header waiting for its module
        #: HLO: instructions holding an all-gather's result (directly or through
        #: single-operand instructions) → devices it is gathered over; per computation
        self.reach: dict[str, int] = {}
        self.reach_gen = 0  # bumped whenever `reach` changes (the block scan watches it)
        #: HLO source tables (`FileNames`, ..., `StackFrames`): the one being read, rows by id
        self.table = False  # inside the source tables
        self.tables: SourceTables | None = None  # read when first asked
        self.raw_tables: list[bytes] = []  # the tables' text as read
        #: Shardy: the sharding of each value of the current function (what a
        #: collective_permute starts from)
        self.shardings: dict[str, NamedSharding] = {}

    def problem(self, message: str, line: int, column: int = 1, shared: bool = False) -> None:
        """`shared`: the sharding scan reports the same text (`Problem.in_sharding_scan`)."""
        self.out.problems.append(Problem(message, line, column, shared))

    def block(self, block: bytes, lineno: int) -> int:
        """The candidate lines of a block of whole lines whose first is line `lineno`;
        returns the number of the line after it."""
        n = len(block)
        pos = counted = 0
        if self.table:  # the rows of tables the last block started
            pos = self._table_chunk(block, 0)
        finder = _Finder(block, self.reach)
        gen = self.reach_gen
        known = self.memo.hlo
        while pos < n:
            at = finder.next(pos)
            if at < 0:
                break
            start = block.rfind(b"\n", 0, at) + 1
            end = block.find(b"\n", at)
            end = n if end < 0 else end
            m = self.module
            if m is not None and m.dialect == "hlo" and block[start : start + 1] in _INDENT:
                # an instruction line known to do nothing here (no collective, and nothing
                # gathered to follow): skipped before counting lines or looking back for
                # its computation, which only a line that records something needs
                hit = known.get(block[start:end])
                if hit is not None and _records_nothing(hit, self.reach):
                    pos = end + 1
                    continue
            lineno += block.count(b"\n", counted, start)
            self._catch_up(block, counted, start)
            counted = start
            self.line_checked(block[start:end], lineno)
            pos = end + 1
            if self.table:  # the source tables: their rows in one piece
                pos = self._table_chunk(block, pos)
            if self.reach_gen != gen:
                finder.sync(self.reach, pos)
                gen = self.reach_gen
        self._catch_up(block, counted, n)
        return lineno + block.count(b"\n", counted)

    def start(self, name: str | None, lineno: int, dialect: str) -> CollectiveModule:
        m = CollectiveModule(name, lineno, dialect, self.section)  # type: ignore[arg-type]
        self.section = None
        self.computation = None
        self.reach = {}
        self.reach_gen += 1
        self.table = False
        self.tables = None
        self.raw_tables = []
        self.shardings = {}
        self.out.modules.append(m)
        self.module = m
        return m

    def ensure(self, lineno: int, dialect: str) -> CollectiveModule:
        if self.module is None or self.module.dialect != dialect:
            return self.start(None, lineno, dialect)
        return self.module

    def line_checked(self, raw: bytes, lineno: int) -> None:
        if len(raw) > MAX_LINE:
            self.problem(f"line longer than {MAX_LINE} bytes not read", lineno, shared=True)
        else:
            self.line(raw, lineno)

    # -- one line ------------------------------------------------------------------------
    def line(self, raw: bytes, lineno: int) -> None:
        first = raw[:1]
        if first not in (b" ", b"\t"):
            self._structure(raw, lineno)
            return
        if b"sdy." in raw and (self.module is None or self.module.dialect == "mlir"):
            if b" = sdy." in raw or b"sdy.mesh" in raw:
                self._mlir(raw, lineno)
            elif b"sdy.sharding" in raw:
                self._record(_decode(raw))
            return
        if self.module is not None and self.module.dialect == "hlo":
            self._hlo(raw, lineno)  # a collective, or a line that may take a gathered value

    def _structure(self, raw: bytes, lineno: int) -> None:
        if self.table:
            if not raw or raw[:1].isdigit() or raw.rstrip() in _TABLES:
                self.table_rows(raw + b"\n")
                return
            self.table = False
        if raw.rstrip() in _TABLES and self.module is not None and self.module.dialect == "hlo":
            self.table = True
            self.table_rows(raw + b"\n")
            return
        if raw.startswith(b"HloModule "):
            # every pass of a module prints the same header (with the whole entry layout)
            name, num_partitions, meshes = self.memo.headers.call(_header, _decode(raw))
            m = self.start(name, lineno, "hlo")
            m.num_partitions = num_partitions
            for mesh_name, text, col in meshes:
                if text is not None:
                    self._declare(mesh_name, text, lineno, col)
            return
        if raw.startswith(b"// -----"):
            line = _decode(raw)
            sm = _SECTION.match(line)
            self.section = sm.group(1) if sm else None
            self.module = None  # the next module line starts the next module
            return
        if raw.startswith(b"module") or raw.startswith(b"builtin.module"):
            line = _decode(raw)
            mm = MODULE.match(line)
            if mm:
                m = self.start(mm.group(1) if mm.lastindex else None, lineno, "mlir")
                np_at = line.find("mhlo.num_partitions = ")
                if np_at >= 0:
                    digits = re.match(r"\d+", line[np_at + len("mhlo.num_partitions = ") :])
                    m.num_partitions = int(digits.group()) if digits else None
            return
        self._computation_header(raw)

    def _computation_header(self, raw: bytes) -> None:
        """`%name (params) -> type {` or `ENTRY %name ...{`: the computation from here on.
        (Instruction names are unique in an HLO module, so the all-gather following needs
        no reset here.)"""
        if self.module is not None and self.module.dialect == "hlo" and raw.rstrip().endswith(b"{"):
            cm = _COMPUTATION.match(_decode(raw))
            if cm:
                self.computation = cm.group(1)

    def _catch_up(self, block: bytes, lo: int, hi: int) -> None:
        """The block scan skips computation headers: before a line at `hi`, take the last
        header between `lo` and `hi` (a header starts a line with `%` or `ENTRY `)."""
        if self.module is None or self.module.dialect != "hlo":
            return
        at = max(block.rfind(b"\n%", lo, hi), block.rfind(b"\nENTRY ", lo, hi)) + 1
        if at == 0 and not (lo == 0 and block.startswith((b"%", b"ENTRY "))):
            return
        end = block.find(b"\n", at)
        self._computation_header(block[at : end if end >= 0 else len(block)])

    # -- Shardy --------------------------------------------------------------------------
    def _declare(self, name: str, text: str, lineno: int, column: int) -> None:
        from meshdiag.notation.shardy import parse_mesh_attr_at

        try:
            mesh, _ = self.memo.calls.call(parse_mesh_attr_at, text, 0)
        except MeshdiagError as e:
            self.problem(f"mesh @{name}: {e}", lineno, column, shared=True)
            return
        assert self.module is not None
        self.module.meshes[name] = mesh

    def _mlir(self, raw: bytes, lineno: int) -> None:
        line = _decode(raw)
        mm = _SDY_MESH.match(line)
        if mm:
            self.ensure(lineno, "mlir")
            name = mm.group(1).strip('"')
            self._declare(name, line[mm.end() :].strip(), lineno, mm.end() + 1)
            return
        om = _SDY_OP.match(line)
        if om is None:
            return
        module = self.ensure(lineno, "mlir")
        try:
            c = _sdy_op(line, om, lineno, module, self.shardings, self.memo)
        except MeshdiagError as e:
            col = getattr(e, "pos", 0) + 1 if isinstance(e, ParseError) else om.start(2) + 1
            self.problem(f"sdy.{om.group(2)}: {_message(e)}", lineno, col)
            return
        module.collectives.append(c)
        if c.out_sharding is not None and len(self.shardings) < MAX_REACH:
            self.shardings[c.name] = c.out_sharding

    def _record(self, line: str) -> None:
        """The shardings a line gives its values: a function's arguments (and a new function
        forgets the last one's values), or an op's results (`sdy.sharding_per_value`)."""
        if self.module is None:
            return
        stripped = line.lstrip()
        if stripped.startswith(("func.func", "sdy.manual_computation")) or " func.func " in line:
            self.shardings = {}
            for at in _find_all(line, _ARG_SHARDING):
                start = at + len(_ARG_SHARDING) - len("#sdy.sharding<")
                name_at = line.rfind("%", 0, at)
                colon = line.find(":", name_at)
                sharding = self._parse(line, start, per_value=False)
                if name_at >= 0 and colon > name_at and sharding is not None:
                    self.shardings[line[name_at:colon].strip()] = sharding
            return
        rm = _RESULT.match(line)
        at = line.find(_PER_VALUE)
        if rm is None or at < 0 or len(self.shardings) >= MAX_REACH:
            return
        sharding = self._parse(line, at + len("sdy.sharding = "), per_value=True)
        if sharding is not None:
            self.shardings[rm.group(1)] = sharding

    def _parse(self, line: str, start: int, per_value: bool) -> NamedSharding | None:
        """The sharding at `start` (the first of a per-value list); None when unreadable
        (the sharding scanner of `inspect`/`lint` reports those)."""
        end = match_end(line, line.find("<", start))
        if end < 0 or self.module is None:
            return None
        meshes = tuple(self.module.meshes.items())
        return self.memo.calls.call(_parse_sharding, line[start:end], per_value, meshes)

    # -- HLO -----------------------------------------------------------------------------
    def frame(self, frame_id: int) -> str | None:
        """`file:line (function)` of a stack frame id from the module's source tables."""
        if self.tables is None:
            text = b"".join(self.raw_tables)
            self.raw_tables = []
            if len(text) > MAX_TABLES_MEMO_BYTES:
                self.tables = SourceTables(text)
            else:  # every pass of a dump prints the same tables again
                self.tables = self.memo.tables.call(SourceTables, text)
        return self.tables.frame(frame_id)

    def _table_chunk(self, block: bytes, pos: int) -> int:
        """Take the source tables' lines from `pos` (a line start) on; where they end.
        They go on while lines are rows (starting with a digit), blank, or table names."""
        c = block[pos : pos + 1]
        if c and not (c.isdigit() or c == b"\n" or block.startswith(_TABLES, pos)):
            self.table = False
            return pos
        m = _TABLE_END.search(block, pos)
        if m is not None and m.end() == len(block):  # the block ends: they may go on
            m = None
        stop = m.start() + 1 if m else len(block)
        self.table_rows(block[pos:stop])
        if m is not None:
            self.table = False
        return stop

    def table_rows(self, rows: bytes) -> None:
        """Text of the source tables (kept as bytes; read when a frame is asked)."""
        if len(self.raw_tables) < MAX_TABLE:
            self.raw_tables.append(rows)

    def _follow(self, parts: tuple[str, tuple[str, ...]] | None) -> None:
        """An instruction that may take an all-gather's result (its name and operands,
        `_follow_parts`): a single-operand one passes the gathered count on (an elementwise
        op of a whole tensor is whole)."""
        if parts is None:
            return
        name, operands = parts
        if len(operands) == 1 and operands[0] in self.reach and len(self.reach) < MAX_REACH:
            self.reach[name] = self.reach[operands[0]]
            self.reach_gen += 1

    def _hlo(self, raw: bytes, lineno: int) -> None:
        known = self.memo.hlo  # what each line is, whether it holds a collective or not
        hit = known.get(raw)
        if hit is None:
            hit = _learn_hlo(self.memo, raw)
        if _records_nothing(hit, self.reach):
            return
        what = hit[0]
        if what == "follow":
            if len(hit) == 1:  # its name and operands, read once they matter
                hit = known[raw] = ("follow", _follow_parts(_decode(raw)))
            self._follow(hit[1])
            return
        if what == "problem":
            self.problem(hit[1], lineno, hit[2])
            return
        assert self.module is not None
        _, proto, frame_id, operands = hit
        computation = self.computation
        source = proto.source
        if source is None and frame_id is not None:
            source = self.frame(frame_id)
        d = proto.__dict__.copy()
        d["line"] = lineno
        d["computation"] = computation
        d["is_async"] = proto.op.endswith("-start") or "async" in (computation or "")
        d["source"] = source
        if proto.kind == "all-gather":
            n = _group_size(proto, self.module.num_partitions)
            before = self.reach.get(operands[0], 1) if len(operands) == 1 else 1
            d["gathered"] = n * before
            if len(self.reach) < MAX_REACH:
                self.reach[proto.name] = d["gathered"]
                self.reach_gen += 1
        c = _new(Collective)
        object.__setattr__(c, "__dict__", d)
        self.module.collectives.append(c)


def _learn_hlo(memo: ScanMemo, raw: bytes) -> tuple:
    """What the HLO line `raw` is (`_read_hlo`), remembered in `memo.hlo` by its bytes."""
    # no collective's opcode: an operand named after one (`fusion(%all-gather.3)`)
    no_op = _COLLECTIVE_OPCODE.search(raw) is None
    hit = _FOLLOW if no_op else _read_hlo(_decode(raw), memo.calls)
    if memo.hold is not None:  # (what it parsed was told as parsed)
        memo.hold(len(raw) + scancache.LINE_COST)
    known = memo.hlo
    if len(known) >= MAX_MEMO:  # a new program's lines, most likely: start over
        known.clear()
    known[raw] = hit
    return hit


def reads_clean(
    data: bytes, memo: ScanMemo, judged: Callable[[Collective], bool] | None = None
) -> bool:
    """True only when the scan of `data` (a whole small file) would report no problem and
    find no collective `judged` keeps (None: keeps none): it declares no Shardy mesh and
    holds no Shardy collective, and every HLO line naming a collective's opcode reads, as a
    collective `judged` does not keep (each distinct line parsed once per run, in `memo`,
    as the scan does). False means it may: scan it. For a caller whose checks read none of
    these (`lint` by default: MD202 reads only all-gathers of at least `remat-min-bytes`),
    this is all the scan would add."""
    if len(data) > MAX_LINE or data.find(b"\0", 0, 8192) >= 0:
        return False
    if find_any(data, _SDY) >= 0 and (  # one pass for the files that name nothing of Shardy's
        find_any(data, _SDY_MESHES) >= 0 or _SDY_WORD.search(data)
    ):
        return False
    known = memo.hlo
    for start in word_lines(data, _HLO_WORDS):  # every line naming an opcode has one
        end = data.find(b"\n", start)
        raw = data[start : len(data) if end < 0 else end]
        hit = known.get(raw)
        if hit is None:
            hit = _learn_hlo(memo, raw)
        what = hit[0]
        if what == "problem" or (what == "op" and judged is not None and judged(hit[1])):
            return False
    return True


#: a collective's opcode as an HLO instruction prints it (`... all-gather(`), which every line
#: `_read_hlo` reads as a collective has; half the lines naming a collective only name one
#: (`%fusion = ... fusion(%all-gather.3)`) and need not be parsed
_COLLECTIVE_OPCODE = re.compile(
    rb"(?<![\w\-])(?:"
    + b"|".join(k.encode() for k in sorted(HLO_KINDS, key=len, reverse=True))
    + rb")\("
)
_FOLLOW = ("follow",)
_INDENT = (b" ", b"\t")


def _records_nothing(hit: tuple, reach: dict) -> bool:
    """Whether an HLO line read as `hit` (`_read_hlo`) adds nothing to the scan: not an
    instruction, or one with no collective while nothing gathered is being followed."""
    return hit[0] == "none" or (hit[0] == "follow" and not reach)


#: names followed per computation at most
MAX_REACH = 4096
_ARG_SHARDING = "sdy.sharding = #sdy.sharding<"
_PER_VALUE = "sdy.sharding = #sdy.sharding_per_value<"
_RESULT = re.compile(r"^\s*(%[\w.$\-]+)\s*=")


def _find_all(line: str, word: str):
    p = line.find(word)
    while p >= 0:
        yield p
        p = line.find(word, p + 1)


#: HLO source tables printed before the computations, and the rows kept per table at most
_TABLES = (b"FileNames", b"FunctionNames", b"FileLocations", b"StackFrames")
MAX_TABLE = 1 << 20
#: source tables of at most this size are read once per run (by their text)
MAX_TABLES_MEMO_BYTES = 1 << 22


class SourceTables:
    """A module's source tables, read from their text, and the stack frames resolved from
    them (each id once)."""

    __slots__ = ("rows", "frames")

    def __init__(self, text: bytes) -> None:
        self.rows: dict[str, dict[int, str]] = {}
        self.frames: dict[int, str | None] = {}
        current: dict[int, str] | None = None
        for row in text.split(b"\n"):
            if row.rstrip() in _TABLES:
                current = self.rows.setdefault(row.rstrip().decode(), {})
                continue
            key, _, value = row.partition(b" ")
            if current is not None and key.isdigit() and len(current) < MAX_TABLE:
                current[int(key)] = _decode(value).strip()

    def frame(self, frame_id: int) -> str | None:
        if frame_id not in self.frames:
            self.frames[frame_id] = self._frame(frame_id)
        return self.frames[frame_id]

    def _frame(self, frame_id: int) -> str | None:
        t = self.rows
        frame = t.get("StackFrames", {}).get(frame_id)
        loc_id = _field(frame, "file_location_id")
        loc = t.get("FileLocations", {}).get(loc_id) if loc_id is not None else None
        if loc is None:
            return None
        file_id, fn_id, line = (
            _field(loc, k) for k in ("file_name_id", "function_name_id", "line")
        )
        path = t.get("FileNames", {}).get(file_id, "?") if file_id is not None else "?"
        fn = t.get("FunctionNames", {}).get(fn_id) if fn_id is not None else None
        text = f"{path.strip(chr(34))}:{line}"
        return text + (f" ({fn.strip(chr(34))})" if fn else "")


def _field(row: str | None, key: str) -> int | None:
    """`key=N` in a source-table row (`{file_location_id=3 parent_frame_id=3}`)."""
    if row is None:
        return None
    m = _FIELDS[key].search(row)
    return int(m.group(1)) if m else None


_FIELDS = {
    k: re.compile(r"\b" + k + r"=(\d+)")
    for k in ("file_location_id", "file_name_id", "function_name_id", "line")
}


def _instruction(line: str) -> tuple[str, str, re.Match] | None:
    """(name, shape text, opcode match) of an HLO instruction line; None if it is not one."""
    im = HLO_INSTR.match(line)
    if im is None:
        return None
    rest = im.end()
    if line.startswith("(", rest):
        send = match_end(line, rest)
        if send < 0:
            return None
        shape_text, after = line[rest:send], send
    else:
        sp = line.find(" ", rest)
        if sp < 0:
            return None
        shape_text, after = line[rest:sp], sp
    om = HLO_OPCODE.match(line, after)
    if om is None:
        return None
    return im.group(1), shape_text, om


def _follow_parts(line: str) -> tuple[str, tuple[str, ...]] | None:
    """(name, operand names) of an HLO instruction line; None if it is not one."""
    parts = _instruction(line)
    if parts is None:
        return None
    name, _, om = parts
    return name, tuple(_operands(line, om))


def _operands(line: str, om: re.Match) -> list[str]:
    """Operand names of an instruction (`op(%a, %b)`, or typed `op(f32[2] %a)`)."""
    open_ = om.end() - 1
    end = match_end(line, open_)
    if end < 0:
        return []
    spans = split_top(line, open_ + 1, end - 1)
    return [line[a:b].split()[-1] for a, b in spans if line[a:b].strip()]


def _group_size(c: Collective, num_partitions: int | None) -> int:
    """Devices per group: the groups', or every device for `{}` / no groups."""
    if c.groups is not None and c.groups.group_size is not None:
        return c.groups.group_size
    return num_partitions or 1


def _message(e: MeshdiagError) -> str:
    if isinstance(e, ParseError):
        what = f"expected {e.expected}"
        return what + (f", found {e.found}" if e.found is not None else "")
    return str(e)


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace").rstrip("\r")


def _located(e: ParseError, line: str, start: int) -> ParseError:
    """`e`, raised on a slice of `line` starting at `start`, relocated onto the line."""
    out = ParseError(e.expected, line, start + e.pos, found=e.found)
    return out


#: HLO collective lines (every pass of a dump prints the same lines again), Shardy parses
#: and axis checks a run keeps
MAX_MEMO = 1 << 14
_new = object.__new__


def _read_hlo(line: str, calls: Table) -> tuple:
    """What an HLO line holding a collective word is, independent of where it is:
    ("op", collective at line 0, its stack_frame_id, its operand names), ("problem",
    message, column), ("follow",) for another instruction, ("none",) for no instruction."""
    parts = _instruction(line)
    if parts is None:
        return ("none",)
    name, shape_text, om = parts
    if om.group(1) not in HLO_KINDS:
        return ("follow",)
    try:
        c, frame_id = _hlo_op(line, name, shape_text, om, calls)
    except ParseError as e:
        return ("problem", f"{om.group(1)} {name}: {_message(e)}", e.pos + 1)
    except MeshdiagError as e:
        return ("problem", f"{om.group(1)} {name}: {e}", om.start(1) + 1)
    return ("op", c, frame_id, tuple(_operands(line, om)))


def _hlo_op(line, name, shape_text, om, calls: Table) -> tuple[Collective, int | None]:
    """The collective of an HLO line; its groups and pairs are read once per distinct
    text in `calls` (many lines share them)."""
    op = om.group(1)
    leaves = hlo_shapes(shape_text)
    if op.endswith("-start"):
        # the result is (operands, results[, contexts]): the results are the second part
        arrays = [a for a in leaves if a[0] != ()]
        leaves = arrays[len(arrays) // 2 :] if op != "all-reduce-start" else arrays
    groups = pairs = None
    at = key_end(line, "replica_groups=", om.end())
    if at >= 0:
        end = replica_groups_end(line, at)
        if end < 0:
            raise ParseError("the end of replica_groups (the line ends first)", line, at)
        try:
            groups = calls.call(parse_replica_groups, line[at:end])
        except ParseError as e:
            raise _located(e, line, at) from None
    at = key_end(line, "source_target_pairs=", om.end())
    if at >= 0:
        end = brace_end(line, at)
        if end < 0:
            raise ParseError("the end of source_target_pairs", line, at)
        try:
            pairs = calls.call(parse_pairs, line[at:end])
        except ParseError as e:
            raise _located(e, line, at) from None
    dm = keyed(line, *_DIMS, om.end())
    dims = tuple(int(x) for x in dm.group(1).replace(" ", "").split(",") if x) if dm else ()
    ch = keyed(line, *_CHANNEL, om.end())
    opn = keyed(line, *_OP_NAME, om.end())
    sf = keyed(line, *_SOURCE_FILE, om.end())
    sl = keyed(line, *_SOURCE_LINE, om.end())
    source = f"{sf.group(1)}:{sl.group(1)}" if sf and sl else (sf.group(1) if sf else None)
    fm = keyed(line, *_STACK_FRAME, om.end()) if source is None else None
    c = Collective(
        kind=HLO_KINDS[op],  # type: ignore[arg-type]
        op=op,
        name=name,
        line=0,
        column=om.start(1) + 1,
        dialect="hlo",
        results=tuple((s, d) for s, d in leaves),
        groups=groups,
        pairs=pairs,
        dimensions=dims,
        channel_id=int(ch.group(1)) if ch else None,
        op_name=opn.group(1) if opn else None,
        source=source,
    )
    return c, int(fm.group(1)) if fm else None


def _sdy_op(
    line: str,
    om: re.Match,
    lineno: int,
    module: CollectiveModule,
    shardings: dict,
    memo: ScanMemo,
) -> Collective:
    from meshdiag.notation._cursor import Cursor
    from meshdiag.notation.shardy import parse_sdy_sharding_at, read_axis_list, read_dims_list

    body = strip_loc(line)
    op = om.group(2)
    cur = Cursor(body, om.end())
    axes: tuple = ()
    a2a: list = []
    if op in ("all_gather", "all_slice", "reduce_scatter"):
        axes = tuple(a for d in read_dims_list(cur) for a in d.axes)
    elif op == "all_reduce":
        axes = read_axis_list(cur)
    elif op == "all_to_all":
        cur.expect("[", "'[' to start the all_to_all parameters")
        while not cur.accept("]"):
            if a2a:
                cur.expect(",", "',' or ']'")
            refs = read_axis_list(cur)
            m = _A2A_PARAM.match(body, cur.pos)
            if m is None:
                raise cur.error("': src->dst' after the all_to_all axes")
            cur.pos = m.end()
            a2a.append((refs, int(m.group(1)), int(m.group(2))))
        axes = tuple(a for refs, _, _ in a2a for a in refs)
    operand = body[cur.ws().pos :].split(" ", 1)[0]
    # the operand, then out_sharding=<...> (reshard: the sharding right after the operand)
    key = "out_sharding=" if op != "reshard" else None
    if key is not None:
        at = body.find(key, cur.pos)
        if at < 0:
            raise cur.error("'out_sharding=<...>'")
        start = at + len(key)
    else:
        start = body.find("<", cur.pos)
        if start < 0:
            raise cur.error("the target sharding '<@mesh, [...]>'")
    sharding, end = parse_sdy_sharding_at(body, start, module.meshes)
    colon = body.rfind(" : ", end)
    typed = tensor_shape(body[colon:]) if colon >= 0 else None
    if typed is None:
        raise cur.error("': tensor<...>' (the result type)", len(body))
    global_shape, dtype = typed
    local = _local_shape(global_shape, sharding, module)
    if sharding.mesh is not None:  # the axes must be (sub-)axes of the mesh, each once
        for refs in [axes] + [r for r, _, _ in a2a]:
            memo.calls.call(_check_axes, sharding.mesh, tuple(refs))
    gathered = None
    if op == "all_gather" and sharding.mesh is not None:
        whole = not any(d.axes for d in sharding.dims)
        gathered = sharding.mesh.size if whole else _axes_size(axes, sharding.mesh)
    return Collective(
        kind=SDY_KINDS[op],  # type: ignore[arg-type]
        op=f"sdy.{op}",
        name=om.group(1),
        line=lineno,
        column=om.start(2) - len("sdy.") + 1,
        dialect="sdy",
        results=((local, dtype or "?"),),
        sdy_axes=axes,
        out_sharding=sharding,
        global_shape=global_shape,
        sdy_a2a=tuple(a2a),
        gathered=gathered,
        in_sharding=shardings.get(operand),
    )


def _axes_size(refs, mesh) -> int:
    n = 1
    for r in refs:
        n *= axis_ref_size(r, mesh)
    return n


def _parse_sharding(text: str, per_value: bool, meshes: tuple) -> NamedSharding | None:
    """A Shardy sharding annotation on the module's meshes, parsed once per distinct text;
    None when unreadable or not a single value's."""
    from meshdiag.notation.shardy import parse_sdy_sharding, parse_sharding_per_value

    try:
        if per_value:
            values = parse_sharding_per_value(text, dict(meshes))
            return values[0] if len(values) == 1 else None
        return parse_sdy_sharding(text, dict(meshes))
    except MeshdiagError:
        return None


def _check_axes(mesh, refs) -> None:
    """MeshdiagError unless `refs` are distinct, non-overlapping (sub-)axes of `mesh`."""
    from meshdiag.comms.groups import chosen_factors

    chosen_factors(mesh, refs)


def axis_ref_size(ref, mesh) -> int:
    """Devices along one (sub-)axis of `mesh`."""
    if ref.is_sub:
        return ref.size
    return mesh.axis_size(ref.name)


def _local_shape(global_shape, sharding, module: CollectiveModule):
    """The per-device shape of a global shape under a Shardy sharding (ceil division:
    the padded buffer XLA allocates)."""
    if global_shape is None:
        return None
    mesh = sharding.mesh
    if mesh is None:
        ref = sharding.mesh_ref
        raise MeshdiagError(f"mesh @{ref} is not declared before its use")
    if len(sharding.dims) != len(global_shape):
        raise MeshdiagError(
            f"the sharding has {len(sharding.dims)} dimensions but the tensor has "
            f"{len(global_shape)}"
        )
    out = []
    for size, dim in zip(global_shape, sharding.dims, strict=True):
        k = 1
        for a in dim.axes:
            try:
                k *= axis_ref_size(a, mesh)
            except KeyError:
                raise MeshdiagError(f"axis {a.name!r} is not in mesh <{mesh.short()}>") from None
        out.append(-(-size // k))
    return tuple(out)
