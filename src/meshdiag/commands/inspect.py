"""`meshdiag inspect PATH...`: modules, meshes and sharded values in IR dumps, with checks."""

from __future__ import annotations

from typing import Annotated

import typer

from .common import FormatOpt, MeshOpt, SplitOpt, TargetOpt


def register(app: typer.Typer) -> None:
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
) -> None:
    """Read IR dumps: list modules, meshes and sharded values with locations, run the checks.

    Findings do not change the exit code (use `meshdiag lint` to gate on them).
    """
    import sys

    from ..splits import check_rule
    from .common import check_format, load_mesh

    check_format(fmt)
    split_rule = check_rule(split or "xla")
    global_mesh = load_mesh(mesh)
    from ..inspect import iter_inspect

    items = iter_inspect(paths, mesh=global_mesh, target=target, split=split_rule)
    progress = None if quiet or not sys.stderr.isatty() else _Progress()
    try:
        if fmt == "json":
            _write_json(items, global_mesh, split_rule, layouts, progress)
        else:
            _write_text(items, global_mesh, split_rule, progress)
    finally:
        if progress is not None:
            progress.stop()


def _write_json(items, mesh, split, layouts, progress) -> None:
    """Stream the document: each file's JSON goes out as soon as it is scanned."""
    import json
    import sys

    from ..inspect import JSON_VERSION, file_json

    out = sys.stdout
    out.write(f'{{"version": {JSON_VERSION}, "files": [')
    findings = []
    for i, item in enumerate(items):
        if progress is not None:
            progress.advance(item.report.path)
        if i:
            out.write(", ")
        out.write(json.dumps(file_json(item.report, mesh=mesh, split=split, layouts=layouts)))
        findings.extend(f.to_json() for f in item.findings)
    out.write('], "findings": ')
    out.write(json.dumps(findings))
    out.write("}\n")


def _write_text(items, mesh, split, progress) -> None:
    import sys

    from rich.console import Console

    from ..render.inspect_text import file_summary

    console = Console(file=sys.stdout, highlight=False, soft_wrap=False)
    n_files = n_findings = 0
    for item in items:
        if progress is not None:
            progress.advance(item.report.path)
        n_files += 1
        n_findings += len(item.findings)
        console.print(file_summary(item, mesh=mesh, split=split))
        console.print()
    console.print(f"{n_files} file(s), {n_findings} finding(s)")


class _Progress:
    """A transient progress line on stderr, shown only once a scan takes over ~0.5 s."""

    def __init__(self) -> None:
        import time

        self._start = time.monotonic()
        self._bar = None
        self._task = None
        self._n = 0

    def advance(self, path: str) -> None:
        import time

        self._n += 1
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
