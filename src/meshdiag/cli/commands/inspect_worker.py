"""`meshdiag inspect`'s work on one file, in a worker process (or in the command's own for
--jobs 1): scan, check, render to JSON or text, leave the output in the worker's spool.

A named file is scanned module by module (`inspect.scan_checked`): its modules are checked,
rendered and written to the spool a few at a time as they end, so a big file is never held
whole; a batch's files go to their writers a batch at a time (`pipeline.file_batch`).

Kept apart from the command module so its imports (the scanner, checks, renderers) load
only when files are inspected, not for `meshdiag --help`.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, NamedTuple

from meshdiag.checks.registry import module_checks
from meshdiag.errors import LimitError
from meshdiag.ir.model import FileReport, ModuleReport
from meshdiag.ir.parts import FilePart
from meshdiag.ir.scan import read_ahead
from meshdiag.memo import RunMemos
from meshdiag.model.findings import Finding
from meshdiag.pipeline.file_batch import FileBatch
from meshdiag.pipeline.inspect import (
    Inspected,
    file_json_parts,
    joined_findings,
    module_json_bytes,
    scan_checked,
    scan_checked_part,
)
from meshdiag.pipeline.module_summary import summarise_module
from meshdiag.pipeline.spool import SpoolStream
from meshdiag.report.file_text import render_head, render_module, render_tail
from meshdiag.report.plain_console import PlainConsole

if TYPE_CHECKING:
    from rich.console import Console

#: what every file of the run shares: global mesh, target, split, layouts, text look,
#: the console the text is rendered with, the checks, whether batches also fold their files
#: into a `DumpSummary` (for `--html`), the run's memos (one `RunMemos` per process) and
#: the paths the user named (`ir.scan.read_ahead`)
_STATE: dict = {}

#: rendered module text kept in memory before it goes to a temporary file instead (the
#: header, which counts the modules, comes first in the output)
SPILL = 1 << 20


def init(state: tuple, named: frozenset[str] | None = None) -> None:
    """`named`: the paths the user named (the batches' other paths were walked:
    `ir.scan.read_ahead` reads them without a stat first); None: every one is stat'ed."""
    from meshdiag.pipeline.spool import SpoolDir

    mesh, target, split, layouts, look, spool_dir, summarise = state
    _STATE.update(
        mesh=mesh,
        target=target,
        split=split,
        layouts=layouts,
        look=look,
        summarise=summarise,
        named=named,
    )
    SpoolDir.worker_init(spool_dir)
    _STATE["console"] = None  # made by the first file rendered as text
    _STATE["checks"] = module_checks()  # once: loading the registry walks the checks package
    _STATE["memos"] = RunMemos()


def _scan(path: str, each: Callable[[ModuleReport], None], data=None):
    """scan_checked(path) with `each` called per module. `data`: the file's bytes, read
    ahead (`ir.scan.read_ahead`), or None."""
    st = _STATE
    where = (st["mesh"], st["target"], st["split"], st["checks"])
    return scan_checked(path, *where, each, st["memos"], data=data)


def _shown(path: str) -> str:
    return "<stdin>" if path == "-" else path


def _fold(summary, shown: str):
    """The file's `FileFold` of `summary` (a `DumpSummary`, for `--html`), or None."""
    return None if summary is None else summary.fold(shown, _STATE["mesh"], _STATE["memos"])


def _summary():
    """A `DumpSummary` to fold the batch into when the run asked for one, else None."""
    if not _STATE["summarise"]:
        return None
    from meshdiag.pipeline.dump_summary import DumpSummary

    return DumpSummary()


def _findings_json(findings: list[Finding]) -> list[str]:
    """Each finding's JSON (json imported here: the text output never needs it)."""
    import json

    return [json.dumps(f.to_json()) for f in findings]


def json_one(path: str, write: Callable[[bytes], None], summary=None, data=None) -> list[str]:
    """Write the file's JSON (json.dumps writes ASCII) a module at a time; returns each
    finding's JSON. One file alone, through the sink `json_batch` gives each of its files
    (the tests' per-file reference for the batches)."""
    findings: list[str] = []
    shown = _shown(path)
    sink = _JsonFile(shown, write, False, findings, _fold(summary, shown))
    sink.end(_scan(path, sink.module, data))
    return findings


class _FileSink:
    """What a file's writer (a `pipeline.file_batch.FileSink`) does with each module: hands
    it to `each`, and folds it into the run's summary too with `fold` (--html)."""

    def __init__(self, each: Callable[[ModuleReport], None], fold) -> None:
        self.each = each
        self.fold = fold

    def module(self, m: ModuleReport) -> None:
        self.each(m)
        if self.fold is not None:
            self.fold.module(m)

    def _folded(self, item: Inspected) -> None:
        if self.fold is not None:
            self.fold.end(item)


