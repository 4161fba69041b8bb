"""Output rich would draw without colour, written without rich (`report/plain_console.py`):
held to rich itself. `surely_plain` says "no colour" only where rich's console says so;
`console_size` is rich's width and height, with every standard stream a pipe or a
terminal of a given size; a `PlainConsole` prints what rich's console prints, and the
inspect report drawn on one is byte for byte the report drawn on rich's; `inspect` of a
file to a pipe does not import rich."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshdiag.report.plain_console import PlainConsole, console_size, plain_console, surely_plain

ROOT = Path(__file__).resolve().parent.parent


class _Stream(io.StringIO):
    """A text stream that says it is a terminal (`tty`), is not, or cannot say (None)."""

    def __init__(self, tty: bool | None) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        if self.tty is None:
            raise ValueError("I/O operation on closed file")
        return self.tty


class _Bare:
    """A stream with `write` alone."""

    def write(self, text: str) -> int:
        return len(text)


@pytest.mark.parametrize("force", [None, False, True])
@pytest.mark.parametrize("tty", [False, True, None, "bare"])
@pytest.mark.parametrize("tty_compatible", [None, "", "0", "1", "yes"])
@pytest.mark.parametrize("force_color", [None, "", "1"])
@pytest.mark.parametrize("term", [None, "dumb", "xterm-256color"])
def test_surely_plain_is_what_rich_decides(
    monkeypatch, force, tty, tty_compatible, force_color, term
):
    """Wherever it says so, rich's console for that stream has no colour system; and it
    says so exactly where rich's rules say "no terminal" (no forced one)."""
    from rich.console import Console

    env = {"TTY_COMPATIBLE": tty_compatible, "FORCE_COLOR": force_color, "TERM": term}
    for name, value in env.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    monkeypatch.delenv("COLORTERM", raising=False)
    stream = _Bare() if tty == "bare" else _Stream(tty)
    got = surely_plain(stream, force)
    if got:
        assert Console(file=stream, force_terminal=force).color_system is None
    sure = force is False or (
        force is None
        and tty_compatible != "1"
        and (
            tty_compatible == "0" or force_color == "" or (force_color is None and tty is not True)
        )
    )
    assert got == sure


#: in a child whose standard streams are pipes or terminals, under each COLUMNS and LINES
#: (None: unset): rich's width and height for a console writing to a pipe, and
#: `console_size`'s
_SIZES = """
import io, itertools, json, os
from rich.console import Console
from meshdiag.report.plain_console import console_size
out = []
for columns, lines in itertools.product([None, "100", "0", "x"], [None, "40", "x"]):
    for name, value in (("COLUMNS", columns), ("LINES", lines)):
        os.environ.pop(name, None)
        if value is not None:
            os.environ[name] = value
    c = Console(file=io.StringIO())
    out.append([columns, lines, [c.width, c.height], list(console_size())])
print(json.dumps(out))
"""


def _pty(cols: int, rows: int) -> tuple[int, int]:
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    return master, slave


@pytest.mark.skipif(sys.platform == "win32", reason="rich asks Windows' console its size")
@pytest.mark.parametrize("which", ["none", "stdin", "stderr", "stdin-zero"])
def test_console_size_is_richs(which):
    opened: list[int] = []
    streams: dict = {"stdin": subprocess.DEVNULL, "stderr": subprocess.PIPE}
    if which != "none":
        master, slave = _pty(0, 0) if which == "stdin-zero" else _pty(132, 51)
        opened += [master, slave]
        streams["stdin" if which.startswith("stdin") else "stderr"] = slave
    try:
        r = subprocess.run(
            [sys.executable, "-c", _SIZES], stdout=subprocess.PIPE, text=True, timeout=60, **streams
        )
    finally:
        for fd in opened:
            os.close(fd)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert len(got) == 12
    for columns, lines, rich_size, ours in got:
        assert ours == rich_size, (columns, lines)


def test_plain_console_for_a_pipe_only(monkeypatch):
    for name in ("TTY_COMPATIBLE", "FORCE_COLOR", "COLUMNS", "LINES"):
        monkeypatch.delenv(name, raising=False)
    c = plain_console(_Stream(False))
    assert c is not None and c.color_system is None and c.soft_wrap and not c.is_terminal
    assert (c.width, c.height) == console_size()
    assert plain_console(_Stream(True)) is None
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert plain_console(_Stream(False)) is None


