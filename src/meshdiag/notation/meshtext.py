"""The mesh notations: `batch=2,model=4` · `2x4` · a preset (`t3k`) · Shardy `<["a"=2]>` /
`#sdy.mesh<..>` / `sdy.mesh @m = <..>`. Sizes and axis counts are checked against the limits
before anything is allocated.

A mesh as a user gives it can also be a mapping (torch_xla's `Mesh.__str__` dict, inline JSON)
or a `.toml`/`.json` file: those are validated inputs, read by `inputs/mesh_input.py`, which
hands the notations to `parse_mesh_notation` here.
"""

from __future__ import annotations

import os
import re

from meshdiag.errors import LimitError, MeshdiagError, ParseError
from meshdiag.limits import MAX_RANK, check_device_count
from meshdiag.model.mesh import Mesh
from meshdiag.model.targets import preset_mesh, preset_names
from meshdiag.notation._cursor import Cursor
from meshdiag.notation.shardy import parse_mesh_attr, parse_mesh_attr_at

__all__ = ["looks_like_mapping_or_file", "mesh_from_axes", "parse_mesh_notation"]

_WORD = re.compile(r"[A-Za-z][\w]*")
_NAMED = re.compile(r"\s*([A-Za-z_][\w.\-]*)\s*[=:]\s*(-?[0-9]+)\s*")
_SHAPE = re.compile(r"\s*-?[0-9]+\s*(?:[x×*]\s*-?[0-9]+\s*)*", re.IGNORECASE)


def _size(digits: str) -> int:
    """An axis size from its digits, refusing numbers past int64 before converting them."""
    digits = digits.strip()  # `\s` in the patterns also matches separators like '\x1c'
    if len(digits.lstrip("-")) > 19:
        raise LimitError(f"mesh axis size {digits[:20]}... is too large")
    return int(digits)


def mesh_from_axes(
    axes: list[tuple[str, int]], device_ids: list[int] | None = None, *, what: str = "mesh"
) -> Mesh:
    """Build a Mesh after the limit checks (axis count, device count, sizes)."""
    if len(axes) > MAX_RANK:
        raise LimitError(
            f"{what} has {len(axes)} axes, more than the limit of {MAX_RANK} "
            "(raise it with MESHDIAG_MAX_RANK)"
        )
    n = 1
    for name, size in axes:
        if isinstance(size, bool) or not isinstance(size, int):
            raise MeshdiagError(f"{what} axis {name!r} has size {size!r}; sizes are integers")
        if size < 1:
            raise MeshdiagError(f"{what} axis {name!r} has size {size}; sizes must be positive")
        n *= size
        check_device_count(n, what)  # early: stops 10^12-device meshes before allocating
    if device_ids is not None:
        if not isinstance(device_ids, (list, tuple)) or not all(
            isinstance(d, int) and not isinstance(d, bool) for d in device_ids
        ):
            raise MeshdiagError(f"{what} device_ids must be a list of integers")
        if len(device_ids) != n:
            raise MeshdiagError(
                f"{what} device_ids has {len(device_ids)} entries but the axes hold {n} devices"
            )
        if sorted(device_ids) != list(range(n)):
            raise MeshdiagError(
                f"{what} device_ids must be a permutation of 0..{n - 1}, got "
                f"{_short_list(device_ids)}"
            )
    return Mesh(tuple(axes), tuple(device_ids) if device_ids is not None else None)


def _short_list(xs: list[int]) -> str:
    s = ",".join(map(str, xs[:16]))
    return f"[{s}{',...' if len(xs) > 16 else ''}]"


def looks_like_mapping_or_file(text: str) -> bool:
    """A mesh written as a mapping (`{...}`) or a file path, not as a notation."""
    t = text.strip()
    return (
        t.startswith("{")
        or t.lower().endswith((".toml", ".json"))
        or os.sep in t
        or (bool(t) and os.path.isfile(t))
    )


def parse_mesh_notation(text: str) -> Mesh:
    """Parse a mesh written in one of the notations of the module docstring."""
    t = text.strip()
    if not t:
        raise MeshdiagError("the mesh is empty; write e.g. 'batch=2,model=4' or '2x4'")
    if t.startswith(("<", "#sdy.mesh")):
        return parse_mesh_attr(t)
    if t.startswith("sdy.mesh"):
        return _sdy_mesh_op(t)
    p = preset_mesh(t) if _WORD.fullmatch(t) else None
    if p is not None:
        return p
    if _SHAPE.fullmatch(t):
        sizes = [_size(x) for x in re.split(r"[x×*]", t.replace(" ", ""), flags=re.IGNORECASE)]
        return mesh_from_axes([(f"axis_{i}", s) for i, s in enumerate(sizes)])
    parts = [p for p in re.split(r"[,;]", t)]
    axes: list[tuple[str, int]] = []
    offset = 0
    for part in parts:
        m = _NAMED.fullmatch(part)
        if m is None:
            col = text.find(part.strip(), offset) if part.strip() else offset
            raise ParseError(
                "a mesh like 'batch=2,model=4', '2x4', a preset ("
                + ", ".join(preset_names()[:6])
                + ", ...), a Shardy mesh '<[\"x\"=2]>' or a .toml/.json file",
                text,
                max(col, 0),
            )
        axes.append((m.group(1), _size(m.group(2))))
        offset += len(part) + 1
        if len(axes) > MAX_RANK:
            return mesh_from_axes(axes)  # raises the limit error
    names = [a for a, _ in axes]
    dup = next((a for a in names if names.count(a) > 1), None)
    if dup is not None:
        raise MeshdiagError(
            f"mesh axis {dup!r} appears more than once in {text.strip()!r}"
        )  # repr: one line
    return mesh_from_axes(axes)


def _sdy_mesh_op(t: str) -> Mesh:
    """`sdy.mesh @name = <[...]>` (a trailing attr-dict or `loc(...)` is ignored)."""
    from dataclasses import replace

    cur = Cursor(t)
    cur.expect("sdy.mesh")
    cur.expect("@", "'@' and the mesh name")
    name = cur.mlir_string() if cur.peek() == '"' else cur.ident("a mesh name")
    cur.expect("=", "'='")
    mesh, end = parse_mesh_attr_at(t, cur.pos)
    rest = Cursor(t, end)
    if not (rest.at_end() or rest.startswith("{") or rest.startswith("loc(")):
        raise rest.error("end of the mesh op")
    return replace(mesh, name=name)
