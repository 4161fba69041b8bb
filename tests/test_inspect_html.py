"""`meshdiag inspect PATH --html FILE` (issue 13): one self-contained page per dump.

The page is read back with the stdlib's `html.parser` and held against the other outputs
of the same paths: its collectives are `meshdiag comms --format json`'s, its findings are
`inspect --format json`'s, one picture per distinct layout. Then headless Chromium draws
it and the screenshot must show the pictures' colours.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import zlib
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

from meshdiag.pipeline.dump_summary import DumpSummary
from meshdiag.report.dump_html import page

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "fixtures"
DUMP = FIX / "xla_dump" / "mlp2"  # an every-pass XLA dump: 4 layouts, 8 all-reduces
#: named files: findings (a distorted mesh) and collectives (a shard_map program)
FILES = [
    FIX / "seed" / "distorted_mesh.mlir",
    FIX / "comms" / "xla" / "shard_map.after_optimizations.txt",
]
MESH = ["--mesh", "batch=2,model=4"]
SECTIONS = ["meshes", "layouts", "pictures", "collectives", "findings"]


def meshdiag(*args, preexec=None, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "meshdiag", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=preexec,
    )


class Page(HTMLParser):
    """What a test needs from the page: sections, pictures, table rows, findings."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: Counter = Counter()
        self.sections: list[str] = []
        self.header = False
        self.svgs = 0
        self.figures = 0
        self.layouts = 0  # rows of the distinct-layouts table
        self.collectives: list[dict] = []
        self.findings: list[dict] = []
        self.text: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self._row: dict | None = None
        self._cell: list[str] | None = None
        self._finding: dict | None = None
        self._span: str | None = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] += 1
        self.attrs.extend(attrs)
        cls = (a.get("class") or "").split()
        if tag == "header":
            self.header = True
        elif tag == "section":
            self.sections.append(a["id"])
        elif tag == "svg":
            self.svgs += 1
        elif tag == "figure":
            self.figures += 1
        elif tag == "tr" and "layout" in cls:
            self.layouts += 1
        elif tag == "tr" and "collective" in cls:
            self._row = {"line": int(a["data-line"]), "bytes": int(a["data-bytes"]), "cells": []}
        elif tag == "td" and self._row is not None:
            self._cell = []
        elif tag == "li" and "finding" in cls:
            self._finding = {"code": a["data-code"], "count": int(a["data-count"])}
        elif tag == "span" and self._finding is not None:
            self._span = a.get("class")
            self._finding[self._span] = ""

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self._row["cells"].append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.collectives.append(self._row)
            self._row = None
        elif tag == "li" and self._finding is not None:
            self.findings.append(self._finding)
            self._finding = None
        elif tag == "span":
            self._span = None

    def handle_data(self, data):
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)
        if self._finding is not None and self._span is not None:
            self._finding[self._span] += data


def _html(tmp_path, *args) -> tuple[subprocess.CompletedProcess, str, Page]:
    out = tmp_path / "page.html"
    r = meshdiag("inspect", *args, "--html", out, "-q")
    assert r.returncode == 0, r.stderr
    assert f"wrote {out}" in r.stderr
    text = out.read_text(encoding="utf-8")
    return r, text, Page(text)