_printed = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30) | st.sampled_from(
    ["2 file(s), 0 finding(s)", "a :smile: b", "[bold]x[/bold]", "tab\there", "x" * 70]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_printed | st.integers(), min_size=1, max_size=3))
def test_plain_console_prints_what_rich_prints(objects):
    """Strings it writes itself (printable, no markup or emoji code) and everything it
    hands to rich come out as rich's console of the same look prints them."""
    _prints_what_rich_prints(objects)


@pytest.mark.parametrize(
    "text", ["2 file(s), 0 finding(s)", "a :smile: b", "[bold]x[/bold]", "tab\there", "x" * 70]
)
def test_plain_console_prints_these_as_rich(text):
    _prints_what_rich_prints([text])


def _rich(file, width: int):
    """Rich's console of a `PlainConsole`'s look (`PlainConsole.rich`), on `file`."""
    from rich.console import Console

    return Console(
        file=file,
        highlight=False,
        width=width,
        height=25,
        color_system=None,
        force_terminal=False,
        soft_wrap=True,
    )


def _prints_what_rich_prints(objects):
    ours, theirs = io.StringIO(), io.StringIO()
    plain = PlainConsole(ours, 60, 25)
    plain.print(*objects)
    _rich(theirs, 60).print(*objects)
    assert ours.getvalue() == theirs.getvalue()


def _reports():
    """(report, what makes its module summaries: they are read once) of every fixture
    file, and of a file whose path and findings hold what rich does not print as it is."""
    from meshdiag.ir.scan import expand_paths, scan_path
    from meshdiag.model.findings import Finding
    from meshdiag.pipeline.inspect import Inspected, run_checks
    from meshdiag.pipeline.module_summary import summarise_file

    for path in sorted(expand_paths([str(ROOT / "fixtures")])):
        if not path.endswith((".mlir", ".txt", ".hlo")):
            continue
        report = scan_path(path)
        findings = run_checks(report, None, None, "xla")
        yield Inspected(report, findings), partial(summarise_file, report, mesh=None, split="xla")
    # the seed file under a path with a tab and a control character, and findings whose
    # text holds them too
    report = scan_path(str(ROOT / "fixtures/seed/distorted_mesh.mlir"))
    findings = run_checks(report, None, None, "xla")
    report.path = "odd\tdir/\x01seed.mlir"
    odd = [
        Finding("MD101", "mesh-mismatch", "error", "tab\there", "fix\x02", report.path, 3, 1),
        Finding("MD105", "uneven-shard", "warning", "plain", None, report.path, 4, 2),
    ]
    yield Inspected(report, findings + odd), partial(summarise_file, report, mesh=None, split="xla")
    # a mesh that does not parse, its text (the grid's title) holding a tab
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "tab_mesh.mlir")
        with open(path, "w") as f:
            f.write(TAB_MESH)
        report = scan_path(path)
    assert report.modules[0].meshes[0].mesh is None
    findings = run_checks(report, None, None, "xla")
    yield Inspected(report, findings), partial(summarise_file, report, mesh=None, split="xla")


TAB_MESH = """module @m {
  sdy.mesh @mesh = <["a"=2,\t"b"=x]>
  func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}) -> tensor<8x8xf32> {
    return %arg0 : tensor<8x8xf32>
  }
}
"""


def _by_rich(item, shown, console) -> str:
    """`render_file`'s text with every `Line` drawn by rich itself (its `text()` printed),
    the other parts as `render_part` draws them."""
    from itertools import chain

    from meshdiag.report import file_text as ft

    parts = [
        ft._file_head(item),
        *chain.from_iterable(ft.module_lines(s) for s in shown),
        *ft._file_tail(item),
    ]
    out = []
    for part in parts:
        line = part.renderable if isinstance(part, ft.Cached) else part
        if line.__class__ is ft.Line:
            with console.capture() as cap:
                console.print(line.text())
            out.append(cap.get())
        else:
            out.append(ft.render_part(part, console, None))
    return "".join(out) + "\n"


