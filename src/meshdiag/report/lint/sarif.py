"""SARIF 2.1.0 as GitHub code scanning reads it (github/docs "SARIF support for code
scanning"): one run, the tool's rules with their docs, one result per finding located by a
URI relative to the working directory (`uriBaseId: %SRCROOT%`) and a 1-based region."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from urllib.parse import quote

from meshdiag.lint.suppress import fingerprint
from meshdiag.report.lint._paths import relative_uri
from meshdiag.report.rule_doc import rule_page

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/meshdiag/meshdiag"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}
PROBLEM_SEVERITY = {"error": "error", "warning": "warning", "info": "recommendation"}


def rule_descriptor(rule) -> dict:
    summary = rule.summary[:1].upper() + rule.summary[1:] if rule.summary else rule.name
    page = rule_page(rule)  # Markdown reads as text too
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": summary},
        "fullDescription": {"text": rule.what or summary},
        "help": {"text": page, "markdown": page},
        "defaultConfiguration": {"level": LEVEL.get(rule.severity, "warning")},
        "properties": {
            "problem.severity": PROBLEM_SEVERITY.get(rule.severity, "warning"),
            "tags": ["sharding"],
        },
    }


class _Adhoc:
    """Descriptor data for a code the registry does not know (should not happen)."""

    def __init__(self, f):
        self.code, self.name, self.severity = f.code, f.name, f.severity
        self.summary, self.what, self.why, self.fix, self.example = f.name, "", "", "", ""


def document(result, ctx) -> dict:
    rules = dict(ctx.rules)
    for f in result.findings:
        rules.setdefault(f.code, _Adhoc(f))
    codes = sorted(rules)
    index = {c: i for i, c in enumerate(codes)}
    seen: Counter = Counter()
    results = []
    for f in result.findings:
        uri, relative = relative_uri(f.path, ctx.cwd)
        if relative:  # a URI reference: spaces and the like percent-encoded
            # a file name that is not UTF-8 is percent-encoded as the bytes it is
            artifact = {
                "uri": quote(uri, safe="/", errors="surrogateescape"),
                "uriBaseId": "%SRCROOT%",
            }
        else:
            artifact = {"uri": _file_uri(uri)}
        region = {"startLine": f.line or 1, "startColumn": f.column or 1}
        fp = fingerprint(f)
        seen[(uri, fp)] += 1
        message = f.message + (f"\nFix: {f.fix}" if f.fix else "")
        results.append(
            {
                "ruleId": f.code,
                "ruleIndex": index[f.code],
                "level": LEVEL.get(f.severity, "warning"),
                "message": {"text": message},
                "locations": [
                    {"physicalLocation": {"artifactLocation": artifact, "region": region}}
                ],
                # line-independent, so an alert keeps its identity when lines shift
                "partialFingerprints": {
                    "primaryLocationLineHash": f"{fp}:{seen[(uri, fp)]}",
                    "meshdiagFingerprint/v1": fp,
                },
            }
        )
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "meshdiag",
                        "version": ctx.version,
                        "semanticVersion": ctx.version,
                        "informationUri": INFORMATION_URI,
                        "rules": [rule_descriptor(rules[c]) for c in codes],
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": _file_uri(ctx.cwd, directory=True)}},
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def _file_uri(path: str, directory: bool = False) -> str:
    uri = Path(path).absolute().as_uri()
    return uri + "/" if directory and not uri.endswith("/") else uri


def write(result, stream, ctx) -> None:
    json.dump(document(result, ctx), stream, indent=2)
    stream.write("\n")
