"""`meshdiag inspect PATH --html FILE`: measure the collectives of the same paths, build the
page (`report/dump_html.py`) from them and the files' `DumpSummary`, write it whole."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from meshdiag.model.mesh import Mesh
    from meshdiag.pipeline.dump_summary import DumpSummary


def write_page(
    target: str, summary: DumpSummary, paths: list[str], mesh: Mesh | None, split: str
) -> None:
    """Write the page for `paths` to `target` (atomically: a failed write keeps the old
    file). Collectives are measured as `meshdiag comms` measures them."""
    from meshdiag.comms.report import measure_file
    from meshdiag.comms.scan import scan_collectives
    from meshdiag.fileio import write_atomic
    from meshdiag.memo import RunMemos
    from meshdiag.report.dump_html import page

    memos = RunMemos()
    comms = [measure_file(f, mesh, memos) for f in scan_collectives(paths, memos)]
    doc = page(summary, comms, roots=list(paths), split=split)
    write_atomic(target, doc, "--html")
    print(f"meshdiag: wrote {target}", file=sys.stderr)
