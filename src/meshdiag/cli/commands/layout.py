"""`meshdiag layout SHARDING --shape S`: the slice of one tensor every device holds."""

from __future__ import annotations

from typing import Annotated

import typer

from meshdiag.cli.commands import CommandApp
from meshdiag.cli.commands.common import check_format, load_mesh, mesh_findings
from meshdiag.cli.commands.options import FormatOpt, MeshOpt, SplitOpt, TargetOpt


def register(app: CommandApp) -> None:
    @app.command("layout")
    def layout_cmd(
        sharding: Annotated[
            str,
            typer.Argument(
                help="Sharding in any notation: GSPMD '{devices=[1,4,2]<=[8] "
                "last_tile_dim_replicate}', Shardy '#sdy.sharding<@mesh, [{}, {\"x\"}]>', "
                "PartitionSpec 'P(None, \"model\")' (needs --mesh)."
            ),
        ],
        shape: Annotated[
            str,
            typer.Option(
                "--shape",
                "-s",
                metavar="SHAPE",
                help="Global tensor shape: 32,32 or (1,7,32,32); () for a scalar.",
            ),
        ],
        mesh: MeshOpt = None,
        target: TargetOpt = None,
        split: SplitOpt = None,
        fmt: FormatOpt = "text",
        svg: Annotated[
            str | None,
            typer.Option(
                "--svg", metavar="FILE", help="Also write the picture as SVG to this file."
            ),
        ] = None,
        html: Annotated[
            str | None,
            typer.Option(
                "--html", metavar="FILE", help="Also write a self-contained HTML page to this file."
            ),
        ] = None,
        max_cells: Annotated[
            int,
            typer.Option(
                "--max-cells",
                metavar="N",
                help="Largest grid drawn; beyond it a table with elision is shown.",
            ),
        ] = 64,
        device_assignment: Annotated[
            str | None,
            typer.Option(
                "--device-assignment",
                metavar="DEVICES",
                help="Physical device of each logical partition: 2,3,6,7,0,1,4,5, a "
                "compile_options.textproto, or a file of the dump directory. The picture then "
                "shows physical devices, and --mesh device_ids are physical (JAX's "
                "Mesh(devices[perm]) order). Without it, ids are logical partition ids.",
            ),
        ] = None,
    ) -> None:
        """Per-device slices of one tensor, as a picture (any rank, any device count) or JSON."""
        check_format(fmt)
        run_layout(
            sharding,
            shape_text=shape,
            mesh_text=mesh,
            target=target,
            split=split or "xla",
            fmt=fmt,
            svg=svg,
            html=html,
            max_cells=max_cells,
            device_assignment=device_assignment,
        )


def parse_shape(text: str) -> tuple[int, ...]:
    """`--shape`: `32,32`, `32x32`, `(1,7,32,32)`, `[4, 8]`, `(4,)`; `()`/`[]` is rank 0."""
    from meshdiag.errors import MeshdiagError, ParseError
    from meshdiag.notation.ttnn import parse_shape as parse_sizes

    try:
        return parse_sizes(text, "shape")
    except ParseError as e:  # name the option first, as the other option errors do
        raise MeshdiagError(
            f"--shape {text!r} is not a list of sizes like 32,32 or (1,7,32,32): {e}"
        ) from None


def run_layout(
    text: str,
    *,
    shape_text: str,
    mesh_text: str | None,
    split: str,
    target: str | None = None,
    fmt: str,
    svg: str | None,
    html: str | None,
    max_cells: int,
    device_assignment: str | None = None,
) -> None:
    import sys

    from meshdiag.errors import MeshdiagError
    from meshdiag.ir.devices import load_assignment, relabel
    from meshdiag.layouts.engine import layout
    from meshdiag.limits import MAX_GRID_CELLS, check_annotation_length
    from meshdiag.model.splits import check_rule
    from meshdiag.notation.detect import parse_sharding, to_hlo
    from meshdiag.notation.gspmd import print_gspmd

    check_rule(split)
    if not 1 <= max_cells <= MAX_GRID_CELLS:
        raise MeshdiagError(
            f"--max-cells must be between 1 and {MAX_GRID_CELLS} (MESHDIAG_MAX_GRID_CELLS), "
            f"got {max_cells}"
        )
    shape = parse_shape(shape_text)
    mesh = load_mesh(mesh_text)
    da = load_assignment(device_assignment) if device_assignment is not None else None
    if da is not None and mesh is not None and mesh.device_ids is not None:
        logical = da.logical_mesh(mesh)
        if logical is None:
            raise MeshdiagError(
                "--mesh device_ids are not the devices --device-assignment lists "
                f"({da.mapping_text()})"
            )
        mesh = logical  # physical device ids → the logical partitions running on them
    parsed = parse_sharding(check_annotation_length(text, "sharding"), mesh=mesh, rank=len(shape))
    hlo = to_hlo(parsed, mesh)  # logical partition ids, as GSPMD text means them
    num_devices = mesh.size if mesh is not None else None
    named_mesh = getattr(parsed, "mesh", None)
    if num_devices is None and named_mesh is not None:
        num_devices = named_mesh.size
    shown = hlo
    if da is not None:
        shown = relabel(hlo, da, len(shape))
        num_devices = max(da.devices) + 1
        ids_text = f"device ids: physical devices (logical partition → device: {da.mapping_text()})"
    elif mesh is not None and mesh.device_ids is not None:
        ids_text = (
            "device ids: logical partition ids, the mesh's device_ids as Shardy reads them "
            "(--device-assignment reads them as physical devices)"
        )
    else:
        ids_text = "device ids: logical partition ids"
    lay = layout(shown, shape, split=split, num_devices=num_devices)
    gspmd = print_gspmd(hlo)
    label = gspmd if text.strip() == gspmd else f"{text.strip()} = {gspmd}"
    from meshdiag.checks.md105_uneven_shard import uneven_findings

    findings = mesh_findings(mesh, target) + uneven_findings(hlo, shape, split, where={})

    if fmt == "json":
        # streamed: a million devices are 120 MB of JSON, not a million dicts in memory
        extra = {
            "device_ids": "physical" if da is not None else "logical",
            "device_assignment": da.to_json() if da is not None else None,
            "findings": [f.to_json() for f in findings],
        }
        lay.write_json(sys.stdout, gspmd, extra)
        sys.stdout.write("\n")
    else:
        from rich.console import Console

        from meshdiag.report.picture import LayoutPicture

        console = Console(highlight=False)
        console.print(ids_text, style="dim")
        console.print(
            LayoutPicture(
                lay, label, max_cells=max_cells, use_color=console.color_system is not None
            )
        )
        from meshdiag.report.finding_text import brief

        for f in findings:
            console.print(brief(f))
    for path, kind in ((svg, "svg"), (html, "html")):
        if path is None:
            continue
        from meshdiag.report.svg import to_html, to_svg

        doc = to_svg(lay, label) if kind == "svg" else to_html(lay, label)
        from meshdiag.fileio import write_atomic

        write_atomic(path, doc, f"--{kind}")  # an old drawing stays whole until this one is
        print(f"meshdiag: wrote {path}", file=sys.stderr)
