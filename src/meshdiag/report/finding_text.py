"""A finding as text, one formatter per way the commands show it.

- `located`: `path:line:column CODE [severity] message`, its fix on the next line (what
  `inspect` and `comms` print; `meshdiag lint`'s formats live in `report/lint/`);
- `brief`: `CODE name (severity): message`, its fix on the next line (what `layout` and
  `simulate-copy` print below their picture, which says where).

Each gives a rich `Text` (colour on terminals); `.plain` is the colourless text.
`located_parts` gives `located`'s styled parts, for a report that makes the plain text
itself (`file_text.Line`) and imports rich only where it draws.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.text import Text

    from meshdiag.model.findings import Finding

_LOCATED_STYLE = {"error": "bold red", "warning": "yellow", "info": "blue"}
_BRIEF_COLOUR = {"error": "red", "warning": "yellow"}


def located(f: Finding) -> Text:
    from rich.text import Text

    return Text.assemble(*located_parts(f))


def located_parts(f: Finding) -> tuple[str | tuple[str, str], ...]:
    """`located`'s text as parts, each plain or (text, style)."""
    parts: tuple[str | tuple[str, str], ...] = (
        (f"{f.path}:{f.line or 0}:{f.column or 0}", "bold"),
        " ",
        (f.code, _LOCATED_STYLE.get(f.severity, "")),
        f" [{f.severity}] {f.message}",
    )
    if f.fix:
        parts += ((f"\n    fix: {f.fix}", "green"),)
    return parts


def brief(f: Finding) -> Text:
    from rich.text import Text

    colour = _BRIEF_COLOUR.get(f.severity, "cyan")
    t = Text.assemble((f"{f.code} {f.name} ({f.severity}): ", f"bold {colour}"), f.message)
    if f.fix:
        t.append("\n")
        t.append(f"  fix: {f.fix}", style="italic")
    return t
