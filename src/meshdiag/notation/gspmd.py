"""GSPMD `HloSharding` text (V1 explicit device lists, V2 iota): parse, print, validate.

The grammar follows XLA's `HloParserImpl::ParseSingleSharding` and the normalisation is
XLA's (`meshdiag.model.normalize`: `HloSharding::Subgroup` / `PartialTile`), so that
`print_gspmd(parse_gspmd(s))` is exactly what `xla_client.HloSharding.from_string(s)` prints.
Lenient extras over XLA: the old `maximul` subgroup spelling, a leading tile shape
(`{f32[7,11] devices=...}`), `<=[2,4]` without `T(...)` (identity perm), nested tuples
(flattened), an explicit list of one device (→ replicated, as `FromProto` does).
V3 named leaves (`{mesh[...], ...}`) are handed to `meshdiag.notation.gspmd_v3`.

The scanner is hand-written: one pass over the string, no backtracking.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace

from meshdiag.errors import LimitError, MeshdiagError, ParseError
from meshdiag.limits import MAX_DEVICES, MAX_NESTING, check_annotation_length, check_device_count
from meshdiag.model.normalize import iota_tile, subgroup
from meshdiag.model.sharding import HloSharding
from meshdiag.model.tiles import TileAssignment
from meshdiag.notation.gspmd_v3 import parse_v3_leaf

__all__ = ["canonical_gspmd", "parse_gspmd", "print_gspmd", "validate_hlo"]

_INT64_MAX = (1 << 63) - 1
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INT = re.compile(r"-?[0-9]+")
#: the body of an explicit device list: digits, signs, commas, blanks (single class: linear)
_LIST_RUN = re.compile(r"[0-9,\- \t\r\n]*")
_WS = " \t\r\n"
_WS_OR_SLASH = " \t\r\n/"

_FLAGS = ("replicated", "maximal", "manual", "unknown", "unreduced")
#: subgroup type names XLA's `ParseOpShardingType` accepts, plus the old `maximul` typo
_SUBGROUP_NAMES = {
    "manual": "manual",
    "replicated": "replicated",
    "unreduced": "unreduced",
    "maximal": "maximal",
    "maximul": "maximal",
}


# -- scanner ------------------------------------------------------------------------------


class _Scanner:
    __slots__ = ("text", "pos", "n")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.n = len(text)

    def fail(self, expected: str, pos: int | None = None) -> ParseError:
        p = self.pos if pos is None else pos
        found = repr(self.text[p]) if p < self.n else "end of text"
        return ParseError(expected, self.text, p, found=found)

    def skip_ws(self) -> None:
        """Skip blanks and `/* */` / `//` comments, as XLA's lexer does."""
        text, n = self.text, self.n
        pos = self.pos
        if pos < n and text[pos] not in _WS_OR_SLASH:
            return
        while pos < n:
            c = text[pos]
            if c in _WS:
                pos += 1
            elif c == "/" and pos + 1 < n and text[pos + 1] == "*":
                end = text.find("*/", pos + 2)
                if end < 0:
                    self.pos = pos
                    raise self.fail("'*/' to close the comment")
                pos = end + 2
            elif c == "/" and pos + 1 < n and text[pos + 1] == "/":
                end = text.find("\n", pos + 2)
                pos = n if end < 0 else end + 1
            else:
                break
        self.pos = pos

    def peek(self) -> str:
        self.skip_ws()
        return self.text[self.pos] if self.pos < self.n else ""

    def expect(self, c: str, what: str | None = None) -> None:
        if self.peek() != c:
            raise self.fail(what or f"'{c}'")
        self.pos += 1

    def ident(self) -> str | None:
        m = _IDENT.match(self.text, self.pos)
        if m is None:
            return None
        self.pos = m.end()
        return m.group()

    def int(self, what: str = "an integer") -> int:
        self.skip_ws()
        m = _INT.match(self.text, self.pos)
        if m is None:
            raise self.fail(what)
        digits = m.group()
        # refuse before converting: int() of thousands of digits is slow (or refused)
        if len(digits.lstrip("-")) > 19 or abs(int(digits)) > _INT64_MAX:
            raise ParseError("an integer that fits in 64 bits", self.text, self.pos)
        self.pos = m.end()
        return int(digits)

    def int_list(self, close: str, what: str) -> list[int]:
        """`int (',' int)*` then `close`; the opening bracket is already consumed."""
        end = self.text.find(close, self.pos)
        if 0 <= end - self.pos <= 64:  # fast path: short plain `1,2,3`
            parts = self.text[self.pos : end].split(",")
            if all(p.isascii() and p.isdigit() and len(p) <= 18 for p in parts):
                self.pos = end + 1
                return [int(p) for p in parts]
        out = [self.int(what)]
        while self.more(close, f"',' or '{close}'"):
            out.append(self.int(what))
        return out

    def more(self, close: str, what: str) -> bool:
        """After a list item: consume ',' (True, another item follows) or `close` (False)."""
        c = self.peek()
        if c == ",":
            self.pos += 1
            return True
        if c == close:
            self.pos += 1
            return False
        raise self.fail(what)

    def balanced(self) -> int:
        """Position just past the '}' closing the brace opened before `pos`.

        Double-quoted strings (with C escapes) may hold braces and commas.
        """
        text, n = self.text, self.n
        depth = 1
        pos = self.pos
        while pos < n:
            c = text[pos]
            if c == '"':
                pos += 1
                while pos < n and text[pos] != '"':
                    pos += 2 if text[pos] == "\\" else 1
                if pos >= n:
                    raise ParseError("'\"' to close the string", text, n)
            elif c == "{":
                depth += 1
                if depth > MAX_NESTING:
                    raise _nesting_error(text, pos)
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return pos + 1
            pos += 1
        raise ParseError("'}'", text, n, found="end of text")


