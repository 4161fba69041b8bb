"""A finding: one check firing at one place. Checks produce them; renderers print them."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

Severity = Literal["error", "warning", "info"]
#: most severe first (the order `--fail-on` lists them in)
SEVERITIES = ("error", "warning", "info")
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}
#: the one rule the scanner reports itself (what it could not read): MD001, documented in
#: checks/md001_parse_error.py
PARSE_ERROR = ("MD001", "parse-error")


@dataclass(frozen=True)
class Finding:
    code: str  # "MD101"
    name: str  # "mesh-mismatch"
    severity: Severity
    message: str  # one sentence
    fix: str | None = None  # names the concrete corrected value
    path: str | None = None
    line: int | None = None  # 1-based
    column: int | None = None  # 1-based
    #: module the finding belongs to (IR dumps), for grouping in text output
    module: str | None = None

    def to_json(self) -> dict:
        """The finding fields of the JSON contract (docs/json.md, `contracts/_base.py`)."""
        d = asdict(self)
        d.pop("module")
        return {
            k: d[k]
            for k in ("code", "name", "severity", "path", "line", "column", "message", "fix")
        }

    def sort_key(self) -> tuple:
        return (self.path or "", self.line or 0, self.column or 0, self.code)
