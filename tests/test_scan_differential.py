"""The scanner against what it gave before the one-pass field reader: every fixture and
fuzz seed, scanned and checked under two names and two settings, must give the same
modules, values (lines, columns, shapes, parsed shardings), MD001s and findings
(tests/golden/scan_reports.json, recorded by tests/golden/make_scan_golden.py)."""

from __future__ import annotations

import json

import scan_reference


def test_every_input_scans_as_before():
    want = json.loads(scan_reference.GOLDEN.read_text())
    got = scan_reference.digests()
    assert sorted(got) == sorted(want)
    differ = [k for k in want if got[k] != want[k]]
    assert differ == []