def _comms_rows(*args) -> list[tuple]:
    """(kind, name, line, bytes per device, shapes) of `meshdiag comms --format json`,
    largest bytes first (file order among equals)."""
    r = meshdiag("comms", *args, "-f", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    rows = [
        (c["kind"], c["name"], c["line"], c["bytes_per_device"] or 0, ", ".join(c["shapes"]))
        for f in doc["files"]
        for m in f["modules"]
        for c in m["collectives"]
    ]
    order = sorted(range(len(rows)), key=lambda k: (-rows[k][3], k))
    return [rows[k] for k in order]


def _page_rows(p: Page) -> list[tuple]:
    # cells: kind, name, where, shape, groups, axes, bytes per device
    return [
        (r["cells"][0], r["cells"][1], r["line"], r["bytes"], r["cells"][3]) for r in p.collectives
    ]


def _self_contained(text: str, p: Page) -> None:
    assert p.tags["script"] == 0 and p.tags["link"] == 0 and p.tags["img"] == 0
    assert p.tags["iframe"] == 0 and p.tags["object"] == 0
    for name, value in p.attrs:  # nothing to fetch: links only to the page's own anchors
        if name in ("src", "href"):
            assert value.startswith("#"), (name, value)
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in text


def test_dump_directory_page(tmp_path):
    r, text, p = _html(tmp_path, DUMP)
    assert p.header and p.sections == SECTIONS
    _self_contained(text, p)
    body = "".join(p.text)
    assert str(DUMP) in body
    assert "10 files read, 1 skipped" in body and "10 modules" in body
    assert "device ids: logical partition ids" in body
    # the mesh as a table of device ids
    assert "@mesh = batch=2,model=4" in body
    assert p.tags["table"] == 3  # the mesh, the layouts, the collectives
    # one figure and one drawing per distinct layout (every one has a global shape here)
    summary_layouts = re.search(r"shardings: (\d+) distinct", r.stdout)
    assert summary_layouts is not None
    n = int(summary_layouts.group(1))
    assert n == 4 and p.layouts == n and p.figures == n and p.svgs == n
    # each drawing has its own hatch pattern id
    ids = re.findall(r'<pattern id="([^"]+)"', text)
    assert len(ids) == len(set(ids)) == n
    assert _page_rows(p) == _comms_rows(DUMP)
    assert len(p.collectives) == 8
    assert p.findings == [] and "no findings" in body


def test_named_files_page_matches_comms_and_inspect_json(tmp_path):
    r, text, p = _html(tmp_path, *FILES, *MESH, "-f", "json")
    # the JSON on stdout is what it is without --html
    plain = meshdiag("inspect", *FILES, *MESH, "-f", "json", "-q")
    assert plain.returncode == 0 and r.stdout == plain.stdout
    assert p.sections == SECTIONS
    _self_contained(text, p)
    rows = _comms_rows(*FILES, *MESH)
    assert rows and _page_rows(p) == rows
    # the findings are inspect's: each distinct one once, with how often it fired
    want = Counter((f["code"], f["message"]) for f in json.loads(r.stdout)["findings"])
    assert want
    got = Counter()
    for f in p.findings:
        got[(f["code"], f["message"])] += f["count"]
    assert got == want
    # grouped by code: one heading per code, in code order
    codes = re.findall(r'<h3 class="code" id="code-([^"]+)"', text)
    assert codes == sorted({c for c, _ in want})
    # the text output too stays as it was
    t1 = meshdiag("inspect", *FILES, *MESH, "-q")
    t2 = meshdiag("inspect", *FILES, *MESH, "-q", "--html", tmp_path / "t.html")
    assert t1.returncode == t2.returncode == 0 and t1.stdout == t2.stdout


def test_no_collectives_and_empty_summary():
    text = page(DumpSummary(), [], roots=["nothing/here"])
    p = Page(text)
    assert p.sections == SECTIONS and p.svgs == 0 and p.collectives == []
    body = "".join(p.text)
    assert "no collectives" in body and "no findings" in body and "no sharded values" in body


HOSTILE = """module @"<script>alert(2)</script>" {
  sdy.mesh @"<script>m</script>" = <["<script>x"=2, "y"=4]>
  func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@"<script>m</script>", \
[{"<script>x"}, {}]>}) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@"<script>m</script>", \
[{"<img src=x onerror=alert(3)>"}, {}]>}) {
    return %arg0 : tensor<8x8xf32>
  }
}
"""


def test_strings_from_the_dump_are_escaped(tmp_path):
    dump = tmp_path / "dump"
    dump.mkdir()
    (dump / "<script>alert(1)<!--.mlir").write_text(HOSTILE)
    _, text, p = _html(tmp_path, dump)
    assert p.tags["script"] == 0 and p.tags["img"] == 0
    assert "<script" not in text and "<img" not in text
    body = "".join(p.text)
    # shown, as text: the file name, the mesh, the spelling, the finding about the bad axis
    assert "<script>alert(1)<!--.mlir" in body
    assert "@<script>m</script>" in body
    assert '{"<script>x"}' in body
    assert [f["code"] for f in p.findings] == ["MD108"]
    assert "<img src=x onerror=alert(3)>" in p.findings[0]["message"]


def _no_bigger_than(n: int):
    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail (EFBIG)
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (n, n))

    return limit


def test_a_failed_write_keeps_the_old_page(tmp_path):
    target = tmp_path / "old.html"
    target.write_text("old page")
    r = meshdiag("inspect", DUMP, "-q", "-j", "1", "--html", target, preexec=_no_bigger_than(4096))
    assert r.returncode == 2, r.stderr
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "old.html" in err[0] and "Traceback" not in r.stderr
    assert target.read_text() == "old page"
    assert sorted(os.listdir(tmp_path)) == ["old.html"]  # no temporary file left


def test_stdin_is_refused(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "meshdiag", "inspect", "-", "--html", str(tmp_path / "p.html")],
        input=(FIX / "seed" / "distorted_mesh.mlir").read_text(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "--html" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "p.html").exists()


# -- the page in a browser ---------------------------------------------------------------


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail(
        "headless Chromium is needed for the screenshot test: "
        "apt-get install -y --no-install-recommends chromium"
    )


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB(A) bytes) of an 8-bit non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, []
    width = height = bpp = 0
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color in (2, 6) and interlace == 0
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat.append(body)
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        cur = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                cur[i] = (cur[i] + cur[i - bpp]) & 255
        elif f == 2:
            cur = bytearray((a + b) & 255 for a, b in zip(cur, prev, strict=True))
        elif f == 3:
            for i in range(stride):
                left = cur[i - bpp] if i >= bpp else 0
                cur[i] = (cur[i] + ((left + prev[i]) >> 1)) & 255
        elif f == 4:
            for i in range(stride):
                a = cur[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                cur[i] = (cur[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        else:
            assert f == 0, f
        rows.append(bytes(cur))
        prev = cur
    return width, height, [bytes(r) if bpp == 3 else _rgb(r) for r in rows]


def _rgb(row: bytes) -> bytes:
    return b"".join(row[i : i + 3] for i in range(0, len(row), 4))


def test_screenshot_in_headless_chromium(tmp_path):
    _, text, p = _html(tmp_path, DUMP)
    shot = tmp_path / "page.png"
    r = subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={shot}",
            "--window-size=1280,2000",
            (tmp_path / "page.html").as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 0 and shot.exists(), r.stderr
    width, height, rows = png_pixels(shot.read_bytes())
    assert (width, height) == (1280, 2000)
    colors: Counter = Counter()
    for row in rows:
        colors.update(row[i : i + 3] for i in range(0, len(row), 3))
    white = colors[b"\xff\xff\xff"]
    assert white < 0.97 * width * height  # not a blank page
    assert len(colors) > 50  # text, tables, drawings
    # the first pictures' tile colours are on screen: the SVG was drawn
    fills = re.findall(r'<rect class="tile [^"]*"[^>]*fill="#([0-9a-f]{6})"', text)
    assert fills
    drawn = {bytes.fromhex(f) for f in fills[:4]}
    for color in drawn:
        assert colors[color] > 500, color.hex()