@pytest.mark.parametrize("width", [80, 40, 200])
def test_report_on_a_plain_console_is_richs(width):
    """Every fixture's `inspect` text drawn on a `PlainConsole` (its parts' plain text,
    rich for the rest) is the text rich draws on its console of the same look."""
    from meshdiag.report.file_text import render_file

    for item, summaries in _reports():
        plain = PlainConsole(io.StringIO(), width, 25)
        rich = _rich(io.StringIO(), width)
        ours = render_file(item, summaries(), plain)
        assert ours == render_file(item, summaries(), rich), item.report.path
        assert ours == _by_rich(item, summaries(), rich), item.report.path


def test_colour_report_is_unchanged_by_the_plain_parts():
    """On a colour console the parts made as `Line`s for the plain path (the file's head,
    a big mesh's title, the located findings) draw as the rich texts they stand for."""
    from rich.console import Console
    from rich.text import Text

    from meshdiag.model.findings import Finding
    from meshdiag.report.file_text import Line, render_part
    from meshdiag.report.finding_text import located, located_parts

    def colour(part) -> str:
        c = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor", width=80)
        return render_part(part, c, None)

    head = Text("a.mlir: 2 module(s)", style="bold underline")
    head.append("\nlogical ids", style="dim")
    head.append("\nkey", style="dim")
    line = Line("a.mlir: 2 module(s)", ("\nlogical ids", "dim"), ("\nkey", "dim"))
    line.style, line.check = "bold underline", True
    assert colour(line) == colour(head)
    for fix in ("do this", None):
        f = Finding("MD104", "device-count-mismatch", "error", "bad", fix, "a.mlir", 3, 4)
        # (as `located` made it before it had parts)
        want = Text.assemble(("a.mlir:3:4", "bold"), " ", ("MD104", "bold red"), " [error] bad")
        if fix:
            want.append("\n    fix: do this", style="green")
        assert colour(Line(*located_parts(f), check=True)) == colour(want) == colour(located(f))
    assert colour(Line("@m = x=1024", check=True)) == colour(Text("@m = x=1024"))


#: runs `meshdiag ARGS` and, as it exits, prints the rich and typer modules loaded
#: (`-X importtime` misses a run's last imports: it ends with os._exit)
_LOADED = """
import os, sys
exit_ = os._exit
def report(code):
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("rich", "typer", "click"))
    print("LOADED", loaded, file=sys.stderr)
    sys.stderr.flush()
    exit_(code)
os._exit = report
sys.argv = ["meshdiag", *sys.argv[1:]]
from meshdiag.cli.app import main
main()
"""


@pytest.mark.parametrize(
    "args, says",
    [
        (["inspect", "-j1", "fixtures/seed/distorted_mesh.mlir"], "sharded values"),
        (["inspect", "-j1", "fixtures/xla_dump/mlp2"], "sharded value"),  # the dump's report
        (["lint", "fixtures/xla_dump/mlp2"], "All checks passed"),
    ],
)
def test_text_to_a_pipe_imports_neither_rich_nor_typer(args, says):
    """(typer: `cli.direct` runs these command lines)"""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    r = subprocess.run(
        [sys.executable, "-c", _LOADED, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert says in r.stdout
    assert "LOADED []" in r.stderr


def test_dump_report_on_a_plain_console_is_richs(tmp_path):
    """`inspect DIR`'s report on a `PlainConsole`, of a dump under a directory whose name
    holds a tab (which rich expands), is what rich prints part by part."""
    import shutil

    from meshdiag.pipeline.dump_summary import DumpSummary
    from meshdiag.pipeline.inspect import iter_inspect
    from meshdiag.report.dump_text import report
    from meshdiag.report.file_text import render_part

    root = tmp_path / "odd\tdump"
    shutil.copytree(ROOT / "fixtures/xla_dump/mlp2", root)
    summary = DumpSummary()
    for item in iter_inspect([str(root)]):
        summary.add(item, mesh=None)
    parts = list(report(summary, roots=[str(root)], split="xla"))
    rich = _rich(io.StringIO(), 90)
    for part in parts:
        rich.print(part)
    plain = PlainConsole(io.StringIO(), 90, 25)
    ours = "".join(render_part(part, plain, None) for part in parts)
    assert "\t" in str(root) and ours == rich.file.getvalue()
