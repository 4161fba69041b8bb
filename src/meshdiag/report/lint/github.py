"""GitHub Actions workflow commands: `::error file=F,line=L,col=C,title=T::message`.

Escaping follows actions/toolkit (`escapeData` / `escapeProperty` in packages/core/src/
command.ts): in the message `%`, CR and LF become `%25`, `%0D`, `%0A`; property values escape
those and also `:` and `,` (`%3A`, `%2C`). Severity: error → error, warning → warning,
info → notice.
"""

from __future__ import annotations

from meshdiag.report.lint._paths import relative_uri

_COMMAND = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(f, cwd: str) -> str:
    props = []
    if f.path:
        props.append(("file", relative_uri(f.path, cwd)[0]))
    if f.line:
        props.append(("line", str(f.line)))
        if f.column:
            props.append(("col", str(f.column)))
    props.append(("title", f"{f.code} {f.name}"))
    body = f.message + (f"\nfix: {f.fix}" if f.fix else "")
    head = ",".join(f"{k}={escape_property(v)}" for k, v in props)
    return f"::{_COMMAND.get(f.severity, 'warning')} {head}::{escape_data(body)}"


def write(result, stream, ctx) -> None:
    for f in result.findings:
        stream.write(command(f, ctx.cwd) + "\n")
