"""`meshdiag diff A B`: two shardings (any notations) or two dumps, compared by what every
device holds. Exit code 0 same, 1 different (like `diff`), 2 error."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from meshdiag.cli.commands import CommandApp
from meshdiag.cli.commands.common import check_format, load_mesh
from meshdiag.cli.commands.options import FormatOpt, MeshOpt, SplitOpt


def register(app: CommandApp) -> None:
    @app.command("diff")
    def diff_cmd(
        a: Annotated[
            str, typer.Argument(metavar="A", help="A sharding, or a dump file/directory.")
        ],
        b: Annotated[
            str, typer.Argument(metavar="B", help="A sharding, or a dump file/directory.")
        ],
        mesh: MeshOpt = None,
        shape: Annotated[
            str | None,
            typer.Option(
                "--shape",
                "-s",
                metavar="SHAPE",
                help="Global tensor shape for two shardings (default: compare tile by tile).",
            ),
        ] = None,
        split: SplitOpt = None,
        details: Annotated[
            bool,
            typer.Option("--details", help="For dumps: list the devices of every changed value."),
        ] = False,
        fmt: FormatOpt = "text",
    ) -> None:
        """Compare two shardings or two dumps by per-device slices: same, permuted, different."""
        import itertools
        import json
        import sys

        from meshdiag.model.splits import check_rule

        check_format(fmt)
        rule = check_rule(split or "xla")
        m = load_mesh(mesh)
        exists = [os.path.exists(x) for x in (a, b)]
        if exists[0] != exists[1]:
            from meshdiag.errors import MeshdiagError

            missing, name = (b, "B") if exists[0] else (a, "A")
            raise MeshdiagError(f"{name}: {missing}: no such file or directory")
        if all(exists):
            from meshdiag.pipeline.dump_diff import DumpDiff
            from meshdiag.report.diff_report import dumps_json, dumps_text

            if shape is not None:
                from meshdiag.errors import MeshdiagError

                raise MeshdiagError("--shape is for two shardings; dump values carry their shapes")
            run = DumpDiff(a, b, mesh=m, split=rule)
            found = iter(run)
            # a file given itself with nothing to read raises before its first value:
            # nothing is written before that error
            first = next(found, None)
            diffs = itertools.chain(() if first is None else (first,), found)
            if fmt == "json":
                pieces = dumps_json(diffs, a, b, run)
            else:
                lines = dumps_text(diffs, a, b, details=details, run=run)
                pieces = (line + "\n" for line in lines)
            out = sys.stdout
            for piece in pieces:
                out.write(piece)
            if fmt == "json":
                out.write("\n")
            if run.problem_count:  # not every value was compared: trouble, as diff says it
                print(
                    f"meshdiag: {run.problem_count} part(s) of the dumps could not be read; "
                    "their values were not compared (listed in the output)",
                    file=sys.stderr,
                )
                raise typer.Exit(2)
            raise typer.Exit(1 if run.differs else 0)
        from meshdiag.cli.commands.layout import parse_shape
        from meshdiag.layouts.diff import SAME, diff_shardings
        from meshdiag.report.diff_report import sharding_json, sharding_text

        dims = parse_shape(shape) if shape is not None else None
        res = diff_shardings(a, b, mesh=m, shape=dims, split=rule)
        if fmt == "json":
            sys.stdout.write(json.dumps(sharding_json(res, a, b)) + "\n")
        else:
            sys.stdout.write("\n".join(sharding_text(res, a, b)) + "\n")
        raise typer.Exit(0 if res.diff.verdict == SAME else 1)
