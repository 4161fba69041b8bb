"""Bytes each device moves in one collective: the ring (nccl-tests bus bandwidth) factors.

One small module on purpose: every command that prices a collective (`reshard` today, a
dump's collective inventory later) takes its formulas from here, so there is one definition
to agree on. `n` is the group size (devices per replica group); buffers are per device.

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

from .errors import MeshdiagError

KINDS = (
    "all-gather",
    "reduce-scatter",
    "all-reduce",
    "all-to-all",
    "collective-permute",
    "all-slice",
)

#: bytes per element, by the names HLO, MLIR and numpy/JAX give a dtype
_DTYPE_BYTES: dict[str, int] = {}
for _names, _size in (
    (("pred", "i1", "bool", "s8", "i8", "int8", "u8", "ui8", "uint8"), 1),
    (("f8e4m3fn", "f8e5m2", "f8e4m3", "f8e4m3b11fnuz", "f8e5m2fnuz", "f8e4m3fnuz"), 1),
    (("float8_e4m3fn", "float8_e5m2"), 1),
    (("s16", "i16", "int16", "u16", "ui16", "uint16", "f16", "float16", "half"), 2),
    (("bf16", "bfloat16"), 2),
    (("s32", "i32", "int32", "u32", "ui32", "uint32", "f32", "float32", "float"), 4),
    (("s64", "i64", "int64", "u64", "ui64", "uint64", "f64", "float64", "double"), 8),
    (("c64", "complex64"), 8),
    (("c128", "complex128"), 16),
):
    for _n in _names:
        _DTYPE_BYTES[_n] = _size


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of `dtype` (`f32`, `bf16`, `float32`, `i8`, ...)."""
    size = _DTYPE_BYTES.get(dtype.strip().lower())
    if size is None:
        known = "f32, bf16, f16, f64, s8, s32, s64, u8, pred, c64, ..."
        raise MeshdiagError(f"unknown dtype {dtype!r}; expected one of {known}")
    return size


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
