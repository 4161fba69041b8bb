"""A check's documentation, written once: `meshdiag rule` (its list, one check's page, their
JSON) and the SARIF rule descriptors' help (`report/lint/sarif.py`) all come from here.

The page is Markdown (`ruff rule` prints the same kind): title, severity, summary, then the
fixed sections, the example fenced.
"""

from __future__ import annotations

#: the page's sections: title and the rule attribute that fills it (empty ones left out)
SECTIONS = (
    ("What it does", "what"),
    ("Why is this bad?", "why"),
    ("How to fix", "fix"),
    ("Example", "example"),
)


def rule_page(r) -> str:
    """The check's page (what `meshdiag rule CODE` prints)."""
    parts = [f"# {r.name} ({r.code})", "", f"Severity: {r.severity}", "", r.summary]
    for title, attr in SECTIONS:
        body = getattr(r, attr)
        if body:
            if attr == "example":
                body = f"```\n{body}\n```"
            parts += ["", f"## {title}", "", body]
    return "\n".join(parts) + "\n"


def rules_table(rules) -> str:
    """Every check as plain aligned columns: code, name, severity, summary."""
    rows = [("CODE", "NAME", "SEVERITY", "SUMMARY")] + [
        (r.code, r.name, r.severity, r.summary) for r in rules
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths, strict=True)) + "  " + row[3]
        for row in rows
    ]
    return "\n".join(lines) + "\n"


def rule_json(r) -> dict:
    """The check's object in `meshdiag rule --format json` (docs/json.md)."""
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
