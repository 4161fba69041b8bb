"""Bytes each device sends and receives for one collective: pure arithmetic, no text.

Ring algorithms, as NCCL's bus-bandwidth factors count them (`collective_bytes.wire_bytes`,
the one definition `reshard` shares), for a group of n devices:

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

from dataclasses import dataclass

from meshdiag.model.collective_bytes import wire_bytes


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


def _ring(kind: str, nbytes: int, n: int, devices: int) -> Traffic:
    b = wire_bytes(kind, nbytes, n)
    return Traffic(b, b, b * devices)


def all_gather(result_bytes: int, n: int, devices: int) -> Traffic:
    """Each of `devices` devices in groups of `n` gathers a result of `result_bytes`."""
    return _ring("all-gather", result_bytes, n, devices)


def reduce_scatter(result_bytes: int, n: int, devices: int) -> Traffic:
    """The operand is n results: (n-1)/n × n × R = (n-1) × R."""
    return _ring("reduce-scatter", n * result_bytes, n, devices)


def all_reduce(operand_bytes: int, n: int, devices: int) -> Traffic:
    return _ring("all-reduce", operand_bytes, n, devices)


def all_to_all(operand_bytes: int, n: int, devices: int) -> Traffic:
    return _ring("all-to-all", operand_bytes, n, devices)


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
