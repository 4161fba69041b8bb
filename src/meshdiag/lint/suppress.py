"""Suppressions: `meshdiag: ignore[...]` comments in the linted file, and a baseline file.

Comments (`// meshdiag: ignore[MD103]` in MLIR, `# meshdiag: ignore[MD103, MD104]` in HLO or
TOML, bare `// meshdiag: ignore` for every code) silence a finding on their own line or on the
line after. The `meshdiag:` keyword is lower-case; codes are not case-sensitive. A file with
no findings is not read again; otherwise a byte-level pass (grep speed, no line splitting)
finds the comment lines up to the last finding's line and stops there.

A baseline records the findings a project already has, keyed by path + code + a fingerprint
of the message with line and column numbers taken out, so findings do not come back when
lines shift. Each key keeps a count: two identical findings in one file need two entries.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from meshdiag.errors import MeshdiagError
from meshdiag.fileio import parse_nested, read_text, write_atomic
from meshdiag.model.findings import Finding

ALL = "ALL"
_COMMENT_RE = re.compile(r"(?://|#)[ \t]*meshdiag:[ \t]*ignore\b(?:\[(?P<codes>[^\]]*)\])?")


def parse_comment(line: str) -> frozenset[str] | None:
    """Codes a line's suppression comment names (`{"ALL"}` for a bare ignore), or None."""
    if "meshdiag" not in line:  # cheap test first: most lines have no comment
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


_MARKER = b"meshdiag"
_BLOCK = 1 << 20
#: bytes of context kept on each side of a marker: a comment's `//` or `#` and its code
#: list must lie within this distance of the `meshdiag` keyword
_WINDOW = 4096


def _open_binary(path: str):
    """Open for reading bytes, gunzipping transparently (by magic bytes)."""
    with open(path, "rb") as fh:
        magic = fh.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")


def comment_lines(path: str, last_line: int) -> dict[int, frozenset[str]]:
    """Suppression comments on lines 1..last_line: {line: codes}.

    Streams byte blocks and lets `bytes.find`/`bytes.count` look for the `meshdiag` marker
    and count newlines (memory speed, like grep); only a window of `_WINDOW` bytes either
    side of a marker, within its line, is decoded and matched. Time is linear in the file
    size and memory bounded by the block size whatever the line lengths (a 100 MB line is
    never held whole). Stops after `last_line`. An unreadable or truncated file yields what
    was read (the scan has already reported it as MD001)."""
    found: dict[int, frozenset[str]] = {}
    line = 1  # number of the line `data` starts in
    tail = b""  # the end of the previous block that later markers' windows may need
    skip = 0  # markers in `tail` before this were handled
    try:
        with _open_binary(path) as fh:
            while line <= last_line:
                block = fh.read(_BLOCK)
                eof = not block
                data = tail + block
                # markers with their whole forward window here (or at the end of the input)
                limit = len(data) if eof else max(0, len(data) - _WINDOW)
                number, counted = line, 0
                pos = data.find(_MARKER, skip, limit + len(_MARKER) - 1)
                while pos >= 0:
                    number += data.count(b"\n", counted, pos)
                    counted = pos
                    if number > last_line:
                        return found
                    if number not in found:  # the first comment on a line counts
                        codes = parse_comment(_window(data, pos))
                        if codes is not None:
                            found[number] = codes
                    pos = data.find(_MARKER, pos + 1, limit + len(_MARKER) - 1)
                if eof:
                    break
                keep = max(0, limit - _WINDOW)  # the backward window of the next markers
                line += data.count(b"\n", 0, keep)
                tail, skip = data[keep:], limit - keep
    except (OSError, EOFError, zlib.error):
        pass
    return found


def _window(data: bytes, pos: int) -> str:
    """The text around the marker at `pos`: its line, at most `_WINDOW` bytes either side."""
    low = max(0, pos - _WINDOW)
    start = max(data.rfind(b"\n", low, pos) + 1, low)
    stop = data.find(b"\n", pos, pos + _WINDOW)
    stop = min(len(data), pos + _WINDOW) if stop < 0 else stop
    return data[start:stop].decode("utf-8", "replace")


def apply_comments(findings: list[Finding], path: str) -> tuple[list[Finding], int]:
    """Drop findings silenced by a comment on their line or the line before.
    Returns (kept findings, number suppressed). Reads nothing when there are no findings."""
    last = max((f.line or 0 for f in findings), default=0)
    if last <= 0:
        return findings, 0
    comments = comment_lines(path, last)
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
    import hashlib  # (here: 3 ms of every lint's start-up; baselines and SARIF ask)

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
    import json  # (here, as in `load_baseline`: most runs read no baseline)

    findings = list(findings)
    base = os.path.dirname(os.path.abspath(path))
    doc = {"version": 1, "tool": "meshdiag", "findings": list(_entries(findings, base))}
    write_atomic(path, json.dumps(doc, indent=2) + "\n", "baseline")  # the old one stays whole
    return len(findings)


def load_baseline(path: str) -> Baseline:
    import json

    text = read_text(path, "baseline")
    try:
        doc = parse_nested(json.loads, text, f"baseline {path}")
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
