"""Bytes each device moves in one collective: the ring (nccl-tests bus bandwidth) factors.

One small module on purpose: every command that prices a collective (`reshard`, `comms`
and its lint checks) takes its formulas and element sizes from here, so there is one
definition to agree on. `n` is the group size (devices per replica group); buffers are per device.

| kind               | bytes per device                    | reference buffer                 |
| ------------------ | ----------------------------------- | -------------------------------- |
| all-gather         | (n-1)/n x gathered buffer           | the result (n x the operand)     |
| reduce-scatter     | (n-1)/n x full buffer               | the operand                      |
| all-reduce         | 2(n-1)/n x buffer                   | the operand                      |
| all-to-all         | (n-1)/n x local buffer              | the operand (= the result)       |
| collective-permute | the whole local buffer              | the operand; 0 for a self pair   |
| all-slice          | 0 (a local slice, no communication) |                                  |
"""

from __future__ import annotations

import math
import re

from meshdiag.errors import MeshdiagError

KINDS = (
    "all-gather",
    "reduce-scatter",
    "all-reduce",
    "all-to-all",
    "collective-permute",
    "all-slice",
)

#: bits per element, by the names HLO, MLIR and numpy/JAX give a dtype
_BITS: dict[str, int] = {"token": 0, "index": 64, "s2": 2, "u2": 2, "s4": 4, "u4": 4}
for _names, _bits in (
    (("pred", "i1", "bool", "s8", "i8", "int8", "u8", "ui8", "uint8"), 8),
    (("float8_e4m3fn", "float8_e5m2"), 8),
    (("s16", "i16", "int16", "u16", "ui16", "uint16", "f16", "float16", "half"), 16),
    (("bf16", "bfloat16"), 16),
    (("s32", "i32", "int32", "u32", "ui32", "uint32", "f32", "float32", "float", "tf32"), 32),
    (("s64", "i64", "int64", "u64", "ui64", "uint64", "f64", "float64", "double"), 64),
    (("c64", "complex64"), 64),
    (("c128", "complex128"), 128),
):
    for _n in _names:
        _BITS[_n] = _bits
_MLIR_INT = re.compile(r"^[su]?i(\d+)$")
_FLOAT = re.compile(r"^f(\d+)")  # f8e4m3fn, f8e5m2, f4e2m1fn, ...


def dtype_bits(dtype: str) -> int | None:
    """Bits per element of `dtype` (`f32`, `bf16`, `s4`, `f8e4m3fn`, MLIR `i32`, `ui8`,
    `complex<f32>`, numpy `float32`); None when unknown."""
    d = dtype.strip().lower()
    if d in _BITS:
        return _BITS[d]
    if d.startswith("complex<") and d.endswith(">"):
        inner = dtype_bits(d[len("complex<") : -1])
        return None if inner is None else 2 * inner
    m = _MLIR_INT.match(d) or _FLOAT.match(d)
    return int(m.group(1)) if m else None


def array_bytes(shape: tuple[int, ...] | None, dtype: str | None) -> int | None:
    """Bytes of one array (sub-byte types rounded up); None when the shape or type is
    unknown."""
    if shape is None or dtype is None:
        return None
    bits = dtype_bits(dtype)
    if bits is None:
        return None
    return (math.prod(shape) * bits + 7) // 8


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of `dtype` (`f32`, `bf16`, `float32`, `i8`, ...): a whole number of
    bytes, else a MeshdiagError."""
    bits = dtype_bits(dtype)
    if bits is None or bits < 8 or bits % 8:
        known = "f32, bf16, f16, f64, s8, s32, s64, u8, pred, c64, ..."
        raise MeshdiagError(f"unknown dtype {dtype!r}; expected one of {known}")
    return bits // 8


def _ratio(buffer: int, num: int, den: int) -> int:
    """buffer * num / den, exact when it divides (XLA pads every shard to equal pieces)."""
    return -(-buffer * num // den)  # ceil: never under-count a partial piece


def wire_bytes(kind: str, buffer_bytes: int, n: int, *, self_pair: bool = False) -> int:
    """Bytes one device sends (= receives) in a `kind` collective over a group of `n`.

    `buffer_bytes` is the reference buffer of the table above; `self_pair` marks a
    collective-permute pair whose source is its target (nothing moves).
    """
    if n < 1:
        raise MeshdiagError(f"a collective group has at least one device, got {n}")
    if kind == "all-gather" or kind == "reduce-scatter" or kind == "all-to-all":
        return _ratio(buffer_bytes, n - 1, n)
    if kind == "all-reduce":
        return _ratio(buffer_bytes, 2 * (n - 1), n)
    if kind == "collective-permute":
        return 0 if self_pair else buffer_bytes
    if kind == "all-slice":
        return 0
    raise MeshdiagError(f"unknown collective {kind!r}; expected one of {', '.join(KINDS)}")
