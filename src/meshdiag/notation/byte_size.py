"""Byte sizes as people write them in configs and on the command line: `65536`, `64KiB`,
`1.5 MiB`, `2GB` (SI units are powers of 1000, IEC units powers of 1024), and as messages
show them (`48.0 KiB`)."""

from __future__ import annotations

import re

from meshdiag.errors import MeshdiagError

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B|B)?\s*$", re.IGNORECASE)
_FACTOR = {"": 1, "b": 1}
for _i, _p in enumerate("kmgt", 1):
    _FACTOR[f"{_p}b"] = 1000**_i
    _FACTOR[f"{_p}ib"] = 1024**_i


def parse_size(value: str | int, what: str) -> int:
    """A byte count from `value`; MeshdiagError naming `what` when it is not one."""
    if isinstance(value, bool):
        raise MeshdiagError(f"{what} must be a byte size like 65536 or '64MiB', got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise MeshdiagError(f"{what} must not be negative, got {value}")
        return value
    m = _SIZE.match(str(value))
    if m is None:
        raise MeshdiagError(f"{what} must be a byte size like 65536 or '64MiB', got {value!r}")
    return round(float(m.group(1)) * _FACTOR[(m.group(2) or "").lower()])


_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def human_bytes(n: int | None) -> str:
    """`768 B`, `48.0 KiB`, `1.5 GiB`; `?` when unknown."""
    if n is None:
        return "?"
    value = float(n)
    for unit in _UNITS:
        if value < 1024 or unit == _UNITS[-1]:
            return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"
