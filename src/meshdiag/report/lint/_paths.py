"""Paths as CI systems want them: relative to the working directory, forward slashes."""

from __future__ import annotations

import os


def relative_uri(path: str | None, cwd: str) -> tuple[str, bool]:
    """(path relative to `cwd` with '/' separators, True) when `path` is below `cwd`;
    else (absolute path with '/', False)."""
    if not path:
        return "", True
    absolute = os.path.abspath(os.path.join(cwd, path))
    try:
        rel = os.path.relpath(absolute, cwd)
    except ValueError:  # another drive
        rel = None
    if rel is None or rel == ".." or rel.startswith(".." + os.sep):
        return absolute.replace(os.sep, "/"), False
    return rel.replace(os.sep, "/"), True
