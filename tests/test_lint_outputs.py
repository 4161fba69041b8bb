"""Every lint output format over one shared sample (with a parse error, all three severities,
and text that needs escaping), checked field by field against what the consumers expect."""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshdiag.checks.rule import Rule
from meshdiag.lint.result import LintResult, OutputContext
from meshdiag.lint.suppress import fingerprint
from meshdiag.model.findings import Finding
from meshdiag.report import lint as outputs
from meshdiag.report.lint.github import escape_data, escape_property

RULES = {
    "MD001": Rule(
        "MD001",
        "parse-error",
        "error",
        "an annotation cannot be parsed",
        what="Parse failures.",
        why="Unread = unchecked.",
        fix="Fix the text.",
        example="{devices=[2,2<=[4]}",
    ),
    "MD101": Rule(
        "MD101",
        "mesh-mismatch",
        "error",
        "a module's mesh is not the global mesh",
        what="Compares meshes.",
        why="tt-mlir rejects 4x2.",
        fix="Use the global mesh.",
        example='sdy.mesh @mesh = <["_axis_0"=4, "_axis_1"=2]>',
    ),
    "MD105": Rule("MD105", "uneven-shard", "warning", "a dimension is not divisible"),
    "MD109": Rule("MD109", "large-replicated", "info", "a large tensor is replicated"),
}


def F(code, sev, path, line, col, msg, fix=None):
    return Finding(code, RULES[code].name, sev, msg, fix, path, line, col)


FINDINGS = sorted(
    [
        F(
            "MD001",
            "error",
            "dumps/a b.mlir",
            7,
            30,
            "expected ']' at column 14 in '{devices=[2,2<=[4]}'",
        ),
        F(
            "MD101",
            "error",
            "dumps/a b.mlir",
            3,
            3,
            "mesh 4x2 is not the global mesh 2x4: 100% wrong, axes a:b,c\nsecond line",
            fix='sdy.mesh @mesh = <["batch"=2, "model"=4]>',
        ),
        F(
            "MD105",
            "warning",
            "dumps/z.hlo",
            12,
            5,
            'dim 1 of 7 over 8: device 7 <empty> & "stale"',
        ),
        F("MD109", "info", "dumps/z.hlo", 20, 1, "tensor of 4 GiB replicated\x01 on 8 devices"),
    ],
    key=Finding.sort_key,
)
FILES = ["dumps/a b.mlir", "dumps/clean.mlir", "dumps/z.hlo"]


@pytest.fixture
def ctx(tmp_path):
    return OutputContext(cwd=str(tmp_path), rules=RULES, version="0.1.0", color=False)


def render(fmt, ctx, findings=FINDINGS, files=FILES, matched=0):
    buf = io.StringIO()
    outputs.write(fmt, LintResult(list(findings), list(files), matched), buf, ctx)
    return buf.getvalue()


def test_every_format_has_a_writer(ctx):
    for fmt in outputs.FORMATS:
        assert render(fmt, ctx, findings=[], files=[]) is not None


def test_json_contract(ctx):
    doc = json.loads(render("json", ctx))
    assert doc["version"] == 1
    keys = ["code", "name", "severity", "path", "line", "column", "message", "fix"]
    assert [list(f) for f in doc["findings"]] == [keys] * 4
    assert [f["code"] for f in doc["findings"]] == ["MD101", "MD001", "MD105", "MD109"]
    first = doc["findings"][0]
    assert first["path"] == "dumps/a b.mlir" and first["line"] == 3 and first["column"] == 3
    assert first["fix"].startswith("sdy.mesh") and doc["findings"][1]["fix"] is None
    assert json.loads(render("json", ctx, findings=[])) == {"version": 1, "findings": []}


def test_json_lines(ctx):
    lines = render("json-lines", ctx).splitlines()
    assert len(lines) == 4
    assert [json.loads(x) for x in lines] == [f.to_json() for f in FINDINGS]


