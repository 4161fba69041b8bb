"""`meshdiag inspect PATH...`: modules, meshes and sharded values in IR dumps, with checks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from meshdiag.cli.commands import CommandApp
from meshdiag.cli.commands.common import bind_typer_names

if TYPE_CHECKING:  # bound when registered (`bind_typer_names`): run directly without typer
    import typer

    from meshdiag.cli.commands.options import FormatOpt, MeshOpt, SplitOpt, TargetOpt


def register(app: CommandApp) -> None:
    bind_typer_names(globals())
    app.command(name="inspect")(inspect)


def inspect(
    paths: Annotated[
        list[str],
        typer.Argument(help="IR dumps: files, directories, .gz files, '-' for stdin."),
    ],
    mesh: MeshOpt = None,
    target: TargetOpt = None,
    split: SplitOpt = None,
    fmt: FormatOpt = "text",
    layouts: Annotated[
        bool, typer.Option("--layouts", help="Add per-device slices of every value (JSON).")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs", "-j", metavar="N", help="Worker processes [default: all cores]; 1 = serial."
        ),
    ] = None,
    html: Annotated[
        str | None,
        typer.Option(
            "--html",
            metavar="FILE",
            help="Also write the report as one self-contained HTML page to this file.",
        ),
    ] = None,
) -> None:
    """Read IR dumps: list modules, meshes and sharded values with locations, run the checks.

    A directory (an XLA --xla_dump_to dump) is one report: a summary, then each distinct
    sharding once with the files it appears in. Named files are listed one by one. Findings
    do not change the exit code (use `meshdiag lint` to gate on them).
    """
    import os
    import sys

    from meshdiag.cli.commands.common import check_format, load_mesh
    from meshdiag.errors import MeshdiagError
    from meshdiag.model.splits import check_rule

    check_format(fmt)
    split_rule = check_rule(split or "xla")
    global_mesh = load_mesh(mesh)
    from itertools import chain

    from meshdiag.cleanup import signals_deferred
    from meshdiag.cli.commands import inspect_worker as worker
    from meshdiag.ir.batches import stream
    from meshdiag.ir.parts import file_parts
    from meshdiag.ir.scan import expand_paths
    from meshdiag.pipeline.inspect import default_jobs, map_files
    from meshdiag.pipeline.spool import SpoolDir

    skipped: list[str] = []  # filled as the walk goes on: counted once the output is out
    walk = expand_paths(paths, skipped)
    named = frozenset(paths)  # the rest were walked: read without a stat first
    first = next(walk, None)
    if first is None:  # an empty or unreadable tree: say so rather than report nothing
        raise MeshdiagError(f"no files to inspect in {', '.join(paths)}")
    if "-" in paths:
        if html is not None:
            raise MeshdiagError("--html reads its paths twice: name files, not '-' (stdin)")
        jobs = 1  # stdin is this process's
    progress = None if quiet or not sys.stderr.isatty() else _Progress()
    # files go to the workers in batches; a worker leaves a batch's output in its spool
    # file and the parent copies it out in order: one result and one copy per batch
    n = default_jobs() if jobs is None else max(jobs, 1)
    # batches of about equal bytes, cut while the walk goes on; workers when there are
    # enough bytes to pay for them. A big MLIR file is read in parts by several workers
    # (`ir.parts`), but for the directory report and --html (whose summaries count files)
    dirs = any(p != "-" and os.path.isdir(p) for p in paths)
    split = file_parts if html is None and (fmt == "json" or not dirs) else None
    batches, parallel = stream(chain([first], walk), n, split)
    par = {"parallel": parallel, "chunksize": 1}
    spool = SpoolDir()
    summary = None  # of every file, for --html
    results = None
    try:
        if fmt == "json":
            spool_dir: str | None = None
            if not parallel:  # one process: each batch's JSON straight out, joined by ", "
                spool.direct(sys.stdout.buffer, b", ")
            else:
                spool_dir = spool.directory
            state = (global_mesh, target, split_rule, layouts, None, spool_dir, bool(html))
            results = map_files(
                worker.json_batch, batches, jobs, worker.init, (state, named), **par
            )
            summary = _write_json(results, progress, spool, skipped)
        else:
            from meshdiag.report.plain_console import plain_console

            # a colourless pipe: no rich unless some part needs it
            console = plain_console(sys.stdout)
            if console is None:
                from rich.console import Console

                console = Console(file=sys.stdout, highlight=False, soft_wrap=False)
                # piped output keeps its lines whole (paths, shardings); pictures still
                # fit the width
                console.soft_wrap = not console.is_terminal
            # workers render with the same width and colours as this console
            look = {
                "width": console.width,
                "height": console.height,  # with both set rich never asks the terminal
                "color_system": console.color_system,
                "force_terminal": console.is_terminal,
                "soft_wrap": console.soft_wrap,
                "encoding": console.encoding,
            }
            spool_dir, out = None, _binary_out(console)
            if parallel:
                spool_dir = spool.directory
            elif out is not None:  # one process: the text straight out
                spool.direct(out, b"")
            else:  # (a text-only stream: spooled, then decoded)
                spool.serial()
            state = (global_mesh, target, split_rule, False, look, spool_dir, bool(html))
            if dirs:
                # a dump directory reads as one report
                fn = worker.summary_batch
                results = map_files(fn, batches, jobs, worker.init, (state, named), **par)
                summary = _write_summary(results, console, progress, paths, skipped, split_rule)
            else:
                fn = worker.text_batch
                results = map_files(fn, batches, jobs, worker.init, (state, named), **par)
                summary = _write_text(results, console, out, progress, spool, skipped, look)
    finally:
        # the pool first (it stops the workers writing to the spool), whatever stopped the
        # output: a closed pipe, a signal; the process may end without collecting garbage.
        # A signal now (the run may be just ending) waits until both are done.
        with signals_deferred():
            if results is not None:
                results.close()
            spool.close()
            if progress is not None:
                progress.stop()
    if html is not None:
        from meshdiag.cli.commands.inspect_page import write_page

        write_page(html, summary, paths, global_mesh, split_rule)


def _write_json(results, progress, spool, skipped: list[str]):
    """Stream the document: each file's JSON goes out as soon as it is ready, in order.
    Returns the files' `DumpSummary` when the batches made one (--html), else None.

    `json.dumps` of a list is its items' dumps joined by ", ": the same bytes as one dumps.
    """
    import sys

    from meshdiag.cli.commands.inspect_worker import json_ends
    from meshdiag.pipeline.dump_summary import DumpSummary
    from meshdiag.pipeline.inspect import JSON_VERSION

    summary = DumpSummary()

    sys.stdout.flush()
    out = sys.stdout.buffer  # the files' JSON comes as ASCII bytes
    out.write(b'{"version": %d, "files": [' % JSON_VERSION)
    findings: list[str] = []
    made = False
    for i, (paths, spooled, found, part, parts) in enumerate(_whole_files(results)):
        if i and not spool.is_direct:  # (a direct writer puts it before the batch's JSON)
            out.write(b", ")
        if parts is None:
            spool.copy(spooled, out)  # the batch's files, joined by ", " already
        else:  # a big file read in parts: its modules' JSON between its own head and tail
            head, tail, found = json_ends(paths[0], [d for _, d in parts])
            out.write(head)
            for k, s in enumerate([s for s, d in parts if d.modules]):
                if k:
                    out.write(b", ")
                spool.copy(s, out)
            out.write(tail)
        if progress is not None:
            progress.advance(paths)
        findings.extend(found)
        if part is not None:
            summary.merge(part)
            made = True
    summary.skipped += len(skipped)  # the walk is over: every batch is out
    out.write(b'], "findings": [')
    out.write(", ".join(findings).encode("ascii"))
    out.write(b"]}\n")
    out.flush()
    return summary if made else None


def _write_summary(results, console, progress, roots, skipped: list[str], split: str):
    """Fold the batches' summaries in order, print the report, return the summary."""
    from meshdiag.pipeline.dump_summary import DumpSummary
    from meshdiag.report.dump_text import report
    from meshdiag.report.file_text import render_part

    summary = DumpSummary()
    for paths, part in results:
        if progress is not None:
            progress.advance(paths)
        summary.merge(part)
    summary.skipped += len(skipped)  # the walk is over: every batch is out
    if progress is not None:
        progress.stop()
    # each part as `console.print` draws it (piped: its plain text, without rich's layout
    # pass over thousands of lines)
    write = console.file.write
    for part in report(summary, roots=list(roots), split=split):
        write(render_part(part, console, None))
    console.file.flush()
    return summary


