"""TTNN mapper / composer notation and the simulate-copy destination specs (text → model).

Mappers (what `ttnn.from_torch(..., mesh_mapper=...)` does), as typed on the command line:

    replicate              ReplicateTensorToMesh: distribution (N,), every device the whole tensor
    shard:D                ShardTensorToMesh(dim=D): distribution (N,), chunk i → i-th device
    shard2d:R,C[@RxC]      ShardTensor2dMesh(dims=(R, C), mesh_shape=(R', C')); `none` replicates
    placements:R,S1[@AxB]  create_mesh_mapper(MeshMapperConfig([Replicate, Shard(1)], override))

Composers (`ttnn.to_torch(..., mesh_composer=...)`):

    concat:D               ConcatMeshToTensor(dim=D): distribution (N,), joins the shards present
    concat2d:R,C[@RxC]     ConcatMesh2dToTensor(dims=(R, C)); `none` (a meshdiag extension) keeps
                           index 0 along that mesh axis instead of concatenating its replicas
    first                  the first device's buffer alone (how a replicated tensor is read back)
    tiles                  assemble tile by tile (compiler notations: tile i along dim d → dim d)

Destinations: `fresh` | `uniform:1,1,32,32` | `per-device:FILE` (a JSON/TOML list, one shape or
null per device id; see `parse_per_device_specs`).
Negative tensor dims count from the end, as in TTNN. Rank checks happen where the tensor's rank
is known (`resolve_dim`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

from meshdiag.errors import LimitError, MeshdiagError, ParseError
from meshdiag.fileio import parse_nested
from meshdiag.limits import MAX_DIM, MAX_RANK, check_annotation_length

#: per mesh axis: the tensor dim it shards, or None (replicate)
Placements = tuple[int | None, ...]

_INT = re.compile(r"-?\d+")


@dataclass(frozen=True)
class TtnnMapper:
    kind: Literal["replicate", "shard", "shard2d", "placements"]
    placements: Placements
    #: distribution shape override; None = the device mesh's shape
    override: tuple[int, ...] | None
    #: the override is (number of devices,) — replicate / shard:D
    flat: bool
    text: str


@dataclass(frozen=True)
class Composer:
    kind: Literal["concat", "concat2d", "first", "tiles"]
    dims: tuple[int | None, ...]
    override: tuple[int, ...] | None
    flat: bool
    text: str


@dataclass(frozen=True)
class Dest:
    kind: Literal["fresh", "uniform", "per-device"]
    #: `uniform`: the one spec
    shape: tuple[int, ...] | None = None
    #: `per-device`: one shape (or None = no buffer) per device id
    shapes: tuple[tuple[int, ...] | None, ...] | None = None
    #: `per-device`: the file named
    path: str | None = None
    text: str = "fresh"


# -- small pieces ----------------------------------------------------------------------------


def parse_shape(text: str, what: str = "shape") -> tuple[int, ...]:
    """`1,7,32,32`, `(1, 7, 32, 32)`, `[1,7,32,32]`, `1x7x32x32` or `1×7`; `(4,)` keeps its
    trailing comma; `()`/`[]` is a scalar."""
    check_annotation_length(text, what)
    body = text.strip()
    offset = len(text) - len(text.lstrip())
    if len(body) >= 2 and body[0] in "([" and body[-1] in ")]":
        close = ")" if body[0] == "(" else "]"
        if body[-1] != close:
            raise ParseError(
                f"'{close}' closing the {what}", text, offset + len(body) - 1, found=repr(body[-1])
            )
        offset += 1
        body = body[1:-1]
    if not body.strip():
        return ()
    parts = re.split("[,x×]", body)
    if len(parts) > 1 and not parts[-1].strip():  # `(4,)`
        parts.pop()
    out: list[int] = []
    pos = 0
    for part in parts:
        stripped = part.strip()
        if not (stripped.isascii() and stripped.isdigit()):  # int() refuses '²'
            col = offset + pos + (len(part) - len(part.lstrip()))
            raise ParseError(
                f"a non-negative integer in the {what}", text, col, found=repr(stripped)
            )
        out.append(int(stripped))
        if out[-1] >= MAX_DIM:
            raise LimitError(
                f"{what} dimension {stripped} is too large (limit {MAX_DIM - 1}): sizes and "
                "offsets must fit 64-bit arithmetic"
            )
        pos += len(part) + 1
    if len(out) > MAX_RANK:
        raise MeshdiagError(f"{what} has rank {len(out)}, more than the limit of {MAX_RANK}")
    return tuple(out)


def _dim_or_none(tok: str, text: str, pos: int) -> int | None:
    t = tok.strip()
    if t.lower() in ("none", "_", "r", "replicate"):
        return None
    if not _INT.fullmatch(t):
        raise ParseError("a tensor dim (integer) or 'none'", text, pos, found=repr(t))
    return int(t)


def _split_override(text: str, body_start: int) -> tuple[str, tuple[int, ...] | None]:
    """`dims@2x3` → ('dims', (2, 3))."""
    body = text[body_start:]
    if "@" not in body:
        return body, None
    dims, _, ov = body.partition("@")
    at = body_start + len(dims) + 1
    try:
        shape = parse_shape(ov, "mesh shape override")
    except ParseError as e:
        raise ParseError(e.expected, text, at + e.pos, found=e.found) from None
    if not shape or any(s < 1 for s in shape):
        raise ParseError("a mesh shape like 2x4 after '@'", text, at, found=repr(ov))
    return dims, shape


def _list(body: str, text: str, start: int, n: int | None, what: str) -> list[tuple[str, int]]:
    """Comma-separated tokens with their offsets in `text`."""
    toks: list[tuple[str, int]] = []
    pos = start
    for part in body.split(","):
        toks.append((part, pos + len(part) - len(part.lstrip())))
        pos += len(part) + 1
    if n is not None and len(toks) != n:
        raise ParseError(f"{n} {what} separated by ','", text, start, found=repr(body))
    return toks


def _head(text: str, what: str) -> tuple[str, str, str, int]:
    """(stripped text, lower-case head before ':', the ':' or '', offset of the body in `text`)."""
    check_annotation_length(text, what)
    t = text.strip()
    head, colon, _ = t.partition(":")
    return t, head.strip().lower(), colon, len(text) - len(text.lstrip()) + len(head) + 1


def _one_dim(text: str, start: int, head: str) -> int:
    """`shard:D` / `concat:D`: the one tensor dim after the head."""
    body = text[start:]
    if not _INT.fullmatch(body.strip()):
        raise ParseError(f"a tensor dim after '{head}:'", text, start, found=repr(body))
    return int(body)


def _two_dims(text: str, start: int) -> tuple[Placements, tuple[int, ...] | None]:
    """`shard2d:R,C[@RxC]` / `concat2d:R,C[@RxC]`: two dims (or none) and the 2-D override."""
    body, ov = _split_override(text, start)
    toks = _list(body, text, start, 2, "tensor dims (or none)")
    dims = tuple(_dim_or_none(tok, text, pos) for tok, pos in toks)
    if ov is not None and len(ov) != 2:
        raise ParseError("a 2-D mesh shape (RxC) after '@'", text, start + len(body) + 1)
    return dims, ov


# -- mappers -----------------------------------------------------------------------------------


def parse_mapper(text: str) -> TtnnMapper | None:
    """A TTNN mapper, or None when `text` is not TTNN notation (a compiler sharding, then)."""
    t, head, colon, start = _head(text, "mapper")
    if head == "replicate" and not colon:
        return TtnnMapper("replicate", (None,), None, True, t)
    if head == "shard":
        return TtnnMapper("shard", (_one_dim(text, start, head),), None, True, t)
    if head == "shard2d":
        pl, ov = _two_dims(text, start)
        return TtnnMapper("shard2d", pl, ov, False, t)
    if head == "placements":
        body, ov = _split_override(text, start)
        pl_list: list[int | None] = []
        for tok, pos in _list(body, text, start, None, "placements"):
            s = tok.strip()
            if s.upper() == "R":
                pl_list.append(None)
            elif s[:1].upper() == "S" and _INT.fullmatch(s[1:]):
                pl_list.append(int(s[1:]))
            else:
                raise ParseError("a placement R or S<dim>", text, pos, found=repr(s))
        if ov is not None and len(ov) != len(pl_list):
            raise MeshdiagError(
                f"The number of dimensions in the mesh shape {len(ov)} does not match the "
                f"number of placements in the config {len(pl_list)} (mapper '{t}')"
            )
        return TtnnMapper("placements", tuple(pl_list), ov, False, t)
    return None


def parse_composer(text: str) -> Composer:
    t, head, colon, start = _head(text, "composer")
    if head in ("first", "tiles") and not colon:
        return Composer(head, (None,), None, True, t)  # type: ignore[arg-type]
    if head == "concat":
        return Composer("concat", (_one_dim(text, start, head),), None, True, t)
    if head == "concat2d":
        dims, ov = _two_dims(text, start)
        return Composer("concat2d", dims, ov, False, t)
    raise ParseError(
        "a composer: concat:D, concat2d:R,C[@RxC], first or tiles", text, 0, found=repr(t)
    )


def resolve_dim(dim: int, rank: int, what: str) -> int:
    """Normalise a possibly negative tensor dim; refuse it when outside the tensor's rank."""
    d = dim + rank if dim < 0 else dim
    if not 0 <= d < rank:
        span = f"dims 0..{rank - 1}" if rank else "no dims"
        raise MeshdiagError(
            f"{what} names tensor dimension {dim}, but the tensor has rank {rank} ({span})"
        )
    return d


