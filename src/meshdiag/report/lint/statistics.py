"""`--statistics`: how many findings per code, most frequent first (ruff's shape)."""

from __future__ import annotations

import json

from meshdiag.report.lint._summary import summary


def write(result, stream, ctx, *, as_json: bool = False) -> None:
    rows = result.statistics()
    if as_json:
        doc = [{"code": c, "name": n, "count": k} for c, n, k in rows]
        json.dump(doc, stream, indent=2)
        stream.write("\n")
        return
    width = max((len(str(k)) for _, _, k in rows), default=1)
    for code, name, count in rows:
        stream.write(f"{count:>{width}}\t{code}\t{name}\n")
    stream.write(summary(result) + "\n")
