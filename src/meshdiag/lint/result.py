"""The outcome of a lint run: what the writers print and what decides the exit code."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from meshdiag import __version__
from meshdiag.model.findings import SEVERITY_RANK, Finding


@dataclass
class LintResult:
    findings: list[Finding]  # sorted by path, line, column, code
    files: list[str]  # every file checked, as displayed
    baseline_matched: int = 0  # findings the baseline excused (not in `findings`)

    def at_or_above(self, threshold: str) -> list[Finding]:
        rank = SEVERITY_RANK[threshold]
        return [f for f in self.findings if SEVERITY_RANK[f.severity] >= rank]

    def statistics(self) -> list[tuple[str, str, int]]:
        """(code, name, count) per code, most frequent first, then by code."""
        counts = Counter((f.code, f.name) for f in self.findings)
        return sorted(((c, n, k) for (c, n), k in counts.items()), key=lambda t: (-t[2], t[0]))

    def severity_counts(self) -> dict[str, int]:
        counts = Counter(f.severity for f in self.findings)
        return {s: counts.get(s, 0) for s in ("error", "warning", "info")}


@dataclass(frozen=True)
class OutputContext:
    """What writers need besides the findings."""

    cwd: str  # paths in SARIF/GitHub/GitLab output are made relative to this
    rules: dict = field(default_factory=dict)  # code -> Rule, for SARIF's rule table
    version: str = __version__  # SARIF's tool version
    color: bool | None = None  # None: let rich decide from the stream
