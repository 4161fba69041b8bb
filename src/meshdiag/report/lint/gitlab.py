"""GitLab Code Quality report: a JSON array of issues with description, check_name,
fingerprint, severity (info/minor/major/critical/blocker) and location.path + lines.begin."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

from meshdiag.lint.suppress import fingerprint
from meshdiag.report.lint._paths import relative_uri

SEVERITY = {"error": "major", "warning": "minor", "info": "info"}


def write(result, stream, ctx) -> None:
    seen: Counter = Counter()
    issues = []
    for f in result.findings:
        path = relative_uri(f.path, ctx.cwd)[0]
        base = f"{path}\0{fingerprint(f)}"
        seen[base] += 1  # GitLab needs a unique fingerprint per issue
        key = f"{base}\0{seen[base]}".encode("utf-8", "surrogateescape")  # any file name
        digest = hashlib.sha256(key).hexdigest()
        issues.append(
            {
                "description": f"{f.code} {f.name}: {f.message}",
                "check_name": f.code,
                "fingerprint": digest[:32],
                "severity": SEVERITY.get(f.severity, "minor"),
                "location": {"path": path, "lines": {"begin": f.line or 1}},
            }
        )
    json.dump(issues, stream, indent=2)
    stream.write("\n")
