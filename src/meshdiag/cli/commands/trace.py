"""`meshdiag trace PATH --value NAME`: one value's sharding, mesh and per-device layout at
every stage of a pass sequence, and the first stage where it changed. Exit 0 when the value
was found, 2 when it is in no stage (or on bad input)."""

from __future__ import annotations

from typing import Annotated

import typer

from meshdiag.cli.commands import CommandApp
from meshdiag.cli.commands.common import check_format, load_mesh
from meshdiag.cli.commands.options import FormatOpt, MeshOpt, SplitOpt


def register(app: CommandApp) -> None:
    @app.command("trace")
    def trace_cmd(
        path: Annotated[
            str,
            typer.Argument(
                help="An --xla_dump_to directory, a Shardy or tt-xla stage directory, an MLIR "
                "file of IR Dump Before/After sections, or a tt-xla debug log."
            ),
        ],
        value: Annotated[
            str,
            typer.Option(
                "--value",
                metavar="NAME",
                help="The value: a name inspect prints (%arg0, result#0, %param.1), an HLO "
                "instruction name, a loc(...) or op_name, arg:N or result:N.",
            ),
        ],
        module: Annotated[
            str | None,
            typer.Option(
                "--module",
                metavar="MODULE",
                help="The program to trace, when the dump holds several.",
            ),
        ] = None,
        all_stages: Annotated[
            bool,
            typer.Option(
                "--all", help="One row per stage (default: runs of equal stages are one)."
            ),
        ] = False,
        mesh: MeshOpt = None,
        split: SplitOpt = None,
        fmt: FormatOpt = "text",
    ) -> None:
        """Follow one value through a pass sequence: its sharding at each stage, and which pass
        changed what each device holds."""
        import json
        import shutil
        import sys

        from meshdiag.model.splits import check_rule
        from meshdiag.report.trace_report import trace_json, trace_text
        from meshdiag.trace.run import trace_path

        check_format(fmt)
        rule = check_rule(split or "xla")
        t = trace_path(path, value, module=module, mesh=load_mesh(mesh), split=rule)
        if fmt == "json":
            sys.stdout.write(json.dumps(trace_json(t)) + "\n")
        else:
            width = shutil.get_terminal_size((80, 24)).columns if sys.stdout.isatty() else 80
            sys.stdout.write("\n".join(trace_text(t, all_stages=all_stages, width=width)) + "\n")
        raise typer.Exit(0)
