"""Learn what a line yields, so its next occurrences cost the native walker a dict lookup.

A line handler runs on the builder itself. When it only added values to the module it
found (no problem, no parse error, no change of state), those values become one shared
`LineValues` entry of the module's columns and the line's raw bytes are learned in the run's
`ScanCache` under the module state: the native walker (`lines.scan_known`) then appends
each later occurrence itself. A line that yields nothing is learned as None (skipped).
Lines with problems are simply read again each time (their findings are reported again).
A plain constraint or op line whose sharding was read before needs no handler: the native
reader the walker uses makes its value (`read_plain`), and it is learned the same way.

Learning costs about a microsecond a line, a fifth of reading it, and pays only when the line
comes again: in a big file of new lines (one program's every op, each with its own SSA
names and shapes) it never does. So a streamed file learns under a `Sampling`: after a window
of new lines of which few came again, only one new line in `PROBE` is learned, until the
walker replays enough of those (a file that repeats its modules, a pass dump in one file)
to turn learning back on. A big regular file, or a part of one, starts that way. What a
line yields is the same learned or not; only the time differs: a 60 MB file of new lines
scanned in 1.52 s learning every line, 1.36 s sampled.
A file small enough to read whole (`scan_bytes`) learns every line: a dump's pass files
repeat each other, not themselves.
"""

from __future__ import annotations

from collections.abc import Callable

from meshdiag.ir.builder import Builder
from meshdiag.ir.lines import plain_line
from meshdiag.ir.model import LineValues, at_line
from meshdiag.ir.scancache import MAX_LINE

#: new lines per decision, and the share of them the walker must replay meanwhile for
#: learning to stay on (a file replaying its earlier modules replays most)
WINDOW = 4096
REPLAYED = 1 / 32
#: while off, one new line in PROBE is learned: a file that starts repeating itself shows
#: it in the replays of those. The rest of a streamed file's plain constraint and op lines
#: are read by the walker itself (`lines.scan_plain`); a plain line learned is read
#: natively too (`read_plain`), any other line by its handler. Each probe still costs a few
#: microseconds, ten of the walker's lines, and ends the walker's call: the 252 MB file of
#: new lines took 1.78 s (`inspect -j1`) with PROBE = 64, 1.68 s with 256, 1.66 s with
#: 1024 (a file that repeats its modules learns as fast with either: learning stays on)
PROBE = 256
#: while off, the share of new lines replayed that turns learning back on: when a share r
#: of the lines are repeats, only the probed ones (1 in PROBE) replay, r / (1 - r) / PROBE
#: as many as there are new lines, so this asks for about half of the lines to be repeats
#: (with 1 / (2 * PROBE), a third: too few replays a window to tell a third from half
#: once PROBE is 256)
REPLAYED_PROBED = 1 / PROBE


class Sampling:
    """Whether a streamed file's next new line is learned (see the module docstring). The
    scanner counts the walker's replays (`replayed`), the line memo asks (`learns`)."""

    __slots__ = ("new", "replays", "on", "probe")

    def __init__(self, learning: bool = True) -> None:
        self.new = 0
        self.replays = 0
        #: learning every new line, else one in PROBE; `learning=False` for a big regular
        #: file, whose lines are mostly new: a first window learned whole cost the 252 MB
        #: bench file 0.1 s a worker (its 4,096 lines read by their handlers), and a file
        #: that repeats itself turns learning on within a window or two of probes
        self.on = learning
        self.probe = 0

    def replayed(self, n: int) -> None:
        self.replays += n

    def learns(self) -> bool:
        self.new += 1
        if self.new >= WINDOW:
            self.on = self.replays >= self.new * (REPLAYED if self.on else REPLAYED_PROBED)
            self.new = self.replays = 0
        if self.on:
            return True
        self.probe += 1
        return self.probe % PROBE == 0

    def unlearned(self) -> int:
        """How many of the next new lines in a row `learns` would not learn: the walker
        reads that many plain lines itself (`lines.scan_plain`) and says how many
        (`skipped`), as if each had been asked."""
        if self.on:
            return 0
        return min(PROBE - 1 - self.probe % PROBE, WINDOW - 1 - self.new)

    def skipped(self, n: int) -> None:
        """`n` new lines were read without asking `learns` (at most `unlearned()`)."""
        self.new += n
        self.probe += n


def learnable(b: Builder) -> bool:
    """Whether the line being handled is to be learned (asked once a line: the sampling
    counts the asking)."""
    raw = b.raw
    if raw is None or b.manual or len(raw) > MAX_LINE or not raw.isascii():
        return False
    return b.sampling is None or b.sampling.learns()


def run(handler: Callable, b: Builder, line: str, lineno: int, *args) -> None:
    """`handler(b, line, lineno, *args)`, learning the line when it is safe to replay.

    Only handlers whose result depends on nothing but the line and the module state (its
    meshes, the dialect, the enclosing manual axes) may run through here."""
    if not learnable(b):
        handler(b, line, lineno, *args)
        return
    m = b.module
    findings = b.report.findings
    n_found = len(findings)
    token = b.mesh_token
    if m is None:
        handler(b, line, lineno, *args)
        if b.module is None and len(findings) == n_found and b.mesh_token == token:
            _learn(b, None)
        return
    items = m.items
    n = len(items)
    handler(b, line, lineno, *args)
    if b.module is not m or len(findings) != n_found or b.mesh_token != token or b.manual:
        return
    if len(items) == n:
        _learn(b, None)
        return
    _learn(b, _entry(b, items, n))


def read_plain(b: Builder, raw: bytes, lineno: int) -> bool:
    """The new line `raw` when it is a plain constraint or op line whose sharding has a
    prototype (`lines.plain_line`): its value appended as the walker appends it, then
    learned as `run` learns what its handler gives (the same value: the walker reads such
    lines so while a streamed file is not learning). False, nothing done, for any other
    line. A handler took about 20 us a line, a fifth of a streamed file's scan when one
    line in 16 was learned; this takes about 2. Only in an MLIR module outside manual
    regions, where the walker reads plain lines."""
    m = b.module
    if m is None or b.manual or m.dialect != "mlir":
        return False
    protos = b.cache.kept_protos(b.mesh_token)
    items = m.items
    n = len(items)
    if not protos or not plain_line(raw, lineno, protos, m.lines, items):
        return False
    b.raw = raw
    if learnable(b):
        _learn(b, _entry(b, items, n))
    return True


def _entry(b: Builder, items: list, n: int) -> LineValues:
    """The values the line being learned added, `items[n:]`, as the entry its later
    occurrences replay: they become that entry in the module's columns, and each occurrence
    gets its line from the column. A probe (one line in PROBE while a streamed file is not
    learning) leaves them the module's own and learns copies: a file of new lines never
    replays them, and its modules then hold values of their own only, which the checks key
    all at once (as shared entries, a tenth of a big file's values were each looked up by
    every rule)."""
    if b.sampling is not None and not b.sampling.on:
        return LineValues(tuple(at_line(v, 0) for v in items[n:]))
    protos = items[n:]
    for v in protos:
        v.line = 0
    entry = LineValues(tuple(protos))
    del items[n + 1 :]
    items[n] = entry
    del b.module.lines[n + 1 :]  # type: ignore[union-attr]
    return entry


def nothing(b: Builder) -> None:
    """The line being handled yields nothing in this state, whatever its text says."""
    if learnable(b):
        _learn(b, None)


def _learn(b: Builder, entry: LineValues | None) -> None:
    m = b.module
    cache = b.cache
    cache.learn(b.mesh_token, m.dialect if m is not None else None, b.raw, entry)  # type: ignore[arg-type]
