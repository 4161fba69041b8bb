"""`meshdiag rule`: the check list, one check's page, JSON, unknown codes; rule docs complete."""

import json
import re

import pytest

from meshdiag.checks.registry import all_rules
from meshdiag.cli.app import main

MINE = ("MD101", "MD102", "MD103", "MD104", "MD107", "MD108")


def run(capsys, *args):
    with pytest.raises(SystemExit) as e:
        main(list(args))
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def test_list_shows_every_registered_rule(capsys):
    rc, out, err = run(capsys, "rule")
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["CODE", "NAME", "SEVERITY", "SUMMARY"]
    codes = [line.split()[0] for line in lines[1:]]
    assert codes == [r.code for r in all_rules()]
    assert set(MINE) <= set(codes)
    row = next(line for line in lines if line.startswith("MD101"))
    assert "mesh-mismatch" in row and "error" in row


def test_explain_one_rule(capsys):
    rc, out, _ = run(capsys, "rule", "MD101")
    assert rc == 0
    assert out.startswith("# mesh-mismatch (MD101)\n")
    for section in ("## What it does", "## Why is this bad?", "## How to fix", "## Example"):
        assert section in out
    assert "Mesh is not valid" in out and "_axis_0" in out


def test_lower_case_code_and_name_work(capsys):
    _, by_code, _ = run(capsys, "rule", "md103")
    _, by_name, _ = run(capsys, "rule", "unsupported-mesh")
    assert by_code == by_name and "# unsupported-mesh (MD103)" in by_code


def test_json(capsys):
    rc, out, _ = run(capsys, "rule", "--format", "json")
    doc = json.loads(out)
    assert rc == 0 and doc["version"] == 1
    assert [r["code"] for r in doc["rules"]] == [r.code for r in all_rules()]
    rc, out, _ = run(capsys, "rule", "MD102", "--format", "json")
    one = json.loads(out)
    assert one["version"] == 1 and one["code"] == "MD102" and one["name"] == "off-mesh-sharding"
    assert set(one) >= {"severity", "summary", "what", "why", "fix", "example"}


def test_unknown_code_is_one_line_exit_2(capsys):
    rc, out, err = run(capsys, "rule", "MD999")
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "unknown rule 'MD999'" in err


def test_bad_format_exit_2(capsys):
    rc, _, err = run(capsys, "rule", "--format", "yaml")
    assert rc == 2 and "--format" in err


@pytest.mark.parametrize("code", MINE)
def test_my_rules_are_documented(code):
    r = next(r for r in all_rules() if r.code == code)
    assert re.fullmatch(r"[a-z]+(-[a-z]+)*", r.name)
    assert r.severity in ("error", "warning", "info")
    for field in ("summary", "what", "why", "fix", "example"):
        assert len(getattr(r, field)) > 20, (code, field)
    assert "Use instead" in r.example or "→" in r.example


def test_one_rule_doc_for_rule_and_sarif(capsys):
    """`meshdiag rule CODE` and SARIF's rule help are the same page (report/rule_doc.py)."""
    from meshdiag.report.lint.sarif import rule_descriptor

    for r in all_rules():
        _, out, _ = run(capsys, "rule", r.code)
        help_ = rule_descriptor(r)["help"]
        assert help_["markdown"] == help_["text"] == out
        if r.example:
            assert f"## Example\n\n```\n{r.example}\n```\n" in out
