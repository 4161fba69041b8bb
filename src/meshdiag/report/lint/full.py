"""The default, for people: findings grouped by file, each with its location, code,
severity, message and fix, then a summary line. Drawn with rich (colour on terminals); to
an output rich would draw without colour (a CI log, a pipe) the printable lines are written
as they are, and rich is not even imported unless some line is not printable (importing it
was an eighth of a `lint` of a small dump)."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import groupby
from typing import TYPE_CHECKING

from meshdiag.report.lint._summary import summary
from meshdiag.report.plain_console import printable_lines, surely_plain

if TYPE_CHECKING:
    from rich.text import Text

    from meshdiag.model.findings import Finding

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def write(result, stream, ctx) -> None:
    console = None if surely_plain(stream, ctx.color) else _console(stream, ctx)
    plain = console is None or console.color_system is None  # no styles to draw
    for path, group in groupby(result.findings, key=lambda f: f.path):
        found = list(group)
        if plain:
            # what rich prints for printable text without styles is the text itself: written
            # directly, 3,300 findings take 7 ms instead of 0.5 s through rich, or 52 ms
            # through its Text objects (tabs, control characters and the like still go
            # through rich)
            text = "\n".join(plain_lines(path, found))
            if printable_lines(text):
                stream.write(text + "\n\n")
                continue
        if console is None:
            console = _console(stream, ctx)
        from rich.text import Text

        # a file's lines go to rich as one text: a print per line cost more than the line
        console.print(Text("\n").join(styled_lines(path, found)))
        console.print()
    if console is None:  # (the summary is printable: rich would print it as it is)
        stream.write(summary(result) + "\n")
        return
    from rich.text import Text

    style = "bold green" if not result.findings else "bold"
    console.print(Text(summary(result), style=style))


def _console(stream, ctx):
    from rich.console import Console

    return Console(
        file=stream,
        soft_wrap=True,  # keep each finding on one line in CI logs
        highlight=False,
        force_terminal=ctx.color,
        # None: rich honours NO_COLOR from the environment
        no_color=True if ctx.color is False else None,
    )


def styled_lines(path: str | None, findings: Iterable[Finding]) -> list[Text]:
    """The lines `write` draws for one file's findings: its path, then each finding's
    location, code, severity, name and message, and its fix."""
    from rich.text import Text

    lines = [Text(path or "<no file>", style="bold underline")]
    for f in findings:
        line = Text("  ")
        line.append(f"{f.line or 1}:{f.column or 1}", style="dim")
        line.append("  ")
        line.append(f.code, style="bold")
        line.append(" ")
        line.append(f.severity, style=_STYLE.get(f.severity, ""))
        line.append(f" [{f.name}] ", style="dim")
        line.append(f.message)
        lines.append(line)
        if f.fix:
            fix = Text("      fix: ", style="green")
            fix.append(f.fix)
            lines.append(fix)
    return lines


def plain_lines(path: str | None, findings: Iterable[Finding]) -> list[str]:
    """`styled_lines`' text without its styles, made directly (the writer's path to a
    colourless output; the tests compare the two)."""
    lines = [path or "<no file>"]
    for f in findings:
        lines.append(
            f"  {f.line or 1}:{f.column or 1}  {f.code} {f.severity} [{f.name}] {f.message}"
        )
        if f.fix:
            lines.append(f"      fix: {f.fix}")
    return lines
