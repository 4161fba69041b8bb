"""A line's print: the bit of a filter of learned lines (`ScanCache.lines`) it sets, from
its length and its first and last 8 bytes. The walkers (`lines.scan_known`) look up only
the lines whose bit is set: in a file of new lines every look-up missed, and hashing each
whole line for it was 4% of the run. Lines that share a bit are looked up as before."""

from __future__ import annotations

from collections.abc import Callable

from meshdiag.ir.fast import native

#: bits of a filter: 32 KB per module state
PRINT_BITS = 1 << 18
_M64 = (1 << 64) - 1


def line_print_py(line: bytes) -> int:
    """The bit of a filter the line `line` (without its newline) sets when learned, from
    its length and its first and last 8 bytes (read little-endian); the reference for the
    native `line_print` (`ir/fast/_fastscan.c`)."""
    n = len(line)
    k = min(n, 8)
    a = int.from_bytes(line[:k], "little")
    b = int.from_bytes(line[n - k :], "little")
    h = (n * 0x9E3779B97F4A7C15) & _M64
    h ^= (a * 0xC2B2AE3D27D4EB4F) & _M64
    h ^= ((b + 0x165667B19E3779F9) * 0x85EBCA77C2B2AE63) & _M64
    h ^= h >> 29
    h = (h * 0xBF58476D1CE4E5B9) & _M64
    h ^= h >> 32
    return h & (PRINT_BITS - 1)


#: the native print when built, else its twin (the walkers and the memo use the same one)
line_print: Callable[[bytes], int] = native("line_print") or line_print_py


def printed(prints: bytearray, line: bytes) -> bool:
    """Whether `line`'s bit is set in the filter `prints`."""
    bit = line_print(line)
    return bool(prints[bit >> 3] >> (bit & 7) & 1)


def mark(prints: bytearray, line: bytes) -> None:
    """Set `line`'s bit in the filter `prints`."""
    bit = line_print(line)
    prints[bit >> 3] |= 1 << (bit & 7)
