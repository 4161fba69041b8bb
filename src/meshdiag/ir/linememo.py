"""Learn what a line yields, so its next occurrences cost the native walker a dict lookup.

A line handler runs on the builder itself. When it only added values to the module it
found (no problem, no parse error, no change of state), those values become one shared
`LineValues` entry of the module's columns and the line's raw bytes are learned in the run's
`ScanCache` under the module state: the native walker (`lines.scan_known`) then appends
each later occurrence itself. A line that yields nothing is learned as None (skipped).
Lines with problems are simply read again each time (their findings are reported again).
"""

from __future__ import annotations

from collections.abc import Callable

from meshdiag.ir.builder import Builder
from meshdiag.ir.model import LineValues
from meshdiag.ir.scancache import MAX_LINE


def _learnable(b: Builder) -> bool:
    raw = b.raw
    return raw is not None and not b.manual and len(raw) <= MAX_LINE and raw.isascii()


def run(handler: Callable, b: Builder, line: str, lineno: int, *args) -> None:
    """`handler(b, line, lineno, *args)`, learning the line when it is safe to replay.

    Only handlers whose result depends on nothing but the line and the module state (its
    meshes, the dialect, the enclosing manual axes) may run through here."""
    if not _learnable(b):
        handler(b, line, lineno, *args)
        return
    m = b.module
    findings = b.report.findings
    n_found = len(findings)
    token = b.mesh_token
    if m is None:
        handler(b, line, lineno, *args)
        if b.module is None and len(findings) == n_found and b.mesh_token == token:
            _learn(b, None)
        return
    items = m.items
    n = len(items)
    handler(b, line, lineno, *args)
    if b.module is not m or len(findings) != n_found or b.mesh_token != token or b.manual:
        return
    if len(items) == n:
        _learn(b, None)
        return
    protos = items[n:]
    for v in protos:
        v.line = 0  # a prototype: each occurrence gets its line from the column
    entry = LineValues(tuple(protos))  # type: ignore[arg-type]
    del items[n + 1 :]
    items[n] = entry
    del m.lines[n + 1 :]
    _learn(b, entry)


def nothing(b: Builder) -> None:
    """The line being handled yields nothing in this state, whatever its text says."""
    if _learnable(b):
        _learn(b, None)


def _learn(b: Builder, entry: LineValues | None) -> None:
    m = b.module
    cache = b.cache
    cache.learn(cache.known(b.mesh_token, m.dialect if m is not None else None), b.raw, entry)  # type: ignore[arg-type]
