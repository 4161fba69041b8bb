"""Bytes each device sends and receives for one collective: pure arithmetic, no text.

Ring algorithms, as NCCL's bus-bandwidth factors count them, for a group of n devices:

    all-gather          (n-1)/n × bytes of the gathered result R (each device receives the
                        n-1 chunks it lacks and forwards as much)
    reduce-scatter      (n-1)/n × bytes of the operand O = n × R
    all-reduce          2(n-1)/n × bytes of the operand (a reduce-scatter plus an all-gather)
    all-to-all          (n-1)/n × bytes of the operand (keeps 1/n, exchanges the rest)
    collective-permute  the operand, for each device that sends to another device (self
                        pairs move nothing)
    all-slice           0 (a local slice)

Sent and received are equal for the group collectives. Worked example: an all-gather to
f32[128,512] (256 KiB) over 4 devices moves 3/4 × 256 KiB = 192 KiB per device.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

#: bits per element of XLA's primitive types (HLO spelling) and MLIR's element types
_BITS = {
    "pred": 8,
    "i1": 8,
    "s2": 2,
    "u2": 2,
    "s4": 4,
    "u4": 4,
    "s8": 8,
    "u8": 8,
    "s16": 16,
    "u16": 16,
    "s32": 32,
    "u32": 32,
    "s64": 64,
    "u64": 64,
    "f16": 16,
    "bf16": 16,
    "f32": 32,
    "f64": 64,
    "c64": 64,
    "c128": 128,
    "tf32": 32,
    "token": 0,
    "index": 64,
}
_MLIR_INT = re.compile(r"^[su]?i(\d+)$")
_FLOAT = re.compile(r"^f(\d+)")


def dtype_bits(dtype: str) -> int | None:
    """Bits per element of `dtype` (`f32`, `bf16`, `s8`, `f8e4m3fn`, MLIR `i32`, `ui8`,
    `complex<f32>`); None when unknown."""
    d = dtype.strip().lower()
    if d in _BITS:
        return _BITS[d]
    if d.startswith("complex<") and d.endswith(">"):
        inner = dtype_bits(d[len("complex<") : -1])
        return None if inner is None else 2 * inner
    m = _MLIR_INT.match(d) or _FLOAT.match(d)  # i32, si8, ui16; f8e4m3fn, f4e2m1fn
    if m:
        return int(m.group(1))
    return None


def array_bytes(shape: tuple[int, ...] | None, dtype: str | None) -> int | None:
    """Bytes of one array (sub-byte types rounded up); None when the shape or type is
    unknown."""
    if shape is None or dtype is None:
        return None
    bits = dtype_bits(dtype)
    if bits is None:
        return None
    return (math.prod(shape) * bits + 7) // 8


@dataclass(frozen=True)
class Traffic:
    """Bytes one device sends and receives (the busiest device for a permute), and the bytes
    all devices send together. Fractions are rounded to whole bytes at the end."""

    sent: int
    received: int
    total: int

    @property
    def per_device(self) -> int:
        return max(self.sent, self.received)


def _ring(factor: Fraction, nbytes: int, devices: int) -> Traffic:
    b = round(factor * nbytes)
    return Traffic(b, b, b * devices)


def all_gather(result_bytes: int, n: int, devices: int) -> Traffic:
    """Each of `devices` devices in groups of `n` gathers a result of `result_bytes`."""
    return _ring(Fraction(n - 1, n), result_bytes, devices)


def reduce_scatter(result_bytes: int, n: int, devices: int) -> Traffic:
    """The operand is n results: (n-1)/n × n × R = (n-1) × R."""
    return _ring(Fraction(n - 1, n), n * result_bytes, devices)


def all_reduce(operand_bytes: int, n: int, devices: int) -> Traffic:
    return _ring(Fraction(2 * (n - 1), n), operand_bytes, devices)


def all_to_all(operand_bytes: int, n: int, devices: int) -> Traffic:
    return _ring(Fraction(n - 1, n), operand_bytes, devices)


def collective_permute(operand_bytes: int, pairs: tuple[tuple[int, int], ...]) -> Traffic:
    """Every device sends its operand to each target it pairs with (other than itself)."""
    moving = [(s, t) for s, t in pairs if s != t]
    if not moving:
        return Traffic(0, 0, 0)
    sends: dict[int, int] = {}
    receives: dict[int, int] = {}
    for s, t in moving:
        sends[s] = sends.get(s, 0) + 1
        receives[t] = receives.get(t, 0) + 1
    return Traffic(
        max(sends.values()) * operand_bytes,
        max(receives.values()) * operand_bytes,
        len(moving) * operand_bytes,
    )


def permute_by_layout(operand_bytes: int, before, after) -> Traffic:
    """A permute from one layout to another (per-device `starts`/`stops` arrays, one row per
    device): each device whose slice changes receives its new slice from the device that
    held it, and that device sends it."""
    import numpy as np

    moved = int(
        np.count_nonzero((before[0] != after[0]).any(axis=1) | (before[1] != after[1]).any(axis=1))
    )
    if not moved:
        return Traffic(0, 0, 0)
    return Traffic(operand_bytes, operand_bytes, moved * operand_bytes)


def none() -> Traffic:
    return Traffic(0, 0, 0)
