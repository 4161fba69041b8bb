"""Record what the scanner gives on every fixture and fuzz seed (tests/scan_reference.py):

    .venv/bin/python tests/golden/make_scan_golden.py

Run only when a change of the scanner's output is intended (and say so in the commit)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import scan_reference  # noqa: E402

if __name__ == "__main__":
    scan_reference.GOLDEN.write_text(json.dumps(scan_reference.digests(), indent=1) + "\n")
    print(f"wrote {scan_reference.GOLDEN}")
