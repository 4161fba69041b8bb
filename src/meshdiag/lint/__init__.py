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
from collections.abc import Sequence

from meshdiag.lint.config import LintSettings
from meshdiag.lint.result import LintResult


def lint_paths(
    paths: Sequence[str],
    settings: LintSettings,
    *,
    jobs: int | None = None,
    baseline: str | None = None,
) -> LintResult:
    """Lint files and directories; findings excused by `baseline` are counted, not listed."""
    from meshdiag.lint.runner import discover, display_path, lint_files
    from meshdiag.lint.suppress import load_baseline

    files = discover(paths, settings)
    base = load_baseline(baseline) if baseline else None  # fail early on a bad baseline
    findings = lint_files(files, settings, jobs)
    matched = 0
    if base is not None:
        findings, matched = base.filter(findings)
    cwd = os.getcwd()
    stdin = settings.stdin_filename
    shown = [stdin if f == "-" and stdin else display_path(f, cwd) for f in files]
    return LintResult(findings, shown, matched)


__all__ = ["LintResult", "LintSettings", "lint_paths"]
