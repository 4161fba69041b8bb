"""The option types commands share (`--mesh`, `--target`, `--split`, `--format`, the
collective checks' sizes): typer's `Annotated` parameters. Only a command's signature names
them; `inspect` and `lint` bind them when registered (`common.bind_typer_names`), so that
running those without typer (`cli.direct`) does not import this module."""

from __future__ import annotations

from typing import Annotated

import typer

MeshOpt = Annotated[
    str | None,
    typer.Option(
        "--mesh",
        "-m",
        metavar="MESH",
        help="Global mesh: 'batch=2,model=4', '2x4', '<[\"x\"=2, \"y\"=4]>', a preset "
        "(n150, n300, t3k, galaxy, p150, p300, ...), or a .toml/.json file.",
    ),
]
TargetOpt = Annotated[
    str | None,
    typer.Option(
        "--target",
        "-t",
        metavar="TARGET",
        help="Backend whose limits to check: tt-mlir, generic, t3k, ...",
    ),
]
SplitOpt = Annotated[
    str | None,
    typer.Option(
        "--split",
        metavar="[xla|chunk|array-split|even]",
        help="Split rule for uneven dims (default xla).",
    ),
]
FormatOpt = Annotated[
    str,
    typer.Option("--format", "-f", metavar="[text|json]", help="Output format."),
]
#: the collective checks' sizes (`comms` and `lint`): bytes, e.g. 65536, 64KiB, 1GB
BudgetOpt = Annotated[
    str | None,
    typer.Option(
        "--collective-budget",
        metavar="BYTES",
        help="Bytes one collective may move per device (MD201): 65536, 64KiB, 1GB.",
    ),
]
RematOpt = Annotated[
    str | None,
    typer.Option(
        "--remat-min-bytes",
        metavar="BYTES",
        help="Smallest tensor whose full gather MD202 reports [default: 1MiB].",
    ),
]
