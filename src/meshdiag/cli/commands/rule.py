"""`meshdiag rule [CODE]`: list the checks, or explain one (like `ruff rule`)."""

from __future__ import annotations

from typing import Annotated

import typer

from meshdiag.cli.commands import CommandApp
from meshdiag.cli.commands.options import FormatOpt


def register(app: CommandApp) -> None:
    app.command(name="rule")(rule)


def rule(
    code: Annotated[
        str | None, typer.Argument(help="Check code (MD101) or name (mesh-mismatch).")
    ] = None,
    fmt: FormatOpt = "text",
) -> None:
    """Explain a check: what it means, the real failure behind it, how to fix it."""
    import json

    from meshdiag.cli.commands.common import check_format
    from meshdiag.report.rule_doc import rule_json, rule_page, rules_table

    check_format(fmt)
    if code is None:
        rules = _all()
        if fmt == "json":
            print(json.dumps({"version": 1, "rules": [rule_json(r) for r in rules]}, indent=2))
        else:
            print(rules_table(rules), end="")
        return
    r = find_rule(code)
    if fmt == "json":
        print(json.dumps({"version": 1, **rule_json(r)}, indent=2))
    else:
        print(rule_page(r), end="")


def _all():
    from meshdiag.checks.registry import all_rules

    return all_rules()


def find_rule(code: str):
    """The rule with this code (any case) or kebab name; MeshdiagError when there is none."""
    from meshdiag.checks.registry import get_rule
    from meshdiag.errors import MeshdiagError

    r = get_rule(code.strip())
    if r is None:
        r = next((x for x in _all() if x.name == code.strip().lower()), None)
    if r is None:
        raise MeshdiagError(f"unknown rule {code!r}; run 'meshdiag rule' to list the checks")
    return r
