"""The one-line summary the text formats end with."""

from __future__ import annotations


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def summary(result) -> str:
    checked = f"checked {_plural(len(result.files), 'file')}"
    excused = (
        f"; {_plural(result.baseline_matched, 'finding')} in the baseline"
        if result.baseline_matched
        else ""
    )
    if not result.findings:
        return f"All checks passed ({checked}{excused})."
    counts = result.severity_counts()
    parts = ", ".join(_plural(n, s) for s, n in counts.items() if n)
    nfiles = len({f.path for f in result.findings})
    return (
        f"Found {_plural(len(result.findings), 'finding')} ({parts}) in "
        f"{_plural(nfiles, 'file')}; {checked}{excused}."
    )
