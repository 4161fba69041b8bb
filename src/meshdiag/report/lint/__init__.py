"""One writer per `--output-format`; each is `write(result, stream, ctx)`."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, TextIO

from meshdiag.errors import MeshdiagError

if TYPE_CHECKING:
    from meshdiag.lint.result import LintResult, OutputContext

#: --output-format value -> module in this package
WRITERS = {
    "full": "full",
    "concise": "concise",
    "json": "json_",
    "json-lines": "json_lines",
    "sarif": "sarif",
    "github": "github",
    "junit": "junit",
    "gitlab": "gitlab",
}
FORMATS = tuple(WRITERS)


def write(fmt: str, result: LintResult, stream: TextIO, ctx: OutputContext) -> None:
    if fmt not in WRITERS:
        raise MeshdiagError(
            f"unknown --output-format {fmt!r}; expected one of {', '.join(FORMATS)}"
        )
    module = importlib.import_module(f"{__name__}.{WRITERS[fmt]}")
    module.write(result, stream, ctx)