# -- destinations ------------------------------------------------------------------------------


def parse_dest(text: str) -> Dest:
    """`fresh`, `uniform:SHAPE` or `per-device:FILE` (the file is read by the caller)."""
    check_annotation_length(text, "--dest")
    t = text.strip()
    head, colon, rest = t.partition(":")
    head = head.lower()
    if head == "fresh" and not colon:
        return Dest("fresh", text="fresh")
    if head == "uniform" and colon:
        start = len(head) + 1
        try:
            shape = parse_shape(rest, "uniform destination shape")
        except ParseError as e:
            raise ParseError(e.expected, t, start + e.pos, found=e.found) from None
        return Dest("uniform", shape=shape, text=t)
    if head == "per-device" and colon and rest.strip():
        return Dest("per-device", path=rest.strip(), text=t)
    raise ParseError(
        "a destination: fresh, uniform:SHAPE (e.g. uniform:1,1,32,32) or per-device:FILE",
        t,
        0,
        found=repr(t),
    )


def parse_per_device_specs(
    text: str, fmt: Literal["json", "toml"], name: str
) -> tuple[tuple[int, ...] | None, ...]:
    """Per-device destination shapes, one per device id.

    JSON: `[[1,1,32,32], ..., null]` or `{"devices": [...]}`. TOML: `devices = [[1,1,32,32],
    ..., "none"]` (TOML has no null; the string "none" means no buffer on that device).
    """

    try:
        if fmt == "json":
            data = parse_nested(json.loads, text, name)
        else:
            import tomllib

            data = parse_nested(tomllib.loads, text, name)
    except (ValueError, UnicodeDecodeError) as e:
        raise MeshdiagError(f"{name}: not valid {fmt.upper()}: {e}") from None
    if isinstance(data, dict):
        if "devices" not in data:
            raise MeshdiagError(f"{name}: expected a list of shapes or a 'devices' key")
        data = data["devices"]
    if not isinstance(data, list):
        raise MeshdiagError(f"{name}: expected a list of per-device shapes")
    out: list[tuple[int, ...] | None] = []
    for i, entry in enumerate(data):
        if entry is None or (isinstance(entry, str) and entry.lower() in ("none", "null")):
            out.append(None)
            continue
        if (
            not isinstance(entry, list)
            or len(entry) > MAX_RANK
            or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in entry)
        ):
            raise MeshdiagError(
                f"{name}: device {i}'s entry {entry!r} is not a shape (a list of "
                "non-negative integers) or null"
            )
        out.append(tuple(entry))
    return tuple(out)