def _write_text(results, console, out, progress, spool, skipped: list[str], look: dict):
    """Copy the files' rendered text out in order, to `out` (`_binary_out(console)`) or,
    where that is None, decoded to the console's text stream; return their `DumpSummary`
    when the batches made one (--html), else None."""
    from meshdiag.cli.commands.inspect_worker import text_ends

    summary = None  # made by the first batch that brings one (--html)
    n_files = n_findings = 0
    console.file.flush()

    def write(data: bytes) -> None:
        if out is not None:
            out.write(data)
        else:  # a text-only stream
            console.file.write(data.decode("utf-8", "surrogateescape"))

    def copy(spooled) -> None:
        if out is not None:
            spool.copy(spooled, out)
        else:
            write(spool.read(spooled))

    for paths, spooled, found, part, parts in _whole_files(results):
        if parts is None:
            copy(spooled)
        else:  # a big file read in parts: its modules' text between its own head and tail
            head, tail, found = text_ends(paths[0], [d for _, d in parts], look)
            write(head)
            for s, _ in parts:
                copy(s)
            write(tail)
        if progress is not None:
            progress.advance(paths)
        if part is not None:
            if summary is None:
                summary = part
            else:
                summary.merge(part)
        n_files += len(paths)
        n_findings += found
    if out is not None:
        out.flush()
    if summary is not None:
        summary.skipped += len(skipped)  # the walk is over: every batch is out
    console.print(f"{n_files} file(s), {n_findings} finding(s)")
    return summary


