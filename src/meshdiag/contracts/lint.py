"""`meshdiag lint --format json`, `--format json-lines` and `--statistics --format json`.

SARIF, JUnit, GitLab and GitHub outputs follow those tools' own formats and are not here.
"""

from __future__ import annotations

from pydantic import Field, RootModel

from meshdiag.contracts._base import Doc, Finding, Version


class LintDocument(Doc):
    """Every finding of the run, after --select/--ignore, suppression comments and baseline."""

    version: Version
    findings: list[Finding]


class LintJsonLine(RootModel[Finding]):
    """One line of `--format json-lines`: one finding."""


class CodeCount(Doc):
    code: str = Field(pattern=r"^MD\d{3}$")
    name: str
    count: int = Field(ge=1)


class LintStatistics(RootModel[list[CodeCount]]):
    """`--statistics --format json`: findings per code, most frequent first."""


DOCUMENTS = {
    "lint": LintDocument,
    "lint-json-lines": LintJsonLine,
    "lint-statistics": LintStatistics,
}
