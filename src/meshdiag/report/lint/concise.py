"""`path:line:col: CODE message`, one finding per line, then a summary."""

from __future__ import annotations

from meshdiag.report.lint._summary import summary


def write(result, stream, ctx) -> None:
    for f in result.findings:
        message = " ".join(f.message.splitlines())  # one finding, one line
        stream.write(f"{f.path}:{f.line or 1}:{f.column or 1}: {f.code} {message}\n")
    stream.write(summary(result) + "\n")
