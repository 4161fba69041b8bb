"""What one run of the scanner remembers between lines and files: made by the caller of
`scan_path` / `scan_paths` (one per run, passed down; a default one per call), never
module-level, keyed by value (bytes / str / mesh keys), bounded.

- Lines already read, per module state (`lines`): the raw bytes of an ASCII line that
  yielded only values (or nothing) → the values it yielded, as one shared `LineValues`.
  The native walker (`lines.scan_known`) appends a known line's values to the module's
  columns by itself: an every-pass dump prints most annotated lines in pass after pass.
- Each distinct sharding text parsed once (`hlo`, `named`, `per_value`), and each distinct
  HLO shape or MLIR type text read once (`hlo_shapes`, `tensor_type`).
- A prototype Value per distinct sharding text of a plain line, per mesh state
  (`protos`): the native readers make the values of later plain lines with that sharding
  as copies of it (`fields.py`, `fast/_values.c`).
- Each distinct `HloModule` header read once (`module_header`): every pass of a module
  prints the same one (with the whole entry layout); in a table of their own, so headers
  never seen again cannot evict the sharding parses.
- A small number per distinct set of module meshes (`token`): the line memo's state key
  (hashing a MeshKey hashes its meshes, and tuples do not keep their hash).

Everything here is bounded by a byte estimate and starts over past it: a file with no
repeated line must not grow the memo with its size. What a parse holds is weighed
(`held_bytes`: mostly the devices a sharding or mesh lists) and told to the run
(`RunMemos.hold`): every memo keyed by a sharding holds it, so past the run's budget they
all start over, this one too (`clear`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from meshdiag.ir import annot
from meshdiag.ir import prints as _prints
from meshdiag.ir import text as _text
from meshdiag.ir.annot import MeshKey, Parsed
from meshdiag.ir.model import LineValues, Value, from_proto
from meshdiag.memo import Table
from meshdiag.model.mesh import Mesh
from meshdiag.model.sharding import HloSharding, NamedSharding

#: what the line memo may hold (its keys' bytes plus an estimate per value), in bytes
MAX_LINE_BYTES = 16 << 20
#: about what a learned line costs besides its bytes, and each of its values
LINE_COST = 120
VALUE_COST = 400
#: the bytes of a module state's filter of its learned lines (`ir.prints`), and how many
#: the memo holds at most (4 MB)
PRINTS_COST = _prints.PRINT_BITS // 8
MAX_PRINTS = 128
#: lines longer than this are read each time, never learned
MAX_LINE = 16384
#: distinct parses and shapes kept (each entry a few hundred bytes; a run sees tens to
#: thousands of distinct shardings)
MAX_PARSES = 1 << 14
MAX_TOKENS = 4096
#: distinct module headers and mesh declarations kept (a few hundred bytes each, at most
#: `MAX_LINE`; a dump has a few per module)
MAX_HEADERS = 1024
#: what `held_bytes` takes a parse to hold: a listed device (its tuple slot and int, its
#: array once asked for); a device of an iota assignment (its array, and what the memos
#: keyed by the sharding derive from it: tilings, tile orders, renderings; weighed at 8 B,
#: 4,000 meshes of their own held 200 MB within a 64 MB budget); a parsed object besides
#: its devices
LISTED_DEVICE_BYTES = 44
IOTA_DEVICE_BYTES = 44
PARSED_BYTES = 400


class ScanCache:
    """The per-run memo of the scanner (see the module docstring)."""

    __slots__ = (
        "_known",
        "_line_bytes",
        "_n_prints",
        "_tokens",
        "_next_token",
        "_parses",
        "_tiled",
        "_shapes",
        "_headers",
        "_types",
        "_protos",
        "_n_protos",
        "_stream",
    )

    def __init__(self, hold: Callable[[int], None] | None = None) -> None:
        self._known: dict[tuple[int, str | None], tuple[dict[bytes, Any], bytearray | None]] = {}
        self._line_bytes = 0
        self._n_prints = 0  # states with a filter (`learn`)
        self._tokens: dict[MeshKey, int] = {(): 0}
        self._next_token = 1
        self._parses = ParseTable(MAX_PARSES, hold, held_bytes)
        #: one object per distinct tiled form parsed (`_same_tiled`)
        self._tiled: dict[tuple, HloSharding] = {}
        self._shapes: dict[str, list] = {}
        self._headers = Table(MAX_HEADERS)
        self._types: dict[str, tuple] = {}
        self._protos: dict[int, dict[str, Value]] = {}
        self._n_protos = 0
        self._stream: tuple[str, Any] | None = None  # (path, its sampling): `sampling`

    def clear(self) -> None:
        """Forget everything but the numbers given to mesh keys (`token`: a number is never
        given again, so one a caller still holds can only miss)."""
        self._known.clear()
        self._line_bytes = self._n_prints = 0
        self._tokens.clear()
        self._tokens[()] = 0
        self._parses.clear()
        self._tiled.clear()
        self._shapes.clear()
        self._headers.clear()
        self._types.clear()
        self._protos.clear()
        self._n_protos = 0
        self._stream = None

    # -- streams ---------------------------------------------------------------------------
    def sampling(self, path: str, make: Callable[[], Any]) -> Any:
        """Which new lines a streamed scan of `path` learns (`linememo.Sampling`, made by
        `make`): the last one's again when it was of the same path. A worker reading
        parts of a big file one after another (`ir.parts`) then goes on from where its
        last part left off, instead of learning every line of a first window again in
        each part as if the file might repeat itself (4,096 lines read by their handlers,
        about 20 ms a part of the 252 MB bench file)."""
        last = self._stream
        if last is not None and last[0] == path:
            return last[1]
        sampling = make()
        self._stream = (path, sampling)
        return sampling

    # -- lines -----------------------------------------------------------------------------
    def lines(self, token: int, dialect: str | None) -> tuple[dict[bytes, Any], bytearray | None]:
        """The lines learned in one module state, meshes (`token`) and dialect: what each
        yields (a `LineValues`, or None: nothing), and the filter of them the walkers ask
        first (each one's bit set, `ir.prints`: a line whose bit is clear is not looked up);
        None until a line is learned there (the walkers look nothing up in an empty dict)."""
        key = (token, dialect)
        got = self._known.get(key)
        if got is None:
            got = self._known[key] = ({}, None)
        return got

    def learn(self, token: int, dialect: str | None, raw: bytes, item: LineValues | None) -> None:
        """`raw` yields `item` (None: nothing) in the module state (`lines`). A state's
        filter is made with its first line learned, at most MAX_PRINTS of them before the
        memo starts over (made for every state the walker asked about, 4,000 modules on
        meshes of their own held 128 MB of filters)."""
        key = (token, dialect)
        cost = len(raw) + LINE_COST + (VALUE_COST * len(item.protos) if item is not None else 0)
        known, prints = self._known.get(key) or ({}, None)
        if self._line_bytes + cost > MAX_LINE_BYTES or (
            prints is None and self._n_prints >= MAX_PRINTS
        ):
            self._known.clear()  # (the walker asks again at its next call)
            self._line_bytes = self._n_prints = 0
            known, prints = {}, None
        if prints is None:
            prints = bytearray(PRINTS_COST)
            self._n_prints += 1
            self._known[key] = (known, prints)
        known[raw] = item
        _prints.mark(prints, raw)
        self._line_bytes += cost

    def token(self, key: MeshKey) -> int:
        """A number per distinct MeshKey; never reused within the run (a number dropped
        when the table starts over is not given again, so a stale one can only miss)."""
        t = self._tokens.get(key)
        if t is None:
            if len(self._tokens) >= MAX_TOKENS:
                self._tokens.clear()
                self._tokens[()] = 0
                self._known.clear()
                self._line_bytes = self._n_prints = 0
                self._protos.clear()
                self._n_protos = 0
            t = self._tokens[key] = self._next_token
            self._next_token += 1
        return t

    # -- prototypes of plain lines' values ------------------------------------------------
    def protos(self, token: int) -> dict[str, Value]:
        """The prototypes of one mesh state (`token`) outside manual regions: sharding text
        → a Value whose fields, besides name, line, column, shape, dtype, kind and op, are
        those of every plain constraint or op line or signature entry with that sharding there."""
        d = self._protos.get(token)
        if d is None:
            d = self._protos[token] = {}
        return d

    def kept_protos(self, token: int) -> dict[str, Value] | None:
        """`protos(token)` when there is a dict of them, else None (asking does not add one)."""
        return self._protos.get(token)

    def keep_proto(self, token: int, text: str, v: Value) -> None:
        """Keep a copy of `v`, the value of a plain line read the general way, as the
        prototype of its sharding `text` in state `token` (the caller checked that it is
        one: parsed without error, outside manual regions, its shape its own)."""
        d = self.protos(token)
        if text in d:
            return
        if self._n_protos >= MAX_PARSES:
            self._protos.clear()
            self._n_protos = 0
            d = self.protos(token)
        d[text] = from_proto(v, v.name, 0, v.column, v.shape, v.dtype, v.kind, v.op)
        self._n_protos += 1

    # -- parses ----------------------------------------------------------------------------
    def module_header(self, read, raw: bytes) -> tuple:
        """`read(raw)`: an `HloModule` header line read once per distinct line."""
        return self._headers.call(read, raw)

    def structure(self, read, line: str):
        """`read(line)` once per distinct line of at most `MAX_LINE` characters (longer
        ones are read each time): the MLIR handlers' readers of a module header or a mesh
        declaration, which a pass dump prints again in every file of a module."""
        if len(line) > MAX_LINE:
            return read(line)
        return self._headers.call(read, line)

    def hlo(self, text: str) -> list[Parsed]:
        """The per-value records of a GSPMD sharding text (tuple elements flattened)."""
        key = ("hlo", text)
        hit = self._parses.get(key)
        if hit is None:
            parsed = [self._same_tiled(p) for p in annot.leaves(annot.parse_hlo_text(text))]
            hit = self._parses.keep(key, parsed, text)
        return hit  # type: ignore[return-value]

    def named(self, text: str, meshes: MeshKey, manual_axes: tuple[str, ...], token: int) -> Parsed:
        """One Shardy sharding (`#sdy.sharding<...>` or `<@mesh, [...]>`) on `meshes`,
        whose number in this run is `token` (`token(meshes)`: the key hashes the number,
        not the meshes)."""
        key = ("sdy", text, token, manual_axes)
        hit = self._parses.get(key)
        if hit is None:
            parsed = self._same_tiled(annot.parse_named(text, meshes, manual_axes))
            hit = self._parses.keep(key, parsed, text)
        return hit  # type: ignore[return-value]

    def per_value(
        self, text: str, meshes: MeshKey, manual_axes: tuple[str, ...] = ()
    ) -> tuple[list[Parsed], str | None, int]:
        """`annot.parse_per_value` of a `#sdy.sharding_per_value<[...]>` text on `meshes`,
        once per distinct arguments."""
        key = ("per_value", text, meshes, manual_axes)
        hit = self._parses.get(key)
        if hit is None:
            items, err, off = annot.parse_per_value(text, meshes, manual_axes)
            hit = ([self._same_tiled(p) for p in items], err, off)
            hit = self._parses.keep(key, hit, text)
        return hit  # type: ignore[return-value]

    def _same_tiled(self, parsed: Parsed) -> Parsed:
        """`parsed` with its tiled form as the one object this run keeps for it: a sharding
        parsed again in another mesh state (a module declaring one more mesh), or inside
        a per-value list, has the same tiled form, and the memos keyed by a tiled form then
        find it by identity instead of comparing every field (28,000 comparisons, 2% of
        `inspect` of the dumps' Shardy passes). Only a form the same in every field is
        shared, the ones equality leaves out too (its metadata, the named form it was read
        from and its mesh's name, its tile assignment's spelling)."""
        h = parsed.hlo
        if h is None or h.elements:
            return parsed
        t, named = h.tile, h.named
        # (equality leaves out a mesh's name too)
        mesh = None if named is None or named.mesh is None else named.mesh.name
        key = (h, h.metadata, named, mesh, None if t is None else (t.reshape, t.perm, t.explicit))
        tiled = self._tiled
        same = tiled.get(key)
        if same is None:
            if len(tiled) >= MAX_PARSES:
                tiled.clear()
            tiled[key] = h
            return parsed
        if same is h:
            return parsed
        if parsed.sharding is h:  # a GSPMD text's record: its sharding is its tiled form
            return replace(parsed, sharding=same, hlo=same)
        return replace(parsed, hlo=same)

    def call(self, fn, *args):
        """`fn(*args)` once per distinct arguments: the handlers' parsers of a mesh
        declaration (whose first argument is the text)."""
        return self._parses.call(fn, *args)

    def tensor_type(self, text: str) -> tuple[tuple[int, ...] | None, str | None]:
        """(shape, dtype) of the first `tensor<...>` of an MLIR type text ((None, None) when
        there is none), once per distinct text: every op line spells its result type again."""
        hit = self._types.get(text)
        return hit if hit is not None else _remember(self._types, text, _text.tensor_type)

    def hlo_shapes(self, text: str) -> list:
        """`text.hlo_shapes(text)`, once per distinct shape text."""
        hit = self._shapes.get(text)
        return hit if hit is not None else _remember(self._shapes, text, _text.hlo_shapes)


class ParseTable(Table):
    """A `Table` of parses that tells `hold` what each new one holds (`weigh(parsed)`,
    plus the length of the text parsed, a call's first argument) as it keeps it: told
    first, so that the run's memos starting over keeps this one."""

    __slots__ = ("hold", "weigh")

    def __init__(
        self, limit: int, hold: Callable[[int], None] | None, weigh: Callable[[Any], int]
    ) -> None:
        super().__init__(limit)
        self.hold = hold
        self.weigh = weigh

    def keep(self, key: Any, parsed: Any, text: Any) -> Any:
        """Keep `parsed`, the parse of `text`, under `key`; returns it."""
        if self.hold is not None:
            self.hold(self.weigh(parsed) + (len(text) if isinstance(text, str) else 0))
        return self.put(key, parsed)

    def call(self, fn: Callable, *args: Any) -> Any:
        key = (fn, *args)
        hit = self.data.get(key, _MISSING)
        if hit is _MISSING:
            hit = self.keep(key, fn(*args), args[0] if args else None)
        return hit


_MISSING = object()


def held_bytes(parsed: Any) -> int:
    """About the bytes a parse result holds beyond its text: its shardings' and meshes'
    devices (`LISTED_DEVICE_BYTES` a listed one, `IOTA_DEVICE_BYTES` one of an iota
    assignment) and `PARSED_BYTES` an object; through lists, tuples and `Parsed`."""
    if isinstance(parsed, HloSharding):
        n = PARSED_BYTES
        tile = parsed.tile
        if tile is not None:
            listed = tile.explicit is not None
            n += tile.num_devices * (LISTED_DEVICE_BYTES if listed else IOTA_DEVICE_BYTES)
        for e in parsed.elements:
            n += held_bytes(e)
        return n
    if isinstance(parsed, Parsed):  # (a GSPMD parse's `hlo` is its sharding)
        n = held_bytes(parsed.hlo)
        return n if parsed.sharding is parsed.hlo else n + held_bytes(parsed.sharding)
    if isinstance(parsed, (list, tuple)):
        return sum(held_bytes(p) for p in parsed)
    if isinstance(parsed, Mesh):  # (an iota mesh's `ids` may be listed later: as listed)
        return PARSED_BYTES + LISTED_DEVICE_BYTES * parsed.size
    if isinstance(parsed, NamedSharding):
        return PARSED_BYTES  # (its mesh is weighed where it is parsed)
    return 0


def _remember(memo: dict, key: str, read: Callable[[str], Any]) -> Any:
    """`read(key)`, kept in `memo` (which starts over past `MAX_PARSES` entries); the
    lookup that missed stays in the caller (a hit costs no call)."""
    if len(memo) >= MAX_PARSES:
        memo.clear()
    hit = memo[key] = read(key)
    return hit
