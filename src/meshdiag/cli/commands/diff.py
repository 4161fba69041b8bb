"""`meshdiag diff A B`: two shardings (any notations) or two dumps, compared by what every
device holds. Exit code 0 same, 1 different (like `diff`), 2 error."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from meshdiag.cli.commands.common import FormatOpt, MeshOpt, SplitOpt, check_format, load_mesh


def register(app: typer.Typer) -> None:
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
            from meshdiag.pipeline.dump_diff import all_same, diff_dumps
            from meshdiag.report.diff_report import dumps_json, dumps_text

            if shape is not None:
                from meshdiag.errors import MeshdiagError

                raise MeshdiagError("--shape is for two shardings; dump values carry their shapes")
            diffs = diff_dumps(a, b, mesh=m, split=rule)
            if fmt == "json":
                sys.stdout.write(json.dumps(dumps_json(diffs, a, b)) + "\n")
            else:
                sys.stdout.write("\n".join(dumps_text(diffs, a, b, details=details)) + "\n")
            raise typer.Exit(0 if all_same(diffs) else 1)
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
