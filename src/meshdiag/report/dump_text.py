"""Text output of `meshdiag inspect DIR`: a dump directory as one report (`DumpSummary`).

First the summary — files, modules, meshes, the distinct shardings with how many values and
files use them, findings by code — then each distinct sharding once: how it is written,
its shapes, the files it appears in, its layout drawn (the legend once, above them all);
then each distinct finding once, with how often and in how many files it fired.

Its lines are `file_text.Line`s: to a colourless pipe their text is written without rich
(`report.plain_console`), which draws only the pictures it alone can lay out.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from meshdiag.pipeline.dump_summary import SHAPES_MAX, SPELLINGS_MAX
from meshdiag.report.file_text import Line, mesh_grid
from meshdiag.report.finding_text import located_parts
from meshdiag.report.grid import LEGEND, dims_text
from meshdiag.report.picture import LayoutPicture

if TYPE_CHECKING:
    from meshdiag.pipeline.dump_summary import DumpSummary, Group

#: layouts drawn at most (the rest are listed)
MAX_PICTURES = 64
#: spellings listed per sharding
MAX_SPELLINGS = 6


def _n(k: int, what: str) -> str:
    return f"{k:,} {what}{'' if k == 1 else 's'}"


#: shapes listed per sharding (the commonest)
MAX_SHAPES = 6


def counts_text(d: dict, fmt=dims_text, shown: int = MAX_SHAPES) -> str:
    """The `shown` commonest shapes (keys) of a count dict with their counts, and how many
    more."""
    ranked = sorted(d.items(), key=lambda kv: -kv[1])
    text = ", ".join(f"{fmt(k)} ×{n:,}" for k, n in ranked[:shown])
    if len(ranked) > shown:
        text += f" (+{len(ranked) - shown} more)"
    return text + uncounted(len(ranked), SHAPES_MAX)


def uncounted(distinct: int, kept: int) -> str:
    """What to add when a count dict is as full as the summary keeps them (`kept`): it
    counted only the first ones it met."""
    return f"; only the first {kept} distinct ones are counted" if distinct >= kept else ""


def report(s: DumpSummary, *, roots: list[str], split: str) -> Iterator:
    """The renderables of the whole report, in order."""
    shown = path_shower(roots)
    head = ", ".join(
        [
            _n(s.files, "file") + " read",
            f"{s.skipped:,} skipped (binary, LLVM IR)",
            _n(s.modules, "module"),
            _n(s.values, "sharded value"),
        ]
    )
    yield _line(f"{', '.join(roots)}: {head}", style="bold underline")
    yield _line(f"meshes: {len(s.meshes)}")
    for (_, text), seen in s.meshes.items():
        yield _line(f"  @{seen.decl.name} = {text}  in {_n(seen.files, 'file')}")
    for label, files in s.id_spaces.items():
        in_files = f"  ({_n(files, 'file')})" if len(s.id_spaces) > 1 else ""
        yield _line(f"{label}{in_files}", style="dim")
    groups = list(s.groups.values())
    yield _line(f"shardings: {len(groups)} distinct device layouts")
    width = max([len(f"{g.values:,}") for g in groups] + [6])
    yield _line(f"  {'values':>{width}}  {'files':>6}  layout", style="dim")
    for g in groups:
        yield _line(f"  {g.values:>{width},}  {g.files:>6,}  {g.key}")
    codes = ", ".join(f"{c} ×{n:,}" for c, n in sorted(s.by_code.items()))
    yield _line(f"findings: {s.num_findings:,}" + (f" ({codes})" if codes else ""))
    yield _line("")

    for seen in s.meshes.values():
        if seen.decl.mesh is not None:
            yield mesh_grid(seen.decl)
    yield _line(LEGEND, style="dim")
    pictures = 0
    for g in groups:
        yield _line("")
        yield from _group(g, shown)
        if pictures < MAX_PICTURES:
            pic = _picture(g, split)
            if pic is not None:
                pictures += 1
                yield pic
    if pictures == MAX_PICTURES and len(groups) > MAX_PICTURES:
        yield _line(f"(layouts past the first {MAX_PICTURES} are listed, not drawn)")

    if s.findings:
        yield _line("")
        yield _line(f"findings: {len(s.findings):,} distinct", style="bold")
        for seen in s.findings.values():
            parts = located_parts(seen.first)
            if seen.count > 1:
                parts += (
                    (
                        f"\n    (×{seen.count:,} in {_n(seen.files, 'file')}; the first shown)",
                        "dim",
                    ),
                )
            yield _line(*parts)
        if s.unlisted:
            yield _line(f"(+{s.unlisted:,} findings with other texts, counted above)")
    yield _line("")
    yield _line(
        f"{s.files} file(s) read, {s.skipped} skipped, {s.num_findings} finding(s)", style="bold"
    )


def _group(g: Group, shown) -> Iterator[Line]:
    yield _line((g.key, "green bold"), f"  {_n(g.values, 'value')} in {_n(g.files, 'file')}")
    if list(g.spellings) != [g.key]:
        yield _line("  written as:")
        ranked = sorted(g.spellings.items(), key=lambda kv: -kv[1])
        for text, n in ranked[:MAX_SPELLINGS]:
            yield _line(f"    {text}  ×{n:,}")
        if len(ranked) > MAX_SPELLINGS:
            more = len(ranked) - MAX_SPELLINGS
            yield _line(f"    (+{more} more spellings{uncounted(len(ranked), SPELLINGS_MAX)})")
    if g.shapes:
        yield _line(f"  global shapes: {counts_text(g.shapes)}")
    if g.local_shapes:
        yield _line(f"  per-device shapes: {counts_text(g.local_shapes)}")
    yield _line(f"  in {_n(g.files, 'file')}:")
    for p, name, line in g.where:
        yield _line(f"    {shown(p)}  ({name} line {line})")
    if g.files > len(g.where):
        yield _line(f"    (+{_n(g.files - len(g.where), 'more file')})")


def _line(*parts: str | tuple[str, str], style: str = "") -> Line:
    """A line of the report: its text may hold what the dump holds (paths, shardings as
    written), printed without rich only where printable."""
    return Line(*parts, style=style, check=True)


def _picture(g: Group, split: str):
    from meshdiag.errors import MeshdiagError

    try:
        lay = g.layout(split)
    except MeshdiagError:
        return None
    return (
        None if lay is None else LayoutPicture(lay, g.key, max_cells=32, compact=True, legend=False)
    )


def path_shower(roots: list[str]):
    """Paths as the report shows them: below the one directory given, relative to it."""
    dirs = [r for r in roots if os.path.isdir(r)]
    if len(dirs) != 1 or len(roots) != 1:
        return lambda p: p
    prefix = dirs[0].rstrip(os.sep) + os.sep
    return lambda p: p[len(prefix) :] if p.startswith(prefix) else p
