"""The registry of checks: code → Rule (metadata and docs) and the function that runs it."""

from __future__ import annotations

from collections.abc import Callable
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


_RULES: dict[str, Rule] = {}
#: functions that run a check over an inspected module: (ModuleReport, CheckContext) -> findings
_MODULE_CHECKS: dict[str, Callable] = {}
#: functions that run a check over a module's measured collectives:
#: (comms.report.ModuleComms, CheckContext) -> findings
_COLLECTIVE_CHECKS: dict[str, Callable] = {}


def register(
    rule: Rule, module_check: Callable | None = None, collective_check: Callable | None = None
) -> Rule:
    if rule.code in _RULES and _RULES[rule.code] != rule:
        raise ValueError(f"duplicate rule code {rule.code}")
    _RULES[rule.code] = rule
    if module_check is not None:
        _MODULE_CHECKS[rule.code] = module_check
    if collective_check is not None:
        _COLLECTIVE_CHECKS[rule.code] = collective_check
    return rule


def _load_all() -> None:
    """Import every check module so each registers itself."""
    import importlib
    import pkgutil

    from meshdiag import checks

    for info in pkgutil.iter_modules(checks.__path__):
        if info.name.startswith("md"):
            importlib.import_module(f"meshdiag.checks.{info.name}")


def all_rules() -> list[Rule]:
    _load_all()
    return [_RULES[c] for c in sorted(_RULES)]


def get_rule(code: str) -> Rule | None:
    _load_all()
    return _RULES.get(code.upper())


def module_checks() -> dict[str, Callable]:
    _load_all()
    return dict(sorted(_MODULE_CHECKS.items()))


def collective_checks() -> dict[str, Callable]:
    _load_all()
    return dict(sorted(_COLLECTIVE_CHECKS.items()))
