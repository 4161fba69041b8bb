"""`meshdiag simulate-copy`: mapper → allocate → copy → read back on a mesh."""

from __future__ import annotations

from typing import Annotated

import typer

from meshdiag.cli.commands import CommandApp
from meshdiag.cli.commands.common import check_format, load_mesh, mesh_findings
from meshdiag.cli.commands.options import FormatOpt, MeshOpt, SplitOpt, TargetOpt


def register(app: CommandApp) -> None:
    @app.command("simulate-copy")
    def simulate_copy_cmd(
        mesh: MeshOpt = None,
        target: TargetOpt = None,
        shape: Annotated[
            str,
            typer.Option(
                "--shape", "-s", metavar="SHAPE", help="Source tensor shape, e.g. 1,7,32,32."
            ),
        ] = "",
        mapper: Annotated[
            str,
            typer.Option(
                "--mapper",
                metavar="MAPPER",
                help="replicate | shard:D | shard2d:R,C[@RxC] | placements:R,S1[@RxC] | any "
                "GSPMD / Shardy / PartitionSpec sharding.",
            ),
        ] = "replicate",
        split: SplitOpt = None,
        era: Annotated[
            str,
            typer.Option(
                "--ttnn-era",
                metavar="[current|2025-05|2025-03|2024]",
                help="TTNN validation to reproduce: current, 2025-05, 2025-03, 2024.",
            ),
        ] = "current",
        dest: Annotated[
            str,
            typer.Option(
                "--dest",
                metavar="DEST",
                help="Destination specs: fresh | uniform:SHAPE | per-device:FILE.",
            ),
        ] = "fresh",
        write: Annotated[
            str,
            typer.Option(
                "--write",
                metavar="[by-reference|by-value]",
                help="by-reference (destination specs become the written devices) | by-value "
                "(destination keeps its specs: the PR #18833 bug).",
            ),
        ] = "by-reference",
        compose: Annotated[
            str | None,
            typer.Option(
                "--compose",
                metavar="COMPOSER",
                help="Read-back composer: concat:D | concat2d:R,C[@RxC] | first | tiles "
                "(default: the mapper's inverse).",
            ),
        ] = None,
        stale: Annotated[
            str,
            typer.Option(
                "--stale",
                metavar="[sentinel|previous]",
                help="Initial buffer contents: sentinel (NaN) | previous (-1, -2, ...).",
            ),
        ] = "sentinel",
        symbolic: Annotated[
            bool,
            typer.Option("--symbolic", help="Compute regions only, never materialise the data."),
        ] = False,
        fmt: FormatOpt = "text",
    ) -> None:
        """Simulate a host-to-device copy of a sharded tensor and its read-back; flag stale
        devices (MD106) and uneven shards (MD105)."""
        import json
        import sys

        from meshdiag.errors import MeshdiagError
        from meshdiag.notation.ttnn import parse_shape
        from meshdiag.simulate.copy import simulate_copy

        check_format(fmt)
        if mesh is None:
            raise MeshdiagError("simulate-copy needs --mesh (e.g. --mesh t3k or --mesh 1x8)")
        if not shape:
            raise MeshdiagError("simulate-copy needs --shape (e.g. --shape 1,7,32,32)")
        mesh_obj = load_mesh(mesh)
        sim = simulate_copy(
            mesh_obj,
            parse_shape(shape, "--shape"),
            mapper,
            split=split,
            dest=dest,
            write=write,
            compose=compose,
            stale=stale,
            era=era,
            symbolic=True if symbolic else None,
        )
        extra = mesh_findings(mesh_obj, target)
        if extra:  # the mesh itself on the --target: MD103/MD104 before the copy's findings
            import dataclasses

            sim = dataclasses.replace(sim, findings=tuple(extra) + sim.findings)
        if fmt == "json":
            # one write: json.dump's indented encoder writes every token separately
            sys.stdout.write(json.dumps(sim.to_json(), indent=1) + "\n")
            return
        from meshdiag.report.simulate_text import render_text

        render_text(sim)
