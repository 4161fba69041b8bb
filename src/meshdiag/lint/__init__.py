"""`meshdiag lint`: the checks over dumps and mesh configs, for CI.

    settings = resolve_settings(CliOptions(...), codes)       # config.py
    result = lint_paths(["dumps/"], settings, jobs=None)      # this module
    outputs.write("sarif", result, stream, OutputContext(cwd=...))

Submodules: config (discovery, merging), select (rule selection, per-file ignores),
suppress (comments, baseline), meshfile (mesh config files), runner (per-file work, parallel),
result, outputs (one writer per format).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence

from meshdiag.lint.config import LintSettings
from meshdiag.lint.result import LintResult


def lint_paths(
    paths: Sequence[str],
    settings: LintSettings,
    *,
    jobs: int | None = None,
    baseline: str | None = None,
) -> LintResult:
    """Lint files and directories; findings excused by `baseline` are counted, not listed.
    The files are linted as the walk finds them (`runner.walk_files`)."""
    from itertools import chain

    from meshdiag.lint.runner import display_path, lint_files, walk_files
    from meshdiag.lint.suppress import load_baseline

    walk = walk_files(paths, settings)
    first = next(walk, None)  # a path that cannot be read, or nothing to lint: said first
    base = load_baseline(baseline) if baseline else None  # fail early on a bad baseline
    files: list[str] = []  # every file linted, in the order of the walk
    if "-" in paths:
        jobs = 1  # stdin is this process's
    if first is not None:
        findings = lint_files(_kept(chain([first], walk), files), settings, jobs, frozenset(paths))
    else:  # every file excluded
        findings = []
    matched = 0
    if base is not None:
        findings, matched = base.filter(findings)
    cwd = os.getcwd()
    stdin = settings.stdin_filename
    shown = [stdin if f == "-" and stdin else display_path(f, cwd) for f in files]
    return LintResult(findings, shown, matched)


def _kept(files: Iterable[str], into: list[str]) -> Iterator[str]:
    for f in files:
        into.append(f)
        yield f


__all__ = ["LintResult", "LintSettings", "lint_paths"]