def test_concise(ctx):
    lines = render("concise", ctx).splitlines()
    assert lines[0].startswith("dumps/a b.mlir:3:3: MD101 mesh 4x2")
    assert (
        lines[1] == "dumps/a b.mlir:7:30: MD001 expected ']' at column 14 in '{devices=[2,2<=[4]}'"
    )
    assert lines[-1].startswith("Found 4 findings (2 errors, 1 warning, 1 info) in 2 files")
    assert render("concise", ctx, findings=[]).startswith("All checks passed (checked 3 files)")


def test_full(ctx):
    text = render("full", ctx)
    assert "\x1b[" not in text  # color=False
    assert text.index("dumps/a b.mlir") < text.index("dumps/z.hlo")
    assert "3:3  MD101 error [mesh-mismatch] mesh 4x2" in text
    assert 'fix: sdy.mesh @mesh = <["batch"=2, "model"=4]>' in text
    assert "12:5  MD105 warning [uneven-shard]" in text
    assert "20:1  MD109 info [large-replicated]" in text
    assert text.rstrip().endswith("checked 3 files.")
    assert "1 finding in the baseline" in render("full", ctx, matched=1)


def _full_by_rich(findings) -> str:
    """`full` as rich draws its styled lines on a colourless console (what the writer's
    plain path must equal)."""
    from itertools import groupby

    from rich.console import Console
    from rich.text import Text

    from meshdiag.report.lint._summary import summary
    from meshdiag.report.lint.full import styled_lines

    buf = io.StringIO()
    console = Console(file=buf, soft_wrap=True, highlight=False, no_color=True)
    for path, group in groupby(findings, key=lambda f: f.path):
        for line in styled_lines(path, group):
            console.print(line)
        console.print()
    console.print(Text(summary(LintResult(list(findings), FILES))))
    return buf.getvalue()


_texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a.mlir", "b c.txt", "ü/ß.hlo"]), _texts, _texts | st.none()),
        max_size=6,
    )
)
def test_full_plain_text_is_what_rich_draws(rows):
    """Without colour the writer prints printable lines itself: byte for byte what rich
    draws for them, and anything else (tabs, control characters) still goes through rich."""
    findings = sorted(
        (
            F("MD105", "warning", path, i + 1, 1, msg, fix)
            for i, (path, msg, fix) in enumerate(rows)
        ),
        key=Finding.sort_key,
    )
    ctx = OutputContext(cwd="/", rules=RULES, version="0.1.0", color=False)
    assert render("full", ctx, findings) == _full_by_rich(findings)


def test_full_without_rich_draws_what_rich_draws(monkeypatch):
    """To a plain stream with no --color the writer prints what it prints with colour off:
    rich only where a line is not printable (the sample has one), the summary as it is."""
    for name in ("TTY_COMPATIBLE", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)
    auto = OutputContext(cwd="/", rules=RULES, version="0.1.0", color=None)
    off = OutputContext(cwd="/", rules=RULES, version="0.1.0", color=False)
    for findings in (FINDINGS, FINDINGS[:3], []):
        assert render("full", auto, findings) == render("full", off, findings)
    assert render("full", auto) == _full_by_rich(FINDINGS)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(sorted(RULES)),
            st.sampled_from(["error", "warning", "info"]),
            st.integers(0, 10**6),
            st.integers(0, 300),
            _texts,
            _texts | st.none(),
        ),
        max_size=6,
    ),
    st.sampled_from(["a.mlir", None]),
)
def test_plain_lines_are_the_styled_lines_text(rows, path):
    """The writer's colourless path makes printable lines' text directly: it must be the
    text of the styled lines it stands for, whatever the code, severity, line and column
    (rich drops control characters; the writer sends those lines through rich)."""
    from meshdiag.report.lint.full import plain_lines, styled_lines

    findings = [F(c, sev, path, line, col, msg, fix) for c, sev, line, col, msg, fix in rows]
    plain = plain_lines(path, findings)
    if "".join(plain).isprintable():
        assert plain == [t.plain for t in styled_lines(path, findings)]


