"""MD106 uniform-spec-on-uneven-shards: a destination's specs disagree with what was written.

Emitted by simulate-copy from the simulated devices and read-back (`uniform_spec_findings`).
Two failure shapes, one finding each:
- specs list devices the copy never wrote → read-back returns their stale memory as data;
- a written device's spec differs from the shard it received → read-back reinterprets its
  buffer (shard data followed by stale memory, or the data in the wrong shape).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from meshdiag.checks.rule import Rule
from meshdiag.notation.devicelist import compress_devices

if TYPE_CHECKING:
    from meshdiag.model.copy import DeviceCopy, Readback
    from meshdiag.model.findings import Finding


def _shape(s: Sequence[int]) -> str:
    return "(" + ",".join(map(str, s)) + ")"


def _ids(ids: Sequence[int]) -> str:
    ids = sorted(ids)
    word = "device" if len(ids) == 1 else "devices"
    return f"{word} {compress_devices(ids, max_chars=60)}"


def per_device_specs_text(devices: Sequence[DeviceCopy]) -> str:
    """The destination specs the source implies: `devices 0-6: (1,1,32,32); device 7: no
    buffer (or shape (1,0,32,32))`, devices grouped by spec."""
    groups: dict[str, list[int]] = {}
    for d in devices:
        if d.written is not None:
            key = _shape(d.shard_shape or ())
        elif d.empty_shape is not None:
            key = f"no buffer (or shape {_shape(d.empty_shape)})"
        else:
            key = "no buffer"
        groups.setdefault(key, []).append(d.device)
    parts = sorted(groups.items(), key=lambda kv: min(kv[1]))
    return "; ".join(f"{_ids(ids)}: {spec}" for spec, ids in parts)


def uniform_spec_findings(
    devices: Sequence[DeviceCopy],
    readback: Readback,
    source_shape: Sequence[int],
    *,
    write: str,
    where: dict,
) -> list[Finding]:
    """MD106 findings for one simulated copy (empty when the destination agrees with it)."""
    out: list[Finding] = []
    specs = per_device_specs_text(devices)
    fix = (
        f"allocate the destination with per-device specs from the source — {specs} — or pass "
        "the destination by reference so the copy replaces its specs with the written devices "
        "(current TTNN: copy_host_to_device_tensor(host, Tensor& device))"
    )
    shapes = (
        f"read-back shape {_shape(readback.shape)}, source {_shape(source_shape)}"
        if tuple(readback.shape) != tuple(source_shape)
        else f"read-back shape {_shape(readback.shape)} equals the source's, but its data differs"
    )
    stale = [d for d in devices if d.stale]
    if stale:
        claimed = {d.dest_shape for d in stale}
        claim = ", ".join(_shape(s) for s in sorted(claimed, key=str) if s is not None)
        msg = (
            f"the destination's specs claim {claim} of data on {_ids([d.device for d in stale])}, "
            f"which the copy never wrote ({'by-value copy kept the allocated specs' if write == 'by-value' else 'specs were not rebuilt from the source'}): "
            f"read-back returns their stale memory as data ({shapes})"
        )
        out.append(RULE.finding(msg, fix, **where))
    wrong = [d for d in devices if d.mismatched]
    if wrong:
        detail = "; ".join(
            f"device {d.device}: spec {_shape(d.dest_shape or ())}, shard {_shape(d.shard_shape or ())}"
            for d in wrong[:6]
        ) + ("; …" if len(wrong) > 6 else "")
        msg = (
            f"the destination's specs differ from the shards written to {_ids([d.device for d in wrong])} "
            f"({detail}): read-back reinterprets those buffers, mixing shard data with stale "
            f"memory ({shapes})"
        )
        out.append(RULE.finding(msg, fix, **where))
    return out


RULE = Rule(
    code="MD106",
    name="uniform-spec-on-uneven-shards",
    severity="error",
    summary="a destination's per-device specs claim data on devices the source never wrote",
    what="A mesh tensor was allocated with one spec on every device, then filled by a copy "
    "from a host tensor whose shards do not match that spec: some devices received no shard "
    "(fewer chunks than devices) or a shard of another shape. After the copy the "
    "destination still lists its allocated specs, so reading it back includes buffers that "
    "were never written, or reinterprets written buffers in the wrong shape. meshdiag "
    "simulate-copy reports it with the devices that read back stale memory.",
    why="This is tt-metal PR #18833: allocate_tensor_on_mesh gives every device a "
    "(1,1,32,32) spec; a (1,7,32,32) tensor sharded on dim 1 over 8 devices writes only 7 "
    "of them; copy_host_to_device_tensor took the destination by value, so its update of "
    "the destination's specs was lost; t1.cpu() then reads all 8 devices and returns "
    "(1,8,32,32) whose last slice is whatever that DRAM held before — silent corruption "
    "with a plausible shape.",
    fix="Give the destination per-device specs taken from the source (the written devices' "
    "shard shapes; no buffer, or a zero-size shape such as (1,0,32,32), on devices without "
    "a shard), or pass the destination by reference so the copy replaces its specs with "
    "the devices it wrote (current TTNN's copy_to_device(const Tensor&, Tensor&)).",
    example="meshdiag simulate-copy --mesh t3k --shape 1,7,32,32 --mapper shard:1 "
    "--dest uniform:1,1,32,32 --write by-value\n"
    "  MD106 the destination's specs claim (1,1,32,32) of data on device 7, which the copy "
    "never wrote: read-back returns its stale memory (read-back (1,8,32,32), source "
    "(1,7,32,32))\n"
    "Use instead: --write by-reference, or --dest fresh (device 7: no buffer).",
)
