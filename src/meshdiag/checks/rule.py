"""A rule: its code, name, severity and the docs `meshdiag rule CODE` prints."""

from __future__ import annotations

from dataclasses import dataclass

from meshdiag.model.findings import Finding, Severity


@dataclass(frozen=True)
class Rule:
    code: str  # "MD101"
    name: str  # "mesh-mismatch"
    severity: Severity
    summary: str  # one line: fires when ...
    #: markdown-ish sections shown by `meshdiag rule CODE`
    what: str = ""
    why: str = ""
    fix: str = ""
    example: str = ""

    def finding(self, message: str, fix: str | None = None, **where) -> Finding:
        """A Finding of this rule at `where` (path=, line=, column=, module=)."""
        return Finding(self.code, self.name, self.severity, message, fix, **where)
