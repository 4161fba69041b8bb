"""Suppressions: `meshdiag: ignore[...]` comments in the linted file, and a baseline file.

Comments (`// meshdiag: ignore[MD103]` in MLIR, `# meshdiag: ignore[MD103, MD104]` in HLO or
TOML, bare `// meshdiag: ignore` for every code) silence a finding on their own line or on the
line after. Only the lines around findings are read, streaming, and reading stops after the
last line needed — a clean multi-gigabyte dump is never read a second time.

A baseline records the findings a project already has, keyed by path + code + a fingerprint
of the message with line and column numbers taken out, so findings do not come back when
lines shift. Each key keeps a count: two identical findings in one file need two entries.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import MeshdiagError
from ..findings import Finding

ALL = "ALL"
_COMMENT_RE = re.compile(
    r"(?://|#)[ \t]*meshdiag:[ \t]*ignore\b(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE
)


def parse_comment(line: str) -> frozenset[str] | None:
    """Codes a line's suppression comment names (`{"ALL"}` for a bare ignore), or None."""
    if "meshdiag" not in line.lower():  # cheap test first: most lines have no comment
        return None
    m = _COMMENT_RE.search(line)
    if m is None:
        return None
    codes = m.group("codes")
    if codes is None or not codes.strip():
        return frozenset({ALL})
    return frozenset(c.strip().upper() for c in codes.split(",") if c.strip())


def _covers(codes: frozenset[str], code: str) -> bool:
    return ALL in codes or any(code.startswith(c) for c in codes)


def open_text(path: str):
    """Open a file for reading text, gunzipping transparently (by magic bytes)."""
    with open(path, "rb") as fh:
        magic = fh.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def read_lines(path: str, wanted: Iterable[int]) -> dict[int, str]:
    """The text of the 1-based lines in `wanted`, streaming and stopping after the last."""
    wanted = set(w for w in wanted if w and w > 0)
    if not wanted:
        return {}
    last = max(wanted)
    out: dict[int, str] = {}
    try:
        with open_text(path) as fh:
            for number, text in enumerate(fh, 1):
                if number in wanted:
                    out[number] = text
                if number >= last:
                    break
    except (OSError, EOFError, zlib.error):
        pass  # unreadable or truncated: the scan already reported it (MD001); keep what we read
    return out


def apply_comments(findings: list[Finding], path: str) -> tuple[list[Finding], int]:
    """Drop findings silenced by a comment on their line or the line before.
    Returns (kept findings, number suppressed)."""
    lines = {f.line for f in findings if f.line} | {f.line - 1 for f in findings if f.line}
    if not lines:
        return findings, 0
    text = read_lines(path, lines)
    comments = {n: c for n, t in text.items() if (c := parse_comment(t)) is not None}
    if not comments:
        return findings, 0
    kept = []
    for f in findings:
        here = comments.get(f.line or 0)
        before = comments.get((f.line or 0) - 1)
        if (here and _covers(here, f.code)) or (before and _covers(before, f.code)):
            continue
        kept.append(f)
    return kept, len(findings) - len(kept)


# -- baseline ------------------------------------------------------------------------------

_LOCATION_RE = re.compile(
    r"(?:\b(?:line|lines|col|column|columns)\s+\d+(?:\s*[-,:]\s*\d+)*)"  # line 12, column 3
    r"|(?::\d+(?::\d+)?\b)"  # file.mlir:12:3
    r"|(?:\b\d+:\d+\b)",  # at 12:3
    re.IGNORECASE,
)


def fingerprint(f: Finding) -> str:
    """A line-independent identity for a finding: its code and message with positions
    removed (the path is part of the baseline key, not of the fingerprint)."""
    message = _LOCATION_RE.sub("", f.message)
    message = " ".join(message.split())
    digest = hashlib.sha256(f"{f.code}\0{message}".encode()).hexdigest()
    return digest[:16]


def _key_path(path: str | None, base: str) -> str:
    """Paths in a baseline are relative to the baseline file, with forward slashes."""
    if not path:
        return ""
    absolute = os.path.abspath(path)
    try:
        rel = os.path.relpath(absolute, base)
    except ValueError:  # another drive on Windows
        rel = absolute
    return rel.replace(os.sep, "/")


@dataclass
class Baseline:
    path: str
    counts: Counter  # (path, code, fingerprint) -> how many findings it excuses

    def filter(self, findings: Iterable[Finding]) -> tuple[list[Finding], int]:
        """Findings not covered by the baseline, and how many were covered."""
        base = os.path.dirname(os.path.abspath(self.path))
        budget = Counter(self.counts)
        new, matched = [], 0
        for f in findings:
            key = (_key_path(f.path, base), f.code, fingerprint(f))
            if budget[key] > 0:
                budget[key] -= 1
                matched += 1
            else:
                new.append(f)
        return new, matched


def _entries(findings: Iterable[Finding], base: str) -> Iterator[dict]:
    groups: dict[tuple, list[Finding]] = {}
    for f in findings:
        groups.setdefault((_key_path(f.path, base), f.code, fingerprint(f)), []).append(f)
    for (path, code, fp), items in sorted(groups.items()):
        yield {
            "path": path,
            "code": code,
            "fingerprint": fp,
            "count": len(items),
            "message": items[0].message,  # for people reading the file; not matched
        }


def write_baseline(path: str, findings: Iterable[Finding]) -> int:
    """Write every finding to a baseline file; returns the number of findings recorded."""
    findings = list(findings)
    base = os.path.dirname(os.path.abspath(path))
    doc = {"version": 1, "tool": "meshdiag", "findings": list(_entries(findings, base))}
    try:
        Path(path).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    except OSError as e:
        raise MeshdiagError(f"cannot write baseline {path}: {e.strerror or e}") from None
    return len(findings)


def load_baseline(path: str) -> Baseline:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise MeshdiagError(f"cannot read baseline {path}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise MeshdiagError(
            f"baseline {path} is not JSON: {e.msg} at line {e.lineno} column {e.colno}"
        ) from None
    if not isinstance(doc, dict) or doc.get("version") != 1:
        raise MeshdiagError(f"baseline {path} is not a meshdiag baseline (version 1)")
    counts: Counter = Counter()
    for i, e in enumerate(doc.get("findings") or []):
        try:
            key = (str(e["path"]), str(e["code"]), str(e["fingerprint"]))
            counts[key] += int(e.get("count", 1))
        except (KeyError, TypeError, ValueError):
            raise MeshdiagError(
                f"baseline {path}: entry {i} needs path, code and fingerprint"
            ) from None
    return Baseline(path, counts)
