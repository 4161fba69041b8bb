"""The rules: one table of every rule code and the module that defines it (like ruff's
`codes.rs`), and how a check is run.

A rule module under `meshdiag.checks` defines `RULE` (its `Rule`: code, name, severity and
the docs `meshdiag rule CODE` prints) and, unless another part of the tool reports it,
`check(subject, ctx) -> list[Finding]` — over a scanned module (`ir.model.ModuleReport`) for
module rules, over a module's measured collectives (`comms.report.ModuleComms`) for
collective rules; a collective rule may also define `judges(ctx)`, which collectives its
check reads under a run's settings (True: all, False: none, else a test of one), so `lint`
measures no others, and with a test `may_judge(ctx)`, the same told from a collective's own
line before the scan follows what it gathers, so `lint` leaves unscanned a file with
nothing to judge. Checks keep no state of their own: what they remember lives in the run's
memos (`ctx.memos`). A check that raises does not go silent: `run_check` turns the error into
an MD002 finding at the module it was judging.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from meshdiag.checks.md002_check_failed import RULE as MD002
from meshdiag.checks.rule import Rule
from meshdiag.errors import MeshdiagError
from meshdiag.model.findings import Finding

if TYPE_CHECKING:
    from meshdiag.checks.context import CheckContext

#: what a rule's `check` runs over; "reported" rules have none (the scanner, file readers
#: and simulate-copy report them)
Kind = Literal["module", "collectives", "reported"]

#: code -> (module under meshdiag.checks, kind). The one list of rules.
RULES: dict[str, tuple[str, Kind]] = {
    "MD001": ("md001_parse_error", "reported"),
    "MD002": ("md002_check_failed", "reported"),
    "MD101": ("md101_mesh_mismatch", "module"),
    "MD102": ("md102_off_mesh_sharding", "module"),
    "MD103": ("md103_unsupported_mesh", "module"),
    "MD104": ("md104_device_count_mismatch", "module"),
    "MD105": ("md105_uneven_shard", "module"),
    "MD106": ("md106_uniform_spec", "reported"),
    "MD107": ("md107_rank_mismatch", "module"),
    "MD108": ("md108_invalid_sharding", "module"),
    "MD201": ("md201_collective_budget", "collectives"),
    "MD202": ("md202_full_remat", "collectives"),
    "MD203": ("md203_off_mesh_groups", "collectives"),
}


def _module(code: str):
    name = f"meshdiag.checks.{RULES[code][0]}"
    # imported once: after that, the module table (import_module takes the import lock and
    # its finder path on every call, and lint asks for a rule per file)
    return sys.modules.get(name) or importlib.import_module(name)


def all_rules() -> list[Rule]:
    return [_module(code).RULE for code in sorted(RULES)]


def get_rule(code: str) -> Rule | None:
    code = code.upper()
    return _module(code).RULE if code in RULES else None


def _checks(kind: Kind) -> dict[str, Callable]:
    return {code: _module(code).check for code in sorted(RULES) if RULES[code][1] == kind}


def module_checks() -> dict[str, Callable]:
    """code -> check over a scanned module: (ModuleReport, CheckContext) -> findings."""
    return _checks("module")


def collective_checks() -> dict[str, Callable]:
    """code -> check over a module's measured collectives: (ModuleComms, CheckContext) ->
    findings."""
    return _checks("collectives")


def judges(code: str, ctx: CheckContext):
    """The collective rule `code`'s `judges(ctx)`; None when it does not say."""
    return _hook(code, "judges", ctx)


def may_judge(code: str, ctx: CheckContext):
    """The collective rule `code`'s `may_judge(ctx)`: which collectives, told from their
    own lines before a scan, it may read (None when it does not say)."""
    return _hook(code, "may_judge", ctx)


def _hook(code: str, name: str, ctx: CheckContext):
    says = getattr(_module(code), name, None)
    return None if says is None else says(ctx)


def run_check(
    code: str, check: Callable, subject, ctx: CheckContext, *, line: int | None, module: str | None
) -> list[Finding]:
    """`check(subject, ctx)`; an error it raises on what it was given (a MeshdiagError, a
    value, lookup or arithmetic error) becomes an MD002 finding at `line` of `module`
    naming the rule, instead of silence or a crash. A bug in the check itself (TypeError,
    AttributeError, ...) still ends the run as a one-line internal error."""
    try:
        return check(subject, ctx)
    except (MeshdiagError, ArithmeticError, ValueError, LookupError) as e:
        detail = str(e) or type(e).__name__
        return [
            MD002.finding(
                f"{code} could not judge this module: {detail}",
                path=ctx.path,
                line=line,
                module=module,
            )
        ]
