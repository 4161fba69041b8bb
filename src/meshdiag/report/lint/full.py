"""The default, for people: findings grouped by file, each with its location, code,
severity, message and fix, then a summary line. Drawn with rich (colour on terminals)."""

from __future__ import annotations

from itertools import groupby

from meshdiag.report.lint._summary import summary

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def write(result, stream, ctx) -> None:
    from rich.console import Console
    from rich.text import Text

    console = Console(
        file=stream,
        soft_wrap=True,  # keep each finding on one line in CI logs
        highlight=False,
        force_terminal=ctx.color,
        # None: rich honours NO_COLOR from the environment
        no_color=True if ctx.color is False else None,
    )
    for path, group in groupby(result.findings, key=lambda f: f.path):
        console.print(Text(path or "<no file>", style="bold underline"))
        for f in group:
            line = Text("  ")
            line.append(f"{f.line or 1}:{f.column or 1}", style="dim")
            line.append("  ")
            line.append(f.code, style="bold")
            line.append(" ")
            line.append(f.severity, style=_STYLE.get(f.severity, ""))
            line.append(f" [{f.name}] ", style="dim")
            line.append(f.message)
            console.print(line)
            if f.fix:
                fix = Text("      fix: ", style="green")
                fix.append(f.fix)
                console.print(fix)
        console.print()
    style = "bold green" if not result.findings else "bold"
    console.print(Text(summary(result), style=style))
