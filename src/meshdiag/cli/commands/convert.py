"""`meshdiag convert`: translate a sharding between notations, or derive the mesh XLA would."""

from __future__ import annotations

from typing import Annotated

import typer

from meshdiag.cli.commands import CommandApp
from meshdiag.cli.commands.common import check_format, load_mesh
from meshdiag.cli.commands.options import FormatOpt, MeshOpt

TARGET_FORMATS = ("gspmd", "gspmd-v1", "gspmd-v3", "sdy", "pspec")


def register(app: CommandApp) -> None:
    @app.command("convert")
    def convert_cmd(
        sharding: Annotated[str, typer.Argument(help="Sharding in any notation.")],
        to: Annotated[
            str | None,
            typer.Option(
                "--to",
                metavar="[" + "|".join(TARGET_FORMATS) + "]",
                help="Target notation: " + ", ".join(TARGET_FORMATS) + ".",
            ),
        ] = None,
        mesh: MeshOpt = None,
        derive_mesh: Annotated[
            bool,
            typer.Option(
                "--derive-mesh",
                help="Show the mesh XLA's Shardy import would build from this sharding, "
                "and every other mesh it fits.",
            ),
        ] = False,
        fmt: FormatOpt = "text",
    ) -> None:
        """Translate between GSPMD (V1/V2/V3), Shardy and PartitionSpec notations."""
        from meshdiag.notation.convert import run_convert

        check_format(fmt)
        if to is None and not derive_mesh:
            to = "gspmd"
        if to is not None and to not in TARGET_FORMATS:
            from meshdiag.errors import MeshdiagError

            raise MeshdiagError(f"unknown --to {to!r}; expected one of {', '.join(TARGET_FORMATS)}")
        run_convert(sharding, to=to, mesh=load_mesh(mesh), derive=derive_mesh, fmt=fmt)
