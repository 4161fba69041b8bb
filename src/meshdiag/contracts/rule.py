"""`meshdiag rule --format json` (every check) and `meshdiag rule CODE --format json`."""

from __future__ import annotations

from pydantic import Field, RootModel

from meshdiag.contracts._base import Doc, Severity, Version


class Rule(Doc):
    code: str = Field(pattern=r"^MD\d{3}$")
    name: str
    severity: Severity
    summary: str
    what: str | None = Field(description="what the check does")
    why: str | None = Field(description="why it breaks real systems")
    fix: str | None = Field(description="how to fix what it finds")
    example: str | None


class RuleList(Doc):
    """`meshdiag rule`: every check."""

    version: Version
    rules: list[Rule]


class RuleDocument(Rule):
    """`meshdiag rule CODE`: one check."""

    version: Version


class RuleOutput(RootModel[RuleList | RuleDocument]):
    """Every check (`meshdiag rule`) or one check explained (`meshdiag rule CODE`)."""


DOCUMENTS = {"rule": RuleOutput}
