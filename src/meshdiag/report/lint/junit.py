"""JUnit XML: one testcase per checked file, one failure element per finding in it; a run
with no files still writes one passing testcase (as mypy does) so CI shows a result."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from itertools import groupby

# characters XML 1.0 cannot carry at all (ElementTree would write them and break the file),
# and lone surrogates (a file name's bytes that are not UTF-8, as Python decodes them)
_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _visible(c: str) -> str:
    code = ord(c)
    if 0xDC80 <= code <= 0xDCFF:  # the byte a surrogate escape stands for
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _clean(text: str) -> str:
    return _INVALID_XML.sub(lambda m: _visible(m.group()), text)


def write(result, stream, ctx) -> None:
    by_file = {p: list(g) for p, g in groupby(result.findings, key=lambda f: f.path)}
    files = list(dict.fromkeys([*result.files, *by_file]))
    failed = sum(1 for p in files if by_file.get(p))
    root = ET.Element(
        "testsuites",
        name="meshdiag",
        tests=str(max(1, len(files))),
        failures=str(failed),
        errors="0",
    )
    suite = ET.SubElement(
        root,
        "testsuite",
        name="meshdiag",
        tests=str(max(1, len(files))),
        failures=str(failed),
        errors="0",
        skipped="0",
    )
    if not files:
        ET.SubElement(suite, "testcase", name="meshdiag", classname="meshdiag")
    for path in files:
        case = ET.SubElement(suite, "testcase", name=_clean(path or ""), classname="meshdiag")
        for f in by_file.get(path, []):
            where = f"{f.path}:{f.line or 1}:{f.column or 1}"
            failure = ET.SubElement(
                case,
                "failure",
                message=_clean(f"{f.code} {f.message}"),
                type=f"{f.code} {f.name}",
            )
            text = f"{where}: {f.severity}: {f.code} [{f.name}] {f.message}"
            if f.fix:
                text += f"\nfix: {f.fix}"
            failure.text = _clean(text)
    ET.indent(root)
    stream.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    stream.write(ET.tostring(root, encoding="unicode"))
    stream.write("\n")