class _JsonFile(_FileSink):
    """One file's JSON: its head written as the sink is made (after ", " when `after`
    another file), each module's as it comes, then its tail; its findings' JSON go to
    `findings`."""

    def __init__(
        self, shown: str, write: Callable[[bytes], None], after: bool, findings: list, fold=None
    ) -> None:
        if after:
            write(b", ")
        head, self.tail = file_json_parts(shown, _STATE["memos"])
        write(head.encode("ascii"))
        super().__init__(_JsonModules(shown, write), fold)
        self.write = write
        self.findings = findings

    def end(self, done: tuple) -> None:
        report, _, found = done
        self._folded(Inspected(report, found))
        self.write(self.tail.encode("ascii"))
        self.findings.extend(_findings_json(found))


class _JsonModules:
    """Each module's JSON (ASCII) written as the module ends, joined by ", ": the file's
    `modules` list, or a part of it."""

    def __init__(self, shown: str, write: Callable[[bytes], None]) -> None:
        self.shown = shown
        self.write = write
        self.wrote = False  # any module yet

    def __call__(self, m: ModuleReport) -> None:
        st = _STATE
        try:
            text = module_json_bytes(
                m, mesh=st["mesh"], split=st["split"], layouts=st["layouts"], memos=st["memos"]
            )
        except LimitError as e:  # name the file: the value's location is line:column only
            raise LimitError(f"{self.shown}: {e}") from None
        if self.wrote:
            self.write(b", ")
        self.write(text)
        self.wrote = True


def text_one(path: str, write: Callable[[bytes], None], summary=None, data=None) -> int:
    """Write the file's rendered summary (UTF-8; file names that are not UTF-8 as the bytes
    they were, through surrogate escapes); returns its number of findings. One file alone,
    through the sink `text_batch` gives each of its files (the tests' per-file reference
    for the batches)."""
    found = [0]
    sink = _TextFile(write, found, _fold(summary, _shown(path)))
    sink.end(_scan(path, sink.module, data))
    return found[0]


class _TextFile(_FileSink):
    """One file's rendered summary: each module rendered as it comes, kept (`_Body`) until
    the file ends, then written after the file's header, which counts them; its number of
    findings is added to `found[0]`."""

    def __init__(self, write: Callable[[bytes], None], found: list[int], fold=None) -> None:
        self.body = _Body()
        super().__init__(_TextModules(self.body.add), fold)
        self.write = write
        self.found = found

    def end(self, done: tuple) -> None:
        report, count, findings = done
        item = Inspected(report, findings)
        self._folded(item)
        each: _TextModules = self.each  # type: ignore[assignment]
        memos, write = _STATE["memos"], self.write
        write(render_head(item, each.console, count, each.values, memos).encode(*_UTF8))
        self.body.copy(write)
        write(render_tail(item, each.console, memos).encode(*_UTF8))
        self.found[0] += len(findings)


class _TextModules:
    """Each module's rendered summary written as the module ends (`write` takes text);
    `values`: whether any module holds a sharded value (the header then shows the key)."""

    def __init__(self, write: Callable[[str], None]) -> None:
        self.write = write
        self.console = _console()
        self.values = False

    def __call__(self, m: ModuleReport) -> None:
        st = _STATE
        self.values = self.values or bool(m.items)  # (not `values`: a list of every one)
        shown = summarise_module(m, mesh=st["mesh"], split=st["split"], memos=st["memos"])
        self.write(render_module(shown, self.console, st["memos"]))


def _console() -> Console | PlainConsole:
    """This process's console for rendering text (made by the first file rendered: its
    rendered parts are reused across files)."""
    console = _STATE.get("console")
    if console is None:
        console = _STATE["console"] = make_console(_STATE["look"])
    return console


def make_console(look: dict) -> Console | PlainConsole:
    """A console that renders text as the command's output shows it (`look`: its width,
    colours, encoding), into a buffer of its own: without rich for a colourless pipe."""
    look = dict(look)
    sink = _Text(look.pop("encoding", "utf-8"))  # rich draws ASCII boxes for ASCII
    if look["color_system"] is None and look["soft_wrap"] and not look["force_terminal"]:
        return PlainConsole(sink, look["width"], look["height"])
    from rich.console import Console

    return Console(file=sink, highlight=False, **look)


#: how rendered text is written: UTF-8, a file name that is not UTF-8 as its own bytes
_UTF8 = ("utf-8", "surrogateescape")


class _Text(io.StringIO):
    """A string buffer that says which encoding the real output has, so rich draws what
    that output can show."""

    def __init__(self, encoding: str) -> None:
        super().__init__()
        self._encoding = encoding

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._encoding


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
                import tempfile  # (4 ms of start-up: shutil, random; a small run never spills)

                self.file = tempfile.TemporaryFile()
            self.file.write("".join(self.parts).encode(*_UTF8))
            self.parts = []
            self.size = 0

    def copy(self, write: Callable[[bytes], None]) -> None:
        if self.file is not None:
            self.file.seek(0)
            while data := self.file.read(1 << 20):
                write(data)
            self.file.close()
        write("".join(self.parts).encode(*_UTF8))