def _nesting_error(text: str, pos: int) -> LimitError:
    return LimitError(
        f"sharding nests brackets deeper than the limit of {MAX_NESTING} at column "
        f"{pos + 1} (raise it with MESHDIAG_MAX_NESTING)"
    )


# -- parsing ------------------------------------------------------------------------------


#: XLA's own V2 print of a plain tiled leaf: parsed without the scanner (a fixed pattern of
#: digit runs and literals, so matching is linear)
_FAST_V2 = re.compile(
    r"\{devices=\[([0-9,]{1,64})\]<=\[([0-9,]{1,64})\](?:T\(([0-9,]{1,64})\))?"
    r"( last_tile_dim_replicate)?\}"
)


def parse_gspmd(text: str) -> HloSharding:
    """Parse GSPMD HloSharding text (the whole string) into a normalised `HloSharding`."""
    check_annotation_length(text, "sharding")
    m = _FAST_V2.fullmatch(text)
    if m is not None:
        fast = _fast_v2(m)
        if fast is not None:
            return fast
    sc = _Scanner(text)
    result = _parse_sharding(sc, 0)
    if sc.peek() != "":
        raise sc.fail("end of the sharding")
    return result


def _fast_v2(m: re.Match[str]) -> HloSharding | None:
    """The common canonical case; None sends the text to the full parser (and its errors)."""
    try:
        dims = [int(x) for x in m.group(1).split(",")]
        reshape = [int(x) for x in m.group(2).split(",")]
        perm = [int(x) for x in m.group(3).split(",")] if m.group(3) else list(range(len(reshape)))
    except ValueError:
        return None
    n = math.prod(dims)
    if (
        min(dims) < 1
        or min(reshape) < 1
        or n > MAX_DEVICES
        or math.prod(reshape) != n
        or sorted(perm) != list(range(len(reshape)))
    ):
        return None
    tile = iota_tile(dims, reshape, perm)
    if m.group(4):
        return subgroup(tile, ("replicated",))
    return HloSharding.tiled(tile)


def _parse_sharding(sc: _Scanner, depth: int) -> HloSharding:
    if depth >= MAX_NESTING:
        raise _nesting_error(sc.text, sc.pos)
    start = sc.pos
    sc.expect("{", "'{' to start a sharding")
    c = sc.peek()
    if c == "}":  # empty tuple
        sc.pos += 1
        return HloSharding.tuple_of(())
    if c != "{":
        return _parse_leaf_body(sc, start)
    elements: list[HloSharding] = []
    while True:
        element = _parse_sharding(sc, depth + 1)
        # nested tuples are flattened (XLA's parser rejects them; its printer never makes them)
        elements.extend(element.elements if element.is_tuple else (element,))
        if not sc.more("}", "',' or '}' in a tuple sharding"):
            return HloSharding.tuple_of(elements)
        if sc.peek() != "{":
            raise sc.fail("'{' to start a tuple element")


def _is_v3_start(text: str, pos: int) -> bool:
    return text.startswith("mesh[", pos) or text.startswith("maximal_mesh[", pos)


