"""Resource limits, checked before work is done so hostile inputs are refused, not allocated.

Each limit can be raised with an environment variable (`MESHDIAG_MAX_DEVICES`, ...).
"""

from __future__ import annotations

import os

from .errors import LimitError


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise LimitError(f"{name} must be an integer, got {raw!r}") from None
    if value <= 0:
        raise LimitError(f"{name} must be positive, got {value}")
    return value


#: devices in one mesh or tile assignment
MAX_DEVICES = _env_int("MESHDIAG_MAX_DEVICES", 1 << 20)
#: characters in one sharding / mesh annotation
MAX_ANNOTATION_CHARS = _env_int("MESHDIAG_MAX_ANNOTATION_CHARS", 1 << 20)
#: nesting depth of brackets in one annotation (tuples of tuples ...)
MAX_NESTING = _env_int("MESHDIAG_MAX_NESTING", 64)
#: tensor elements simulate-copy materialises before switching to symbolic mode
MAX_MATERIALISED_ELEMENTS = _env_int("MESHDIAG_MAX_ELEMENTS", 1 << 28)
#: one tensor dimension: sizes and offsets stay within int64 arithmetic (numpy, XLA)
MAX_DIM = 1 << 62
#: tensor rank
MAX_RANK = _env_int("MESHDIAG_MAX_RANK", 64)


def check_device_count(n: int, what: str = "mesh") -> int:
    """Refuse device counts above MAX_DEVICES (or non-positive ones)."""
    if n > MAX_DEVICES:
        raise LimitError(
            f"{what} has {n} devices, more than the limit of {MAX_DEVICES} "
            "(raise it with MESHDIAG_MAX_DEVICES)"
        )
    if n <= 0:
        raise LimitError(f"{what} has {n} devices; it needs at least one")
    return n


def check_annotation_length(text: str, what: str = "annotation") -> str:
    if len(text) > MAX_ANNOTATION_CHARS:
        raise LimitError(
            f"{what} is {len(text)} characters long, more than the limit of "
            f"{MAX_ANNOTATION_CHARS} (raise it with MESHDIAG_MAX_ANNOTATION_CHARS)"
        )
    return text