# -- a big file read in parts (`ir.parts`) ----------------------------------------------------


class PartDone(NamedTuple):
    """A worker's part of a big file, besides its spooled output (its modules' JSON joined
    by ", ", or their rendered text): what the parent needs to put the file together."""

    modules: int
    #: any module with a sharded value (text output: its header shows the key; JSON: False)
    values: bool
    scanned: list[Finding]  # the scan's MD001s
    checked: list[Finding]  # the module checks' findings


def json_part(part: FilePart):
    """`json_batch` of one part of a big file: ([part], its modules' JSON, `PartDone`,
    None)."""
    out = SpoolStream()
    count, scanned, checked = _scan_part(part, _JsonModules(part.path, out.write))
    return [part], out.done(), PartDone(count, False, scanned, checked), None


def text_part(part: FilePart):
    """`text_batch` of one part of a big file: ([part], its modules' rendered text,
    `PartDone`, None)."""
    out = SpoolStream()
    each = _TextModules(lambda text: out.write(text.encode(*_UTF8)))
    count, scanned, checked = _scan_part(part, each)
    return [part], out.done(), PartDone(count, each.values, scanned, checked), None


def _scan_part(part: FilePart, each: Callable[[ModuleReport], None]):
    st = _STATE
    where = (st["mesh"], st["target"], st["split"], st["checks"])
    return scan_checked_part(part, *where, each, st["memos"])


def _findings(done: list[PartDone]) -> list[Finding]:
    return joined_findings([(d.scanned, d.checked) for d in done])


def json_ends(path: str, done: list[PartDone]) -> tuple[bytes, bytes, list[str]]:
    """In the parent, once every part of the big file `path` is done: its JSON before and
    after its modules, and its findings' JSON, as `json_one` writes them."""
    head, tail = file_json_parts(path)
    return head.encode("ascii"), tail.encode("ascii"), _findings_json(_findings(done))


def text_ends(path: str, done: list[PartDone], look: dict) -> tuple[bytes, bytes, int]:
    """In the parent, once every part of the big file `path` is done: its rendered text
    before and after its modules, and its number of findings, as `text_one` writes them."""
    console = make_console(look)
    findings = _findings(done)
    item = Inspected(FileReport(path), findings)
    count = sum(d.modules for d in done)
    values = any(d.values for d in done)
    memos = RunMemos()
    head = render_head(item, console, count, values, memos).encode(*_UTF8)
    return head, render_tail(item, console, memos).encode(*_UTF8), len(findings)


# -- batches ----------------------------------------------------------------------------------


def json_batch(paths: list):
    """(paths, where their JSON is in this worker's spool — joined by ", " —, their
    findings' JSON, their `DumpSummary` or None); a part of a big file (`[FilePart]`):
    `json_part`."""
    if paths and paths[0].__class__ is FilePart:
        return json_part(paths[0])
    out = SpoolStream()
    findings: list[str] = []
    summary = _summary()
    batch = FileBatch()
    for i, (path, data) in enumerate(read_ahead(paths, _STATE["named"])):
        shown = _shown(path)
        each = batch.start(
            partial(_JsonFile, shown, out.write, i > 0, findings, _fold(summary, shown))
        )
        batch.end(_scan(path, each, data))
    batch.flush()
    return paths, out.done(), findings, summary


def text_batch(paths: list):
    """(paths, where their rendered text is in this worker's spool (UTF-8), how many
    findings they have, their `DumpSummary` or None); a part of a big file (`[FilePart]`):
    `text_part`."""
    if paths and paths[0].__class__ is FilePart:
        return text_part(paths[0])
    out = SpoolStream()
    found = [0]
    summary = _summary()
    batch = FileBatch()
    for path, data in read_ahead(paths, _STATE["named"]):
        each = batch.start(partial(_TextFile, out.write, found, _fold(summary, _shown(path))))
        batch.end(_scan(path, each, data))
    batch.flush()
    return paths, out.done(), found[0], summary


def summary_batch(paths: list[str]):
    """(paths, their `DumpSummary`): `inspect DIR`'s text report folds every file in."""
    from meshdiag.pipeline.dump_summary import DumpSummary

    s = DumpSummary()
    batch = FileBatch()
    for path, data in read_ahead(paths, _STATE["named"]):
        each = batch.start(partial(_fold, s, _shown(path)))
        report, _, findings = _scan(path, each, data)
        batch.end(Inspected(report, findings))
    batch.flush()
    return paths, s
