"""`meshdiag comms PATH...`: every collective in partitioned dumps, what it costs per device,
and which mesh axes it runs over."""

from __future__ import annotations

from typing import Annotated

import typer

from meshdiag.cli.commands import CommandApp
from meshdiag.cli.commands.options import BudgetOpt, FormatOpt, MeshOpt, RematOpt


def register(app: CommandApp) -> None:
    app.command(name="comms")(comms)


def comms(
    paths: Annotated[
        list[str], typer.Argument(help="HLO text or Shardy MLIR dumps, directories, '-' (stdin).")
    ],
    mesh: MeshOpt = None,
    fmt: FormatOpt = "text",
    collective_budget: BudgetOpt = None,
    remat_min_bytes: RematOpt = None,
) -> None:
    """List every collective with its groups, mesh axes and bytes per device (largest first)."""
    import os
    import shutil
    import sys
    import tempfile

    from meshdiag.checks.context import CheckContext
    from meshdiag.cli.commands.common import check_format, load_mesh
    from meshdiag.comms.report import JsonWriter
    from meshdiag.comms.scan import scan_collectives
    from meshdiag.errors import MeshdiagError
    from meshdiag.lint.config import REMAT_MIN_BYTES
    from meshdiag.memo import RunMemos
    from meshdiag.model.findings import Finding
    from meshdiag.notation.byte_size import parse_size
    from meshdiag.pipeline.comms_checks import run_collective_checks
    from meshdiag.report.comms_text import TextWriter

    check_format(fmt)
    global_mesh = load_mesh(mesh)
    budget = parse_size(collective_budget, "--collective-budget") if collective_budget else None
    remat = parse_size(remat_min_bytes, "--remat-min-bytes") if remat_min_bytes else REMAT_MIN_BYTES
    for p in paths:
        if p != "-" and not os.path.exists(p):
            raise MeshdiagError(f"{p}: no such file or directory")
    findings: list[Finding] = []
    memos = RunMemos()
    # written a file at a time to a temporary file (a run keeps no file's collectives),
    # shown once every file read: bad input shows its one-line error and nothing else
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="surrogateescape") as out:
        writer = JsonWriter(out.write, global_mesh) if fmt == "json" else TextWriter(out.write)
        for f in scan_collectives(paths, memos):
            if f.problems:  # bad input: one line with its location, exit 2
                pr = f.problems[0]
                where = f"{f.path}:{pr.line}:{pr.column}" if pr.line else f.path
                raise MeshdiagError(f"{where}: {pr.message}")
            ctx = CheckContext(
                f.path,
                mesh=global_mesh,
                collective_budget=budget,
                remat_min_bytes=remat,
                memos=memos,
            )
            measured, found = run_collective_checks(f, ctx)
            writer.file(measured)
            findings.extend(found)
        findings.sort(key=Finding.sort_key)
        writer.end(findings)
        if fmt == "json":
            out.write("\n")
        out.seek(0)
        shutil.copyfileobj(out, sys.stdout)
