"""Replay what a line produced the last time the same line was read.

Pass dumps print the same module again and again (every pass that changes nothing), so most
annotated lines repeat verbatim. A line handler runs against a `Recorder`; the recorded
values and problems are replayed into the real builder at each occurrence, with the line
number of that occurrence. The cache is bounded by the characters it holds.
"""

from __future__ import annotations

from collections.abc import Callable

from .annot import MeshKey, Parsed
from .builder import make_value
from .model import Value

_new_value = object.__new__

#: lines longer than this are handled directly, never cached
MAX_LINE = 16384
#: total characters of cached lines before the cache is emptied
MAX_CHARS = 16 << 20


class Recorder:
    """Looks like a Builder to line handlers that only add values and problems."""

    def __init__(self, mesh_key: MeshKey, manual_axes: tuple[str, ...], token: int) -> None:
        self.mesh_key = mesh_key
        self.mesh_token = token
        self.manual_axes = manual_axes
        #: (value as read from the line, its parse error and offset) in emission order
        self.values: list[tuple[Value, tuple[str, int] | None]] = []
        #: the values' attribute dicts, in the same order (what `play` copies)
        self.dicts: list[dict] = []
        self.problems: list[tuple[str, int | None]] = []  # (message, column)
        self.errors = False  # some value has a parse error (replayed as a problem)

    def value(self, name, line, column, text, notation, parsed: Parsed, **kw) -> None:
        # the parse error is replayed by Builder.replay_value itself
        proto = make_value(name, 0, column, text, notation, parsed, **kw)
        err = (parsed.error, parsed.offset) if parsed.error is not None else None
        self.values.append((proto, err))
        self.dicts.append(proto.__dict__)
        self.errors = self.errors or err is not None

    def problem(self, message: str, line: int | None, column: int | None = None) -> None:
        self.problems.append((message, column))


_cache: dict[tuple, Recorder] = {}
_chars = 0


def run(handler: Callable, b, line: str, lineno: int, *args) -> None:
    """`handler(b, line, lineno, *args)`, through the cache.

    Only handlers whose result depends on nothing but the line, the module's meshes and the
    enclosing manual axes may run through here (the key holds exactly those).
    """
    global _chars
    if len(line) > MAX_LINE:
        handler(b, line, lineno, *args)
        return
    # keyed by the raw bytes of the line when the scanner gave them (it replays before
    # decoding), else by the text
    raw = getattr(b, "raw", None)
    # the meshes by their token (builder.mesh_token): equal MeshKeys, equal tokens
    key = (raw if raw is not None else line, b.mesh_token, b.manual_axes)
    rec = _cache.get(key)
    if rec is None:
        rec = Recorder(b.mesh_key, b.manual_axes, b.mesh_token)
        handler(rec, line, 0, *args)
        if _chars > MAX_CHARS:
            _cache.clear()
            _chars = 0
        _cache[key] = rec
        _chars += len(line)
    play(rec, b, lineno)


#: the recording of a raw line: `lookup((raw, mesh token, manual axes))`, None when not
#: cached (the scanner's hot loop builds the key itself: one call per line, not two).
#: `_cache` is only ever emptied in place, never rebound, so this stays bound to it
lookup: Callable[[tuple], Recorder | None] = _cache.get


def replay(b, line: str | bytes, lineno: int) -> bool:
    """Replay a cached line (its raw bytes, as the scanner reads it) into `b`; False when
    the line is not cached."""
    if not _cache:
        return False
    rec = _cache.get((line, b.mesh_token, b.manual_axes))
    if rec is None:
        return False
    play(rec, b, lineno)
    return True


def play(rec: Recorder, b, lineno: int) -> None:
    """Replay a recording (from `lookup`) into `b` at `lineno`."""
    if rec.problems:
        for message, column in rec.problems:
            b.problem(message, lineno, column)
    dicts = rec.dicts
    if not dicts:
        return
    m = b.module
    if m is None or b.manual or rec.errors:  # the general path: Builder.replay_value
        add = b.replay_value
        for proto, err in rec.values:
            add(proto, err, lineno)
        return
    # the common case, inlined: copies of the recorded values at this line (a dict copy is
    # the cheapest way to build a Value: no __init__, no per-field assignment)
    append = m.values.append
    for d in dicts:
        v = _new_value(Value)
        d = d.copy()
        d["line"] = lineno
        v.__dict__ = d
        append(v)


def clear() -> None:
    global _chars
    _cache.clear()
    _chars = 0
