"""`{"version": 1, "findings": [...]}` with exactly the finding fields of docs/json.md."""

from __future__ import annotations

import json


def write(result, stream, ctx) -> None:
    doc = {"version": 1, "findings": [f.to_json() for f in result.findings]}
    json.dump(doc, stream, indent=2)
    stream.write("\n")