def _binary_out(console):
    """Where the rendered text (UTF-8 bytes) goes as it is: the console's binary stream
    when its encoding is UTF-8; None for any other (the text is decoded and written)."""
    utf8 = console.encoding.replace("_", "-").startswith("utf")
    return getattr(console.file, "buffer", None) if utf8 else None


def _whole_files(results):
    """The batches' results (paths, spooled output, findings, summary), each big file read
    in parts (`ir.parts`) gathered into one: then paths is the file alone, and last comes
    the (spooled output, `PartDone`) of each of its parts; None for a batch of files."""
    from meshdiag.ir.parts import FilePart

    parts: list = []
    for paths, spooled, found, summary in results:
        if not paths or paths[0].__class__ is not FilePart:
            yield paths, spooled, found, summary, None
            continue
        parts.append((spooled, found))
        if paths[0].last:
            yield [paths[0].path], None, None, None, parts
            parts = []


class _Progress:
    """A transient progress line on stderr, shown only once a scan takes over ~0.5 s."""

    def __init__(self) -> None:
        import time

        self._start = time.monotonic()
        self._bar = None
        self._task = None
        self._n = 0

    def advance(self, paths: list[str]) -> None:
        """`paths` are done."""
        import time

        self._n += len(paths)
        path = paths[-1]
        if self._bar is None:
            if time.monotonic() - self._start < 0.5:
                return
            from rich.console import Console
            from rich.progress import Progress, SpinnerColumn, TextColumn

            self._bar = Progress(
                SpinnerColumn(),
                TextColumn("{task.completed} files  {task.description}"),
                console=Console(stderr=True),
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task("", total=None)
        self._bar.update(self._task, completed=self._n, description=path[-60:])

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
