"""Output that rich would draw without colour (a pipe, a file, a CI log), written without
importing rich.

The text reports draw through a rich console: to a terminal in colour. To a stream rich
would draw without any, the text of nearly every part is its plain text, which the reports
make themselves (`file_text.render_part`, lint's `full` writer); rich is then only needed
for a part it alone can lay out (a line that is not printable, a table wider than the
console). Importing rich was a fifth of `inspect` of a small file and an eighth of `lint`'s.

`surely_plain` says, without rich, that rich's console for a stream would have no colour
system; `plain_console` makes a `PlainConsole` for such a stream: what a rich console would
say of it (no colour system, not a terminal, its width, height and encoding), and rich's
own console, made only when a part needs it. Both follow rich 13-15 (`Console.is_terminal`,
`Console.size`); tests/test_plain_console.py holds them to rich.
"""

from __future__ import annotations

import builtins
import os
import sys
from typing import Any


def surely_plain(stream, force_terminal: bool | None = None) -> bool:
    """Whether a rich console writing to `stream` (`force_terminal`: rich's argument, as
    `--color` gives it) would have no colour system, decided as rich decides it, without
    importing rich. False where unsure, and rich then decides: Jupyter, whose consoles
    draw colour whatever the stream, a forced terminal. A dumb terminal is not plain here,
    though rich draws it plainly."""
    if hasattr(builtins, "get_ipython") or force_terminal:
        return False
    if force_terminal is False:
        return True
    stdin = sys.stdin
    if hasattr(stdin, "__module__") and stdin.__module__.startswith("idlelib"):
        return True
    tty_compatible = os.environ.get("TTY_COMPATIBLE", "")
    if tty_compatible in ("0", "1"):
        return tty_compatible == "0"
    force_color = os.environ.get("FORCE_COLOR")
    if force_color is not None:
        return force_color == ""
    isatty = getattr(stream, "isatty", None)
    if isatty is None:
        return True
    try:
        return not isatty()
    except ValueError:  # a closed stream: rich says no terminal
        return True


def printable_lines(text: str) -> bool:
    """Whether every line of `text` is printable: what a colourless rich console with soft
    wrap prints as it is (a tab or a control character it draws otherwise)."""
    return text.replace("\n", "").isprintable()


def _std_fds() -> tuple[int, int, int]:
    """The descriptors whose terminal size rich asks (its `_STD_STREAMS`)."""
    out = []
    for stream, fallback in ((sys.__stdin__, 0), (sys.__stdout__, 1), (sys.__stderr__, 2)):
        try:
            out.append(stream.fileno())  # type: ignore[union-attr]
        except Exception:
            out.append(fallback)
    return out[0], out[1], out[2]


def console_size() -> tuple[int, int]:
    """The width and height a rich console that is not a terminal takes (on other systems
    than Windows): COLUMNS and LINES, else the size of the first of stdin, stdout and
    stderr that is a terminal, else 80 by 25."""
    env = os.environ
    columns, lines = env.get("COLUMNS"), env.get("LINES")
    fixed_w = int(columns) if columns is not None and columns.isdigit() else None
    fixed_h = int(lines) if lines is not None and lines.isdigit() else None
    width = height = None
    for fd in _std_fds():
        try:
            width, height = os.get_terminal_size(fd)
        except (AttributeError, ValueError, OSError):
            pass
        else:
            break
    width = fixed_w if fixed_w is not None else width or 80
    height = fixed_h if fixed_h is not None else height or 25
    return width, height


class PlainConsole:
    """A console for a stream rich would draw without colour: it answers what the report
    writers ask of a console (`color_system`, `soft_wrap`, `width`, `height`, `encoding`,
    `is_terminal`, `file`) and prints a printable string of no markup itself; anything
    else goes to `rich`, rich's console for the same stream and look, made when first
    needed. Its lines are never wrapped (soft wrap: piped output keeps them whole)."""

    color_system = None
    is_terminal = False
    soft_wrap = True

    def __init__(self, file, width: int, height: int) -> None:
        self.file = file
        self.width = width
        self.height = height
        self.encoding = _encoding(file)
        self._rich: Any = None

    @property
    def rich(self):
        """Rich's console for this stream, drawing as this one does."""
        if self._rich is None:
            from rich.console import Console

            self._rich = Console(
                file=self.file,
                highlight=False,
                width=self.width,
                height=self.height,
                color_system=None,
                force_terminal=False,
                soft_wrap=True,
            )
        return self._rich

    def print(self, *objects, **kw) -> None:
        """`Console.print`; a printable string without markup or emoji codes (`[`, `:`)
        is written as it is, as rich would print it with soft wrap."""
        if (
            not kw
            and len(objects) == 1
            and objects[0].__class__ is str
            and objects[0].isprintable()
            and "[" not in objects[0]
            and ":" not in objects[0]
        ):
            self.file.write(objects[0] + "\n")
            return
        self.rich.print(*objects, **kw)

    def __getattr__(self, name: str):
        # (only for what the class does not have: rich's console draws it)
        if name.startswith("__") or name == "_rich":
            raise AttributeError(name)
        return getattr(self.rich, name)


def _encoding(file) -> str:
    """`Console.encoding` of `file`."""
    return (getattr(file, "encoding", "utf-8") or "utf-8").lower()


def plain_console(file) -> PlainConsole | None:
    """A `PlainConsole` for `file` where a rich console for it (no `force_terminal`) would
    have no colour system, with rich's width and height and soft wrap (piped output keeps
    its lines whole); None where rich must decide, and on Windows."""
    if sys.platform == "win32" or not surely_plain(file):
        return None
    width, height = console_size()
    return PlainConsole(file, width, height)
