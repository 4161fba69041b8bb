"""`meshdiag reshard FROM TO --shape S --mesh M`: the collectives between two layouts, their
bytes per device, and what every device receives."""

from __future__ import annotations

from typing import Annotated

import typer

from meshdiag.cli.commands import CommandApp
from meshdiag.cli.commands.common import check_format, load_mesh
from meshdiag.cli.commands.options import FormatOpt, MeshOpt


def register(app: CommandApp) -> None:
    @app.command("reshard")
    def reshard_cmd(
        source: Annotated[str, typer.Argument(metavar="FROM", help="Sharding the tensor has.")],
        target: Annotated[str, typer.Argument(metavar="TO", help="Sharding it should get.")],
        shape: Annotated[
            str,
            typer.Option(
                "--shape", "-s", metavar="SHAPE", help="Global tensor shape: 16,32 or (4,8,128)."
            ),
        ],
        mesh: MeshOpt = None,
        dtype: Annotated[
            str,
            typer.Option(
                "--dtype", metavar="DTYPE", help="Element type: f32, bf16, f16, s8, ... (f32)."
            ),
        ] = "f32",
        fmt: FormatOpt = "text",
    ) -> None:
        """Collectives that take FROM to TO on the mesh, with bytes per device (ring factors)."""
        import json
        import sys

        from meshdiag.cli.commands.layout import parse_shape
        from meshdiag.layouts.reshard import reshard
        from meshdiag.report.reshard_report import render_text, to_json

        check_format(fmt)
        dims = parse_shape(shape)
        cost = reshard(source, target, shape=dims, mesh=load_mesh(mesh), dtype=dtype)
        name = dtype.strip().lower()
        if fmt == "json":
            sys.stdout.write(json.dumps(to_json(cost, source, target, name)) + "\n")
        else:
            sys.stdout.write("\n".join(render_text(cost, source, target, name)) + "\n")