def test_sarif_fields(ctx, tmp_path):
    doc = json.loads(render("sarif", ctx))
    assert doc["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    assert doc["version"] == "2.1.0"
    run = doc["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "meshdiag" and driver["version"] == "0.1.0"
    assert driver["informationUri"].startswith("https://")
    ids = [r["id"] for r in driver["rules"]]
    assert ids == sorted(RULES)
    for r in driver["rules"]:
        rule = RULES[r["id"]]
        assert r["name"] == rule.name
        for key in ("shortDescription", "fullDescription"):
            assert r[key]["text"]  # GitHub rejects empty required strings
        assert r["help"]["text"] and r["help"]["markdown"].startswith(f"# {rule.name}")
        level = {"error": "error", "warning": "warning", "info": "note"}[rule.severity]
        assert r["defaultConfiguration"]["level"] == level
    md101 = driver["rules"][ids.index("MD101")]
    assert "tt-mlir rejects 4x2." in md101["help"]["text"]
    assert "## Why is this bad?" in md101["help"]["markdown"]
    assert "```\nsdy.mesh" in md101["help"]["markdown"]

    results = run["results"]
    assert len(results) == 4
    for res, f in zip(results, FINDINGS, strict=True):
        assert res["ruleId"] == f.code
        assert driver["rules"][res["ruleIndex"]]["id"] == f.code
        assert res["level"] == {"error": "error", "warning": "warning", "info": "note"}[f.severity]
        assert res["message"]["text"].startswith(f.message)
        (loc,) = res["locations"]
        art = loc["physicalLocation"]["artifactLocation"]
        assert art["uriBaseId"] == "%SRCROOT%"
        assert not art["uri"].startswith("/") and "\\" not in art["uri"]
        region = loc["physicalLocation"]["region"]
        assert region == {"startLine": f.line, "startColumn": f.column}
        assert res["partialFingerprints"]["primaryLocationLineHash"].startswith(fingerprint(f))
    assert results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "dumps/a%20b.mlir"
    )
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"
    assert results[0]["message"]["text"].endswith('Fix: sdy.mesh @mesh = <["batch"=2, "model"=4]>')


def test_sarif_absolute_path_outside_cwd(ctx, tmp_path):
    outside = Finding("MD101", "mesh-mismatch", "error", "m", None, "/elsewhere/x.mlir", 1, 1)
    res = json.loads(render("sarif", ctx, findings=[outside]))["runs"][0]["results"][0]
    art = res["locations"][0]["physicalLocation"]["artifactLocation"]
    assert art == {"uri": "file:///elsewhere/x.mlir"}


def test_sarif_paths_made_relative(ctx, tmp_path):
    absolute = Finding(
        "MD101", "mesh-mismatch", "error", "m", None, str(tmp_path / "sub" / "x.mlir"), 2, 4
    )
    res = json.loads(render("sarif", ctx, findings=[absolute]))["runs"][0]["results"][0]
    art = res["locations"][0]["physicalLocation"]["artifactLocation"]
    assert art == {"uri": "sub/x.mlir", "uriBaseId": "%SRCROOT%"}


# ::error file=F,line=L,col=C,title=T::message — properties have no raw ':' ',' '%' CR LF,
# the message has no raw '%' CR LF.
_PROP = r"[^:,%\r\n]*(?:%(?:25|0D|0A|3A|2C)[^:,%\r\n]*)*"
_DATA = r"[^%\r\n]*(?:%(?:25|0D|0A)[^%\r\n]*)*"
WORKFLOW = re.compile(
    rf"^::(error|warning|notice) file=(?P<file>{_PROP}),line=(?P<line>\d+),col=(?P<col>\d+),"
    rf"title=(?P<title>{_PROP})::(?P<msg>{_DATA})$"
)


def unescape(s):
    return (
        s.replace("%0D", "\r")
        .replace("%0A", "\n")
        .replace("%3A", ":")
        .replace("%2C", ",")
        .replace("%25", "%")
    )


def test_github_workflow_commands(ctx):
    lines = render("github", ctx).splitlines()
    assert len(lines) == 4
    kinds = []
    for line, f in zip(lines, FINDINGS, strict=True):
        m = WORKFLOW.match(line)
        assert m, line
        kinds.append(m.group(1))
        assert unescape(m.group("file")) == f.path
        assert (int(m.group("line")), int(m.group("col"))) == (f.line, f.column)
        assert unescape(m.group("title")) == f"{f.code} {f.name}"
        assert unescape(m.group("msg")).startswith(f.message)
    assert kinds == ["error", "error", "warning", "notice"]
    # the MD101 message has '%', ':', ',' and a newline; only % and newline are escaped in data
    assert "100%25 wrong, axes a:b,c%0Asecond line%0Afix: sdy.mesh" in lines[0]


def test_github_escaping_rules():
    assert escape_data("50% a:b,c\r\nx") == "50%25 a:b,c%0D%0Ax"
    assert escape_property("50% a:b,c\r\nx") == "50%25 a%3Ab%2Cc%0D%0Ax"
    assert escape_property("C:\\dumps\\a,b.mlir") == "C%3A\\dumps\\a%2Cb.mlir"


def test_github_file_property_escaped(ctx):
    f = Finding("MD105", "uneven-shard", "warning", "m", None, "d/a,b:c.mlir", 1, 2)
    (line,) = render("github", ctx, findings=[f]).splitlines()
    assert line == "::warning file=d/a%2Cb%3Ac.mlir,line=1,col=2,title=MD105 uneven-shard::m"


def test_junit_parses(ctx):
    root = ET.fromstring(render("junit", ctx).encode())
    assert root.tag == "testsuites"
    assert root.get("tests") == "3" and root.get("failures") == "2"
    (suite,) = root
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert set(cases) == set(FILES)
    assert cases["dumps/clean.mlir"].find("failure") is None
    fails = cases["dumps/a b.mlir"].findall("failure")
    assert [x.get("type") for x in fails] == ["MD101 mesh-mismatch", "MD001 parse-error"]
    assert fails[1].get("message") == "MD001 expected ']' at column 14 in '{devices=[2,2<=[4]}'"
    assert "\nsecond line" in fails[0].text and "fix: sdy.mesh" in fails[0].text
    z = cases["dumps/z.hlo"].findall("failure")
    assert '<empty> & "stale"' in z[0].get("message")  # escaped in the file, intact parsed
    assert "\\x01" in z[1].get("message")  # a control char XML cannot hold, made visible


def test_junit_clean_run_has_a_passing_case(ctx):
    root = ET.fromstring(render("junit", ctx, findings=[], files=[]).encode())
    cases = list(root.iter("testcase"))
    assert len(cases) == 1 and cases[0].find("failure") is None and root.get("failures") == "0"


def test_gitlab_code_quality(ctx):
    issues = json.loads(render("gitlab", ctx))
    assert len(issues) == 4
    sev = {"MD001": "major", "MD101": "major", "MD105": "minor", "MD109": "info"}
    for issue, f in zip(issues, FINDINGS, strict=True):
        assert issue["check_name"] == f.code
        assert f.message in issue["description"]
        assert issue["severity"] == sev[f.code]
        assert issue["severity"] in ("info", "minor", "major", "critical", "blocker")
        assert issue["location"] == {"path": f.path, "lines": {"begin": f.line}}
    assert len({i["fingerprint"] for i in issues}) == 4
    dup = [FINDINGS[0], FINDINGS[0]]  # identical findings still get distinct fingerprints
    assert len({i["fingerprint"] for i in json.loads(render("gitlab", ctx, findings=dup))}) == 2


def test_statistics(ctx):
    from meshdiag.report.lint import statistics

    more = [*FINDINGS, FINDINGS[2]]
    buf = io.StringIO()
    statistics.write(LintResult(sorted(more, key=Finding.sort_key), FILES), buf, ctx)
    rows = buf.getvalue().splitlines()
    assert rows[:4] == [
        "2\tMD105\tuneven-shard",
        "1\tMD001\tparse-error",
        "1\tMD101\tmesh-mismatch",
        "1\tMD109\tlarge-replicated",
    ]
    buf = io.StringIO()
    statistics.write(LintResult(more, FILES), buf, ctx, as_json=True)
    assert json.loads(buf.getvalue())[0] == {"code": "MD105", "name": "uneven-shard", "count": 2}
