"""`meshdiag inspect`'s work on one file, in a worker process (or in the command's own for
--jobs 1): scan, check, render to JSON or text, leave the output in the worker's spool.

Kept apart from the command module so its imports (the scanner, checks, renderers) load
only when files are inspected, not for `meshdiag --help`.
"""

from __future__ import annotations

import io
import json

from rich.console import Console

from ..checks.registry import module_checks
from ..inspect import Inspected, file_json, file_json_text, run_checks
from ..ir.scan import scan_path
from ..render.inspect_text import render_file
from ..spool import SpoolDir, spool_write

#: what every file of the run shares: global mesh, target, split, layouts, text look,
#: the console the text is rendered with, the checks, whether batches also fold their files
#: into a `DumpSummary` (for `--html`)
_STATE: dict = {}


def init(state: tuple) -> None:
    mesh, target, split, layouts, look, spool_dir, summarise = state
    _STATE.update(
        mesh=mesh, target=target, split=split, layouts=layouts, look=look, summarise=summarise
    )
    SpoolDir.worker_init(spool_dir)
    _STATE["console"] = None  # made by the first file rendered as text
    _STATE["checks"] = module_checks()  # once: loading the registry walks the checks package


def inspected(path: str) -> Inspected:
    st = _STATE
    report = scan_path(path)
    return Inspected(
        report, run_checks(report, st["mesh"], st["target"], st["split"], st["checks"])
    )


def json_one(path: str, summary=None) -> tuple[str, bytes, list[str]]:
    """(path, the file's JSON, each finding's JSON). The file's JSON comes encoded (json.dumps
    writes ASCII): the parent passes the bytes on. The file is folded into `summary` too
    when one is given."""
    st = _STATE
    item = inspected(path)
    if summary is not None:
        summary.add(item, mesh=st["mesh"])
    if st["layouts"]:
        doc = file_json(item.report, mesh=st["mesh"], split=st["split"], layouts=True)
        text = json.dumps(doc)
    else:
        text = file_json_text(item.report)
    return path, text.encode("ascii"), [json.dumps(f.to_json()) for f in item.findings]


def text_one(path: str, summary=None) -> tuple[str, str, int]:
    """(path, the file's rendered summary, number of findings); folded into `summary` too
    when one is given."""
    st = _STATE
    item = inspected(path)
    if summary is not None:
        summary.add(item, mesh=st["mesh"])
    console = st.get("console")
    if console is None:  # one per process: rendered parts are reused across files
        look = dict(st["look"])
        sink = _Text(look.pop("encoding", "utf-8"))  # rich draws ASCII boxes for ASCII
        console = Console(file=sink, highlight=False, **look)
        st["console"] = console
    text = render_file(item, console, mesh=st["mesh"], split=st["split"])
    return path, text, len(item.findings)


class _Text(io.StringIO):
    """A string buffer that says which encoding the real output has, so rich draws what
    that output can show."""

    def __init__(self, encoding: str) -> None:
        super().__init__()
        self._encoding = encoding

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._encoding


def _summary():
    """A `DumpSummary` to fold the batch into when the run asked for one, else None."""
    if not _STATE["summarise"]:
        return None
    from ..dumpsummary import DumpSummary

    return DumpSummary()


def json_batch(paths: list[str]):
    """(paths, where their JSON is in this worker's spool — joined by ", " —, their
    findings' JSON, their `DumpSummary` or None)."""
    parts = []
    findings: list[str] = []
    summary = _summary()
    for path in paths:
        _, data, found = json_one(path, summary)
        parts.append(data)
        findings.extend(found)
    return paths, spool_write(b", ".join(parts)), findings, summary


def text_batch(paths: list[str]):
    """(paths, where their rendered text is in this worker's spool (UTF-8), how many
    findings they have, their `DumpSummary` or None)."""
    texts = []
    findings = 0
    summary = _summary()
    for path in paths:
        _, text, found = text_one(path, summary)
        texts.append(text)
        findings += found
    # file names that are not UTF-8 go out as the bytes they were (surrogate escapes)
    text = "".join(texts).encode("utf-8", "surrogateescape")
    return paths, spool_write(text), findings, summary


def summary_batch(paths: list[str]):
    """(paths, their `DumpSummary`): `inspect DIR`'s text report folds every file in."""
    from ..dumpsummary import DumpSummary

    s = DumpSummary()
    for path in paths:
        s.add(inspected(path), mesh=_STATE["mesh"])
    return paths, s
