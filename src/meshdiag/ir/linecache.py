"""Replay what a line produced the last time the same line was read.

Pass dumps print the same module again and again (every pass that changes nothing), so most
annotated lines repeat verbatim. A line handler runs against a `Recorder`; the recorded
values and problems are replayed into the real builder at each occurrence, with the line
number of that occurrence. The cache is bounded by about what it holds (`MAX_COST`).

The common case never gets here: a recording that only adds values is also entered in the
module state's `fast_known` dict (raw line → its shared LineValues, or None for a line
that yields nothing), from which the native scanner appends occurrences to the module's
columns by itself.
"""

from __future__ import annotations

from collections.abc import Callable

from meshdiag.ir.annot import MeshKey, Parsed
from meshdiag.ir.builder import make_value
from meshdiag.ir.model import LineValues, Value

#: lines longer than this are handled directly, never cached
MAX_LINE = 16384
#: what the cache may hold before it is emptied, in bytes as `_cost` counts them: a file
#: with no repeated line caches every line it reads, and must not grow with its size
MAX_COST = 32 << 20
#: about what a recording costs besides its line's text (measured with tracemalloc: the
#: Recorder, key and LineValues; each Value with its parsed shape)
RECORDING_COST = 400
VALUE_COST = 600


class Recorder:
    """Looks like a Builder to line handlers that only add values and problems."""

    def __init__(self, mesh_key: MeshKey, manual_axes: tuple[str, ...], token: int) -> None:
        self.mesh_key = mesh_key
        self.mesh_token = token
        self.manual_axes = manual_axes
        #: (value as read from the line, its parse error and offset) in emission order
        self.values: list[tuple[Value, tuple[str, int] | None]] = []
        self.problems: list[tuple[str, int | None]] = []  # (message, column)
        self.errors = False  # some value has a parse error (replayed as a problem)
        #: the values as one column entry (set when the recording is complete)
        self.line_values: LineValues | None = None

    def value(self, name, line, column, text, notation, parsed: Parsed, **kw) -> None:
        # the parse error is replayed by Builder.replay_value itself
        proto = make_value(name, 0, column, text, notation, parsed, **kw)
        err = (parsed.error, parsed.offset) if parsed.error is not None else None
        self.values.append((proto, err))
        self.errors = self.errors or err is not None

    def problem(self, message: str, line: int | None, column: int | None = None) -> None:
        self.problems.append((message, column))


_cache: dict[tuple, Recorder] = {}
_chars = 0
#: the recordings the native scanner may append by itself, per module state
#: (`fast_known`): raw ASCII line → LineValues, for recordings that only add values
_fast: dict[tuple[int, str | None], dict[bytes, LineValues | None]] = {}
#: what `fast_known` gives where nothing may be appended without the builder (no module yet,
#: inside a manual region): never written to
NOTHING: dict[bytes, LineValues | None] = {}


def state(b) -> tuple:
    """What a line's recording depends on besides its text: the module's meshes (by token,
    see builder.mesh_token), the enclosing manual axes, and the dialect (it picks the
    handler)."""
    m = b.module
    return (b.mesh_token, b.manual_axes, m.dialect if m is not None else None)


def run(handler: Callable, b, line: str, lineno: int, *args) -> None:
    """`handler(b, line, lineno, *args)`, through the cache.

    Only handlers whose result depends on nothing but the line and `state(b)` may run
    through here.
    """
    global _chars
    if len(line) > MAX_LINE:
        handler(b, line, lineno, *args)
        return
    # keyed by the raw bytes of the line when the scanner gave them (it replays before
    # decoding), else by the text
    raw = getattr(b, "raw", None)
    key = (raw if raw is not None else line, *state(b))
    rec = _cache.get(key)
    if rec is None:
        rec = Recorder(b.mesh_key, b.manual_axes, b.mesh_token)
        handler(rec, line, 0, *args)
        rec.line_values = LineValues(tuple(v for v, _ in rec.values))
        if _chars > MAX_COST:
            clear()
        _cache[key] = rec
        # the line is kept twice: the key's bytes, and the values' texts
        _chars += 2 * len(line) + RECORDING_COST + VALUE_COST * len(rec.values)
        if raw is not None and not rec.problems and not rec.errors and raw.isascii():
            known = fast_known(b)
            if known is NOTHING:  # no module, or in a manual region: values need the builder
                pass
            elif not rec.values:
                known[raw] = None
            elif b.module is not None:
                known[raw] = rec.line_values
    play(rec, b, lineno)


def fast_known(b) -> dict[bytes, LineValues | None]:
    """The lines the scanner may replay into `b`'s current module without asking: raw
    line → its values, or None for a line known to yield nothing (`lines.scan_known`'s
    `known`). Values are only added while there is a module."""
    if b.manual:
        return NOTHING
    m = b.module
    key = (b.mesh_token, m.dialect if m is not None else None)
    known = _fast.get(key)
    if known is None:
        known = _fast[key] = {}
    return known


def nothing(b) -> None:
    """The line being handled (`b.raw`) yields nothing in this state, whatever its text
    says: the scanner may skip it from now on."""
    global _chars
    raw = b.raw
    if raw is not None and raw.isascii() and len(raw) <= MAX_LINE:
        known = fast_known(b)
        if known is not NOTHING:
            if _chars > MAX_COST:
                clear()
                known = fast_known(b)
            known[raw] = None
            _chars += len(raw) + 100


def lookup(b, raw: bytes) -> Recorder | None:
    """The recording of a raw line in `b`'s state; None when not cached."""
    return _cache.get((raw, *state(b)))


def replay(b, line: str | bytes, lineno: int) -> bool:
    """Replay a cached line (its raw bytes, as the scanner reads it) into `b`; False when
    the line is not cached."""
    if not _cache:
        return False
    rec = _cache.get((line, *state(b)))
    if rec is None:
        return False
    play(rec, b, lineno)
    return True


def play(rec: Recorder, b, lineno: int) -> None:
    """Replay a recording into `b` at `lineno`."""
    if rec.problems:
        for message, column in rec.problems:
            b.problem(message, lineno, column)
    if not rec.values:
        return
    m = b.module
    if m is None or b.manual or rec.errors:  # the general path: Builder.replay_value
        add = b.replay_value
        for proto, err in rec.values:
            add(proto, err, lineno)
        return
    # the common case: one column entry shared by every occurrence of the line
    m.lines.append(lineno)
    m.items.append(rec.line_values)


def clear() -> None:
    global _chars
    _cache.clear()
    _fast.clear()  # a scan holding one of its dicts asks again after its next line
    _chars = 0
