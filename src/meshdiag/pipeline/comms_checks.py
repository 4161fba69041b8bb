"""The collective checks (MD201-MD203) over one scanned file, as `lint` and `comms` run them:
measure each module on the global mesh, run the checks, and turn what the scan could not
read into MD001 findings."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
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
    if len(tests) == 1:
        return tests[0]
    return lambda c: any(t(c) for t in tests)


@dataclass(frozen=True)
class Judged:
    """What a set of checks reads of a file's collectives under one context, told before
    the file is scanned: `words`, one of which is on the line of every collective they
    read, and `test`, which collectives they may read as each one's own line gives it
    (None: any whose line has one of the words)."""

    words: tuple[bytes, ...]
    test: Callable[[Collective], bool] | None


def judged_before_scan(checks: dict, ctx: CheckContext) -> Judged | None:
    """What `checks` read under `ctx` (`Judged`); None when any collective may be read.
    A file with none of the words, or whose collectives all fail the test, gives these
    checks nothing to judge."""
    from meshdiag.checks.registry import judged_words, judges, may_judge

    words: list[bytes] = []
    tests = []
    untested = False
    for code in checks:
        says = judges(code, ctx)
        if says is False:
            continue
        found = None if says is None or says is True else judged_words(code)
        if found is None:
            return None
        words.extend(found)
        test = may_judge(code, ctx)
        if test is None:
            untested = True
        else:
            tests.append(test)
    if untested or not tests:
        return Judged(tuple(words), None)
    if len(tests) == 1:
        return Judged(tuple(words), tests[0])
    return Judged(tuple(words), lambda c: any(t(c) for t in tests))