def _parse_leaf_body(sc: _Scanner, open_pos: int) -> HloSharding:
    """Items of one `{...}` sharding, in any order; `open_pos` is its '{'."""
    text = sc.text
    if _is_v3_start(text, sc.pos):
        leaf, end = parse_v3_leaf(text, open_pos)
        sc.pos = end
        return leaf

    flags: set[str] = set()
    device: int | None = None
    devices_pos: int | None = None
    tile: TileAssignment | None = None
    tile_single: int | None = None  # explicit list of one device
    replicate_on_last = False
    types: tuple[str, ...] | None = None
    types_pos = 0
    shard_group: tuple[str, int] | None = None
    metadata: tuple[str, ...] = ()
    body_pos = sc.pos

    while True:
        c = sc.peek()
        item_pos = sc.pos
        if c == "}":
            sc.pos += 1
            break
        if c == "":
            raise sc.fail("'}' to close the sharding")
        name = sc.ident()
        if name is None:
            raise sc.fail("a sharding keyword or '}'")
        if sc.pos < sc.n and text[sc.pos] == "=":  # `name=` is one attribute token
            sc.pos += 1
            if name == "device":
                device = sc.int("a device id")
                devices_pos = item_pos
            elif name == "devices":
                if tile is not None or tile_single is not None:
                    raise ParseError("one devices= per sharding", text, item_pos)
                devices_pos = item_pos
                tile, tile_single = _parse_tile_assignment(sc)
            elif name == "last_tile_dims":
                types_pos = item_pos
                types = _parse_subgroup_types(sc)
            elif name == "metadata":
                metadata = _parse_metadata(sc)
            else:
                raise ParseError("device=, devices=, last_tile_dims= or metadata=", text, item_pos)
        elif name in _FLAGS:
            flags.add(name)
        elif name == "last_tile_dim_replicate":
            replicate_on_last = True
        elif name in ("shard_as", "shard_like"):
            shard_group = (name, sc.int(f"a shard group id after {name}"))
        elif sc.pos < sc.n and text[sc.pos] == "[" and item_pos == body_pos:
            # very old XLA printed the tile shape first: `{f32[7,11] devices=...}`
            sc.pos += 1
            sc.int_list("]", "a dimension size")
        else:
            raise ParseError(
                "a sharding keyword (replicated, maximal, manual, unknown, unreduced, "
                "devices=, last_tile_dim_replicate, last_tile_dims=, shard_as, shard_like, "
                "metadata=)",
                text,
                item_pos,
                found=repr(name),
            )

    has_devices = device is not None or tile is not None or tile_single is not None
    if "replicated" in flags:
        if has_devices:
            raise ParseError("no devices in a replicated sharding", text, devices_pos or open_pos)
        result = HloSharding.replicated()
    elif "maximal" in flags:
        if tile is not None and tile_single is None:
            raise ParseError(
                "exactly one device in a maximal sharding", text, devices_pos or open_pos
            )
        dev = device if device is not None else tile_single
        if dev is None:
            raise ParseError("device= in a maximal sharding", text, sc.pos - 1)
        result = HloSharding.maximal(dev)
    elif "manual" in flags:
        if has_devices:
            raise ParseError("no devices in a manual sharding", text, devices_pos or open_pos)
        result = HloSharding("manual")
    elif "unknown" in flags:
        result = HloSharding("unknown")
    elif "unreduced" in flags:
        result = HloSharding("unreduced")
    else:
        if device is not None:
            raise ParseError("'maximal' with device= (or devices= for a tiling)", text, devices_pos)
        if tile is None and tile_single is None:
            raise ParseError(
                "devices=[...] (a tiled sharding needs a tile assignment)", text, sc.pos - 1
            )
        if replicate_on_last and types is not None:
            raise ParseError(
                "either last_tile_dim_replicate or last_tile_dims=, not both", text, types_pos
            )
        if tile is None:
            # one device: XLA's FromProto turns such a tiling into a replicated sharding
            result = HloSharding.replicated()
        else:
            sub = ("replicated",) if replicate_on_last else (types or ())
            if sub and len(sub) > tile.rank:
                raise ParseError(
                    f"at most {tile.rank} subgroup dims for a rank-{tile.rank} tile assignment",
                    text,
                    types_pos or devices_pos or open_pos,
                )
            result = subgroup(tile, sub) if sub else HloSharding.tiled(tile)
    if shard_group is not None or metadata:
        result = replace(result, shard_group=shard_group, metadata=metadata)
    return result


