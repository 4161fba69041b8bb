"""The choices a copy simulation takes, and the checks of its tensor shape and of each choice."""

from __future__ import annotations

from meshdiag.errors import LimitError, MeshdiagError
from meshdiag.limits import MAX_DIM, MAX_RANK
from meshdiag.model.copy import Shape

#: the TTNN validation eras, newest first (notes on each in simulate/eras.py)
ERAS = ("current", "2025-05", "2025-03", "2024")
WRITES = ("by-reference", "by-value")
STALES = ("sentinel", "previous")


def check_shape(shape) -> Shape:
    """The source tensor's shape as a tuple of ints, refused when negative or beyond limits."""
    try:
        dims = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise MeshdiagError(f"tensor shape must be a sequence of integers, got {shape!r}") from None
    if len(dims) > MAX_RANK:
        raise MeshdiagError(f"tensor rank {len(dims)} exceeds the limit of {MAX_RANK}")
    for d in dims:
        if d < 0:
            raise MeshdiagError(f"tensor dimension {d} is negative")
        if d >= MAX_DIM:
            raise LimitError(f"tensor dimension {d} is too large (limit {MAX_DIM - 1})")
    return dims


def check_choice(value: str, choices: tuple[str, ...], what: str) -> str:
    if value not in choices:
        raise MeshdiagError(f"unknown {what} {value!r}; expected one of {', '.join(choices)}")
    return value
