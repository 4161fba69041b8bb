"""The collective checks (MD201-MD203) over one scanned file, as `lint` and `comms` run them:
measure each module on the global mesh, run the checks, and turn what the scan could not
read into MD001 findings."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from meshdiag.comms.report import FileComms, measure_file

if TYPE_CHECKING:
    from collections.abc import Callable

    from meshdiag.checks.context import CheckContext
    from meshdiag.comms.model import Collective, CollectiveFile
    from meshdiag.model.findings import Finding


def run_collective_checks(
    f: CollectiveFile,
    ctx: CheckContext,
    checks: dict | None = None,
    unreadable_lines: Collection[int] = (),
    judged_only: bool = False,
) -> tuple[FileComms, list[Finding]]:
    """(the measured file, its findings: MD001 for unreadable text, then each check's).
    `unreadable_lines`: where the sharding scan of the same file found text it could not
    read (its MD001s, as `lint` runs both scans); a problem both scans report there (a mesh
    declaration, a line too long) is not reported a second time. `judged_only`: measure only
    the collectives the checks read under `ctx` (`judged_by`), for a caller that wants the
    findings, not the measured file (`lint`)."""
    from meshdiag.checks.registry import collective_checks, get_rule, run_check

    if checks is None:
        checks = collective_checks()
    keep = judged_by(checks, ctx) if judged_only else None
    measured = measure_file(f, ctx.mesh, ctx.memos, keep)
    out = []
    if f.problems:
        md001 = get_rule("MD001")
        assert md001 is not None
        out = [
            md001.finding(p.message, path=ctx.path, line=p.line or None, column=p.column)
            for p in f.problems
            if not (p.in_sharding_scan and p.line in unreadable_lines)
        ]
    for mc in measured.modules:
        for code, fn in checks.items():
            out.extend(run_check(code, fn, mc, ctx, line=mc.module.line, module=mc.module.name))
    return measured, out


def judged_by(checks: dict, ctx: CheckContext) -> Callable[[Collective], bool] | None:
    """Whether a collective is read by any of `checks` under `ctx`, from each rule's
    `judges(ctx)` (True: every collective, False: none, else a test of one); None (keep
    every one) when a check does not say. A check finds the same with only the collectives
    it reads: each judges its rows one by one."""
    from meshdiag.checks.registry import judges

    tests = []
    for code in checks:
        says = judges(code, ctx)
        if says is None or says is True:
            return None
        if says is not False:
            tests.append(says)
    return _any_of(tests)


def judged_before_scan(checks: dict, ctx: CheckContext) -> Callable[[Collective], bool] | None:
    """Which collectives `checks` may read under `ctx`, told from each one's own line
    before a scan (each rule's `may_judge`, where its `judges` does not say none); None
    when a check reads collectives and cannot say which that way. A file none of whose
    collectives passes gives these checks nothing to judge."""
    from meshdiag.checks.registry import judges, may_judge

    tests = []
    for code in checks:
        says = judges(code, ctx)
        if says is False:
            continue
        test = None if says is None or says is True else may_judge(code, ctx)
        if test is None:
            return None
        tests.append(test)
    return _any_of(tests)


def _any_of(tests: list[Callable[[Collective], bool]]) -> Callable[[Collective], bool]:
    """Whether a collective passes any of `tests` (none: never)."""
    if len(tests) == 1:
        return tests[0]
    return lambda c: any(t(c) for t in tests)