def _parse_tile_assignment(sc: _Scanner) -> tuple[TileAssignment | None, int | None]:
    """`[dims]<=[reshape]T(perm)` or `[dims]d0,d1,...`; returns (tile, single device)."""
    text = sc.text
    sc.expect("[", "'[' to start the tile assignment dims")
    dims_pos = sc.pos
    dims = sc.int_list("]", "a tile assignment dim")
    for d in dims:
        if d < 1:
            raise ParseError("tile assignment dims that are all positive", text, dims_pos)
    n = math.prod(dims)
    check_device_count(n, f"tile assignment at column {dims_pos + 1}")  # before any allocation
    sc.skip_ws()
    if text.startswith("<=", sc.pos):
        sc.pos += 2
        sc.expect("[", "'[' to start the iota reshape dims")
        reshape_pos = sc.pos
        reshape = sc.int_list("]", "an iota reshape dim")
        if any(r < 1 for r in reshape) or math.prod(reshape) != n:
            raise ParseError(
                f"iota reshape dims that are positive and hold the {n} devices of "
                f"[{','.join(map(str, dims))}]",
                text,
                reshape_pos,
            )
        perm: list[int] | None = None
        if sc.peek() == "T":
            t_pos = sc.pos
            sc.pos += 1
            if sc.peek() != "(":
                raise sc.fail("'(' after T")
            sc.pos += 1
            perm = sc.int_list(")", "an iota transpose index")
            if sorted(perm) != list(range(len(reshape))):
                raise ParseError(f"a transpose that permutes 0..{len(reshape) - 1}", text, t_pos)
        # lenient: XLA requires T(...) when there is more than one reshape dim
        return iota_tile(dims, reshape, perm if perm is not None else range(len(reshape))), None
    # explicit device list
    list_pos = sc.pos
    devices = _device_list(sc, n)
    if len(devices) != n:
        raise ParseError(
            f"{n} device ids for tile assignment [{','.join(map(str, dims))}] "
            f"(the list has {len(devices)})",
            text,
            list_pos,
        )
    if n == 1:
        return None, devices[0]
    return TileAssignment.from_devices(dims, devices), None


def _device_list(sc: _Scanner, n: int) -> list[int]:
    """The explicit device list; fast path for a clean run of `int,int,...`."""
    text = sc.text
    start = sc.pos
    end = _LIST_RUN.match(text, start).end()
    run = text[start:end]
    parts = run.split(",")
    if len(parts) > n:
        raise ParseError(f"only {n} device ids", text, start)
    try:
        values = [int(p) for p in parts]
    except ValueError:
        values = None
    if values is not None and all(len(p.strip()) <= 20 for p in parts):
        if all(-_INT64_MAX <= v <= _INT64_MAX for v in values):
            sc.pos = end
            return values
    # slow path: exact error location (or comments inside the list)
    sc.pos = start
    out = [sc.int("a device id")]
    while sc.peek() == ",":
        sc.pos += 1
        out.append(sc.int("a device id"))
        if len(out) > n:
            raise ParseError(f"only {n} device ids", text, sc.pos)
    return out


def _parse_subgroup_types(sc: _Scanner) -> tuple[str, ...]:
    sc.expect("{", "'{' to start last_tile_dims")
    out: list[str] = []
    if sc.peek() == "}":
        sc.pos += 1
        return ()
    while True:
        sc.skip_ws()
        p = sc.pos
        name = sc.ident()
        if name not in _SUBGROUP_NAMES:
            raise ParseError(
                "a subgroup type (manual, replicated, unreduced, maximal)",
                sc.text,
                p,
                found=repr(name) if name else None,
            )
        out.append(_SUBGROUP_NAMES[name])
        if not sc.more("}", "',' or '}' in last_tile_dims"):
            return tuple(out)


def _parse_metadata(sc: _Scanner) -> tuple[str, ...]:
    """`metadata={k=v ...}` or `metadata={{...}, {...}}`; entries kept as raw text."""
    sc.expect("{", "'{' to start metadata")
    if sc.peek() != "{":
        start = sc.pos
        end = sc.balanced()
        sc.pos = end
        return (sc.text[start : end - 1].strip(),)
    entries: list[str] = []
    while True:
        sc.expect("{", "'{' to start a metadata entry")
        start = sc.pos
        end = sc.balanced()
        sc.pos = end
        entries.append(sc.text[start : end - 1].strip())
        if not sc.more("}", "',' or '}' in the metadata list"):
            return tuple(entries)


# -- printing -----------------------------------------------------------------------------


