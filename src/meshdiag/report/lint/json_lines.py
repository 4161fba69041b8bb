"""One finding object per line (the finding fields of docs/json.md), nothing else."""

from __future__ import annotations

import json


def write(result, stream, ctx) -> None:
    for f in result.findings:
        stream.write(json.dumps(f.to_json(), separators=(",", ":")) + "\n")
