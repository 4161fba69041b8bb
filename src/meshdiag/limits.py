"""Resource limits, checked before work is done so hostile inputs are refused, not allocated.

Each limit can be raised with an environment variable (`MESHDIAG_MAX_DEVICES`, ...).
"""

from __future__ import annotations

import os

from meshdiag.errors import LimitError


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
#: devices simulate-copy models one by one (each device's buffer, copy and read-back); the
#: largest real systems (a TPU v5p pod: 8960 chips) fit
MAX_SIMULATED_DEVICES = _env_int("MESHDIAG_MAX_SIMULATED_DEVICES", 1 << 14)
#: devices `inspect --layouts` lists per value (a million devices are ~120 MB of JSON per
#: value; `meshdiag layout --format json` streams one tensor's list at any size)
MAX_LISTED_DEVICES = _env_int("MESHDIAG_MAX_LISTED_DEVICES", 1 << 16)
#: cells of a picture drawn as a grid (`--max-cells`); beyond, a table with elision
MAX_GRID_CELLS = _env_int("MESHDIAG_MAX_GRID_CELLS", 4096)


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


def check_simulated_devices(n: int) -> int:
    """Refuse, before any work, meshes too large to simulate device by device."""
    if n > MAX_SIMULATED_DEVICES:
        raise LimitError(
            f"simulate-copy models every device's buffer one by one: the mesh has {n} devices, "
            f"more than the limit of {MAX_SIMULATED_DEVICES} "
            "(raise it with MESHDIAG_MAX_SIMULATED_DEVICES; `meshdiag layout` shows the "
            "per-device slices of any mesh)"
        )
    return n


def check_listed_devices(n: int, what: str) -> int:
    """Refuse per-device lists in `inspect --layouts` JSON above MAX_LISTED_DEVICES."""
    if n > MAX_LISTED_DEVICES:
        raise LimitError(
            f"{what} lays out on {n} devices: `inspect --layouts` lists at most "
            f"{MAX_LISTED_DEVICES} devices per value (raise it with MESHDIAG_MAX_LISTED_DEVICES, "
            "or use `meshdiag layout SHARDING --shape S --format json`, which streams any size)"
        )
    return n