def print_gspmd(s: HloSharding, *, form: str = "v2", metadata: bool = False) -> str:
    """XLA's `HloSharding::ToString`: `form="v2"` prints iota assignments as `<=[..]T(..)`,
    `form="v1"` always prints explicit device lists."""
    if form not in ("v1", "v2"):
        raise MeshdiagError(f"unknown GSPMD form {form!r}; expected 'v1' or 'v2'")
    out: list[str] = []
    _print(s, form == "v1", metadata, out)
    return "".join(out)


def _print(s: HloSharding, v1: bool, with_metadata: bool, out: list[str]) -> None:
    if s.is_tuple:
        out.append("{")
        for i, e in enumerate(s.elements):
            if i:
                out.append(", ")
                if i % 5 == 0:
                    out.append(f"/*index={i}*/")
            _print(e, v1, with_metadata, out)
        out.append("}")
        return
    out.append("{")
    if s.kind == "maximal":
        out.append(f"maximal device={s.device}")
    elif s.kind == "tiled":
        tile = s.tile
        assert tile is not None
        out.append("devices=[")
        out.append(",".join(map(str, tile.dims)))
        if tile.is_iota and not v1:
            out.append("]<=[")
            out.append(",".join(map(str, tile.reshape)))
            out.append("]")
            if len(tile.reshape) > 1:
                out.append(f"T({','.join(map(str, tile.perm))})")
        else:
            out.append("]")
            out.append(",".join(map(str, tile.devices())))
        if s.replicate_on_last:
            out.append(" last_tile_dim_replicate")
        if s.subgroup_types:
            out.append(f" last_tile_dims={{{', '.join(s.subgroup_types)}}}")
    else:
        out.append(s.kind)
    if s.shard_group is not None:
        out.append(f" {s.shard_group[0]} {s.shard_group[1]}")
    if with_metadata and s.metadata:
        if len(s.metadata) == 1 and not s.metadata[0].startswith("{"):  # else it reads as a list
            out.append(f" metadata={{{s.metadata[0]}}}")
        else:
            out.append(" metadata={" + ", ".join(f"{{{m}}}" for m in s.metadata) + "}")
    out.append("}")


def canonical_gspmd(text: str) -> str:
    """The canonical (XLA-printed, V2) form of GSPMD sharding text."""
    return print_gspmd(parse_gspmd(text))


# -- validation (XLA's HloSharding::ValidateNonTuple, where cheap) ---------------------------


def validate_hlo(s: HloSharding, num_devices: int | None = None) -> list[str]:
    """Verifier-style problems with `s` on `num_devices` devices ([] when it is valid).

    Without `num_devices` only what the sharding alone shows is checked (negative or
    repeated device ids, a tiling over one device).
    """
    problems: list[str] = []
    if s.is_tuple:
        for i, e in enumerate(s.elements):
            problems.extend(f"tuple element {i}: {m}" for m in validate_hlo(e, num_devices))
        return problems
    if s.kind == "maximal":
        d = s.device
        assert d is not None
        if num_devices is not None and d >= num_devices:
            problems.append(f"device {d} is out of range: the module has {num_devices} devices")
        elif d < -2:
            problems.append(f"device {d} is not a valid device id")
        return problems
    if s.kind != "tiled" or s.tile is None:
        return problems
    tile = s.tile
    n = tile.num_devices
    if n == 1:
        problems.append(
            "tile assignment contains a single device (use {replicated} or {maximal device=N})"
        )
    if num_devices is not None and n != num_devices:
        problems.append(
            f"tile assignment [{','.join(map(str, tile.dims))}] holds {n} devices but the "
            f"module has {num_devices}"
        )
    if tile.is_iota:
        return problems  # an iota is a permutation of 0..n-1 by construction
    seen: set[int] = set()
    repeated: list[int] = []
    out_of_range: list[int] = []
    for d in tile.explicit or ():
        if d < 0 or (num_devices is not None and d >= num_devices):
            out_of_range.append(d)
        if d in seen:
            repeated.append(d)
        seen.add(d)
    if out_of_range:
        bound = f"[0, {num_devices})" if num_devices is not None else "[0, ...)"
        problems.append(f"device {_few(out_of_range)} out of range {bound} in tile assignment")
    if repeated:
        problems.append(f"device {_few(sorted(set(repeated)))} repeated in tile assignment")
    return problems


def _few(ids: list[int], limit: int = 8) -> str:
    shown = ", ".join(map(str, ids[:limit]))
    return shown + (f" (and {len(ids) - limit} more)" if len(ids) > limit else "")
