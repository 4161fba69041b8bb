"""`meshdiag rule [CODE]`: list the checks, or explain one (like `ruff rule`)."""

from __future__ import annotations

from typing import Annotated

import typer

from meshdiag.cli.commands.common import FormatOpt


def register(app: typer.Typer) -> None:
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
        print(explain(r), end="")


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


def rule_json(r) -> dict:
    return {
        "code": r.code,
        "name": r.name,
        "severity": r.severity,
        "summary": r.summary,
        "what": r.what,
        "why": r.why,
        "fix": r.fix,
        "example": r.example,
    }


def rules_table(rules) -> str:
    """Plain aligned columns: code, name, severity, summary."""
    rows = [("CODE", "NAME", "SEVERITY", "SUMMARY")] + [
        (r.code, r.name, r.severity, r.summary) for r in rules
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths, strict=True)) + "  " + row[3]
        for row in rows
    ]
    return "\n".join(lines) + "\n"


def explain(r) -> str:
    """The rule's page: title, severity, then its fixed sections (empty ones left out)."""
    parts = [f"# {r.name} ({r.code})", "", f"Severity: {r.severity}", "", r.summary]
    for title, body in (
        ("What it does", r.what),
        ("Why is this bad?", r.why),
        ("How to fix", r.fix),
        ("Example", r.example),
    ):
        if body:
            parts += ["", f"## {title}", "", body]
    return "\n".join(parts) + "\n"
