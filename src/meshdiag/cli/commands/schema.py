"""`meshdiag schema [DOCUMENT]`: the JSON Schema of a command's `--format json` output."""

from __future__ import annotations

from typing import Annotated

import typer

from meshdiag.cli.commands import CommandApp


def register(app: CommandApp) -> None:
    app.command(name="schema")(schema)


def schema(
    document: Annotated[
        str | None,
        typer.Argument(
            help="The document: a command (layout, inspect, simulate-copy, lint, convert, "
            "rule) or one of its variants (lint-json-lines, lint-statistics); every document "
            "when omitted. `--list` names them all."
        ),
    ] = None,
    list_: Annotated[
        bool, typer.Option("--list", help="List the documents instead of printing a schema.")
    ] = False,
) -> None:
    """Print the JSON Schema (draft 2020-12) of a command's --format json output."""
    import json

    from meshdiag.contracts import all_schemas, describe, schema

    if list_:
        rows = describe()
        width = max(len(name) for name, _ in rows)
        for name, summary in rows:
            print(f"{name.ljust(width)}  {summary}")
        return
    doc = schema(document) if document is not None else all_schemas()
    print(json.dumps(doc, indent=2))
