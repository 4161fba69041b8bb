"""`meshdiag inspect`'s work on one file, in a worker process (or in the command's own for
--jobs 1): scan, check, render to JSON or text, leave the output in the worker's spool.

A named file is scanned module by module (`inspect.scan_checked`): each module is checked,
rendered and written to the spool as soon as it ends, so a big file is never held whole.

Kept apart from the command module so its imports (the scanner, checks, renderers) load
only when files are inspected, not for `meshdiag --help`.
"""

from __future__ import annotations

import io
import json
import tempfile
from collections.abc import Callable

from rich.console import Console

from ..checks.registry import module_checks
from ..inspect import (
    FILE_JSON_TAIL,
    Inspected,
    file_json_head,
    module_json,
    module_json_text,
    scan_checked,
)
from ..ir.model import ModuleReport
from ..render.inspect_text import render_head, render_module, render_tail
from ..spool import SpoolStream

#: what every file of the run shares: global mesh, target, split, layouts, text look,
#: the console the text is rendered with, the checks
_STATE: dict = {}

#: rendered module text kept in memory before it goes to a temporary file instead (the
#: header, which counts the modules, comes first in the output)
SPILL = 1 << 20


def init(state: tuple) -> None:
    from ..spool import SpoolDir

    mesh, target, split, layouts, look, spool_dir = state
    _STATE.update(mesh=mesh, target=target, split=split, layouts=layouts, look=look)
    SpoolDir.worker_init(spool_dir)
    _STATE["console"] = None  # made by the first file rendered as text
    _STATE["checks"] = module_checks()  # once: loading the registry walks the checks package


def _scan(path: str, each: Callable[[ModuleReport], None]):
    st = _STATE
    return scan_checked(path, st["mesh"], st["target"], st["split"], st["checks"], each)


def json_one(path: str, write: Callable[[bytes], None]) -> list[str]:
    """Write the file's JSON (json.dumps writes ASCII) a module at a time; returns each
    finding's JSON."""
    st = _STATE
    write(file_json_head("<stdin>" if path == "-" else path).encode("ascii"))
    first = True

    def each(m: ModuleReport) -> None:
        nonlocal first
        if st["layouts"]:
            doc = module_json(m, mesh=st["mesh"], split=st["split"], layouts=True)
            text = json.dumps(doc)
        else:
            text = module_json_text(m)
        if not first:
            write(b", ")
        write(text.encode("ascii"))
        first = False

    _, _, findings = _scan(path, each)
    write(FILE_JSON_TAIL.encode("ascii"))
    return [json.dumps(f.to_json()) for f in findings]


def text_one(path: str, write: Callable[[bytes], None]) -> int:
    """Write the file's rendered summary (UTF-8); returns its number of findings."""
    st = _STATE
    console = st.get("console")
    if console is None:  # one per process: rendered parts are reused across files
        console = Console(file=io.StringIO(), highlight=False, **st["look"])
        st["console"] = console
    body = _Body()

    def each(m: ModuleReport) -> None:
        body.add(render_module(m, console, mesh=st["mesh"], split=st["split"]))

    report, count, findings = _scan(path, each)
    item = Inspected(report, findings)
    write(render_head(item, console, count).encode("utf-8"))
    body.copy(write)
    write(render_tail(item, console).encode("utf-8"))
    return len(findings)


class _Body:
    """Rendered modules waiting for the header: in memory, or past `SPILL` characters in
    a temporary file."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.file = None

    def add(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text)
        if self.size >= SPILL:
            if self.file is None:
                self.file = tempfile.TemporaryFile()
            self.file.write("".join(self.parts).encode("utf-8"))
            self.parts = []
            self.size = 0

    def copy(self, write: Callable[[bytes], None]) -> None:
        if self.file is not None:
            self.file.seek(0)
            while data := self.file.read(1 << 20):
                write(data)
            self.file.close()
        write("".join(self.parts).encode("utf-8"))


def json_batch(paths: list[str]):
    """(paths, where their JSON is in this worker's spool — joined by ", " —, their
    findings' JSON)."""
    out = SpoolStream()
    findings: list[str] = []
    for i, path in enumerate(paths):
        if i:
            out.write(b", ")
        findings.extend(json_one(path, out.write))
    return paths, out.done(), findings


def text_batch(paths: list[str]):
    """(paths, where their rendered text is in this worker's spool (UTF-8), how many
    findings they have)."""
    out = SpoolStream()
    findings = 0
    for path in paths:
        findings += text_one(path, out.write)
    return paths, out.done(), findings


def summary_batch(paths: list[str]):
    """(paths, their `DumpSummary`): `inspect DIR`'s text report folds every file in."""
    from ..dumpsummary import DumpSummary

    s = DumpSummary()
    for path in paths:
        fold = s.fold("<stdin>" if path == "-" else path, _STATE["mesh"])
        report, _, findings = _scan(path, fold.module)
        s.end(fold, Inspected(report, findings))
    return paths, s
