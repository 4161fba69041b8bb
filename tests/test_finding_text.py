"""One formatter of a finding per way the commands show it (report/finding_text.py), and the
commands that print findings use it."""

from __future__ import annotations

import io

from rich.console import Console
from typer.testing import CliRunner

from meshdiag.cli.app import build_app
from meshdiag.model.findings import Finding
from meshdiag.report.finding_text import brief, located

F = Finding(
    "MD105", "uneven-shard", "warning", "dim 0 [7] splits 4 ways", fix="pad to 8", path="a.mlir"
)


def test_located_and_brief_plain_text():
    assert located(F).plain == (
        "a.mlir:0:0 MD105 [warning] dim 0 [7] splits 4 ways\n    fix: pad to 8"
    )
    at = Finding("MD101", "mesh-mismatch", "error", "m", path="b", line=3, column=20)
    assert located(at).plain == "b:3:20 MD101 [error] m"
    assert (
        brief(F).plain == "MD105 uneven-shard (warning): dim 0 [7] splits 4 ways\n  fix: pad to 8"
    )
    assert brief(at).plain == "MD101 mesh-mismatch (error): m"


def test_markup_in_a_message_is_printed_as_written():
    """A message is text, never rich markup (`[x]` stays)."""
    console = Console(file=io.StringIO(), width=200, color_system=None)
    f = Finding("MD105", "uneven-shard", "info", "axes [x] and [bold]y[/bold]")
    console.print(brief(f))
    assert console.file.getvalue() == "MD105 uneven-shard (info): axes [x] and [bold]y[/bold]\n"


def test_commands_print_findings_with_them():
    r = CliRunner().invoke(
        build_app(),
        [
            "simulate-copy",
            "--mesh",
            "t3k",
            "--shape",
            "1,7,32,32",
            "--mapper",
            "shard:1",
            "--dest",
            "uniform:1,1,32,32",
            "--write",
            "by-value",
        ],
        env={"COLUMNS": "200"},
    )
    assert "MD106 uniform-spec-on-uneven-shards (error): " in r.stdout
    assert "\n  fix: allocate the destination" in r.stdout
    r = CliRunner().invoke(
        build_app(), ["layout", "{devices=[4,2]<=[8]}", "--shape", "7,33"], env={"COLUMNS": "200"}
    )
    assert "MD105 uneven-shard (" in r.stdout and "\n  fix: " in r.stdout
