"""`meshdiag layout SHARDING --shape S`: the slice of one tensor every device holds."""

from __future__ import annotations

from typing import Annotated

import typer

from .common import FormatOpt, MeshOpt, SplitOpt, TargetOpt, check_format, load_mesh, mesh_findings


def register(app: typer.Typer) -> None:
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
        )


def parse_shape(text: str) -> tuple[int, ...]:
    """`--shape`: `32,32`, `32x32`, `(1,7,32,32)`, `[4, 8]`, `(4,)`; `()`/`[]` is rank 0."""
    from ..errors import MeshdiagError, ParseError
    from ..formats.ttnn import parse_shape as parse_sizes

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
) -> None:
    import json
    import sys

    from ..errors import MeshdiagError
    from ..formats.detect import parse_sharding, to_hlo
    from ..formats.gspmd import print_gspmd
    from ..layout_engine import layout
    from ..limits import check_annotation_length
    from ..splits import check_rule

    check_rule(split)
    if max_cells < 1:
        raise MeshdiagError(f"--max-cells must be at least 1, got {max_cells}")
    shape = parse_shape(shape_text)
    mesh = load_mesh(mesh_text)
    parsed = parse_sharding(check_annotation_length(text, "sharding"), mesh=mesh)
    hlo = to_hlo(parsed, mesh)
    num_devices = mesh.size if mesh is not None else None
    named_mesh = getattr(parsed, "mesh", None)
    if num_devices is None and named_mesh is not None:
        num_devices = named_mesh.size
    lay = layout(hlo, shape, split=split, num_devices=num_devices)
    gspmd = print_gspmd(hlo)
    label = gspmd if text.strip() == gspmd else f"{text.strip()} = {gspmd}"
    from ..checks.md105_uneven_shard import uneven_findings

    findings = mesh_findings(mesh, target) + uneven_findings(hlo, shape, split, where={})

    if fmt == "json":
        doc = lay.to_json(gspmd)
        doc["findings"] = [f.to_json() for f in findings]
        sys.stdout.write(json.dumps(doc) + "\n")
    else:
        from rich.console import Console

        from ..render.grid import LayoutPicture

        console = Console(highlight=False)
        console.print(
            LayoutPicture(
                lay, label, max_cells=max_cells, use_color=console.color_system is not None
            )
        )
        for f in findings:
            console.print(f"{f.code} {f.name} ({f.severity}): {f.message}")
            if f.fix:
                console.print(f"  fix: {f.fix}")
    for path, kind in ((svg, "svg"), (html, "html")):
        if path is None:
            continue
        from ..render.export import to_html, to_svg

        doc = to_svg(lay, label) if kind == "svg" else to_html(lay, label)
        from ..fileio import write_atomic

        write_atomic(path, doc, f"--{kind}")  # an old drawing stays whole until this one is
        print(f"meshdiag: wrote {path}", file=sys.stderr)
