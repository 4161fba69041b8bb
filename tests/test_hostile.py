"""Hostile dumps: a directory of broken files never costs the good ones, and stays bounded.

`inspect` and `lint` run as subprocesses under a 4 GiB address-space limit over 60 mutations
of the real fixtures (truncation, byte flips, stray brackets, invalid UTF-8, duplicated huge
lines) plus an empty and a binary file, and must account for every file. A very long line is
streamed with bounded memory. Inputs are only ever read: nothing from a dump is evaluated, and
commands write nothing but the files they are asked to write.
"""

from __future__ import annotations

import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
MESHDIAG = [sys.executable, "-m", "meshdiag"]
AS_LIMIT = 4 << 30


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


def run(args, *, cwd=None, env=None, timeout=60, limit=True) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*MESHDIAG, *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        timeout=timeout,
        preexec_fn=_limit_memory if limit else None,
    )


def _sources() -> list[Path]:
    files = [
        p
        for p in sorted(FIXTURES.rglob("*"))
        if p.is_file() and p.suffix in (".mlir", ".txt") and p.stat().st_size < 400_000
    ]
    assert len(files) >= 10
    return files


def _mutate(data: bytes, rng: random.Random, kind: str) -> bytes:
    if kind == "truncate":
        return data[: rng.randrange(len(data) // 3, len(data))]
    if kind == "flip":
        b = bytearray(data)
        for _ in range(rng.randint(1, 40)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        return bytes(b)
    if kind == "brackets":
        b = bytearray(data)
        # aim at the lines that matter: right after 'sharding' words
        hits = [m.end() for m in re.finditer(rb"sharding", data)] or [0]
        for _ in range(rng.randint(1, 12)):
            i = min(len(b), rng.choice(hits) + rng.randrange(0, 60))
            b[i:i] = rng.choice([b"{", b"}", b"[", b"]", b"<", b">", b'"', b"'", b"{{{{{{", b"\\"])
        return bytes(b)
    if kind == "utf8":
        b = bytearray(data)
        for _ in range(rng.randint(1, 10)):
            i = rng.randrange(len(b))
            b[i:i] = rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xe2\x82", b"\x80\x80"])
        return bytes(b)
    if kind == "hugeline":
        lines = data.split(b"\n")
        cands = [i for i, ln in enumerate(lines) if b"sharding" in ln] or [0]
        i = rng.choice(cands)
        lines[i] = lines[i] * rng.randint(200, 2000)  # one line, hundreds of KB
        return b"\n".join(lines)
    raise AssertionError(kind)


KINDS = ("truncate", "flip", "brackets", "utf8", "hugeline")


@pytest.fixture(scope="module")
def hostile_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("hostile")
    rng = random.Random(7)
    sources = _sources()
    for i in range(60):
        src = sources[i % len(sources)]
        kind = KINDS[i % len(KINDS)]
        data = _mutate(src.read_bytes(), rng, kind)
        (d / f"m{i:02d}_{kind}{src.suffix}").write_bytes(data)
    (d / "empty.mlir").write_bytes(b"")
    (d / "junk.mlir").write_bytes(bytes(rng.randrange(256) for _ in range(20_000)) + b"\0")
    return d


def _accounted(doc_files: list[dict], findings: list[dict], expected: set[str]) -> None:
    by_path = {f["path"]: f for f in doc_files}
    assert set(by_path) == expected, "every file appears exactly once"
    assert len(doc_files) == len(expected)
    with_findings = {f["path"] for f in findings if f["code"] == "MD001"}
    for path, f in by_path.items():
        # a text file with no IR in it at all legitimately has neither
        no_ir = not re.search(rb"module|sharding|sdy\.mesh", Path(path).read_bytes())
        assert f["modules"] or path in with_findings or no_ir, f"{path} is not accounted for"


def test_inspect_accounts_for_every_hostile_file(hostile_dir: Path) -> None:
    start = time.monotonic()
    proc = run(["inspect", str(hostile_dir), "--format", "json", "--layouts"])
    elapsed = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert b"Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    expected = {str(p) for p in hostile_dir.iterdir()}
    _accounted(doc["files"], doc["findings"], expected)
    notes = {f["path"]: f for f in doc["findings"] if f["severity"] == "info"}
    assert "binary" in notes[str(hostile_dir / "junk.mlir")]["message"]
    assert "empty" in notes[str(hostile_dir / "empty.mlir")]["message"]
    # broken files are reported with their locations, and the good parts still come through
    errors = [f for f in doc["findings"] if f["code"] == "MD001" and f["severity"] == "error"]
    assert errors and all(f["line"] is None or f["line"] >= 1 for f in errors)
    assert sum(len(m["values"]) for f in doc["files"] for m in f["modules"]) > 100
    assert elapsed < 45, f"inspect took {elapsed:.1f}s"


def test_lint_accounts_for_every_hostile_file(hostile_dir: Path) -> None:
    start = time.monotonic()
    proc = run(
        ["lint", str(hostile_dir), "--isolated", "--format", "json", "--select", "ALL", "-j", "1"]
    )
    elapsed = time.monotonic() - start
    assert proc.returncode in (0, 1), proc.stderr.decode()[-2000:]
    assert b"Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    paths = {f["path"] for f in doc["findings"]}
    # lint reports findings only; each broken file has its MD001, the two skipped files a note
    ins = run(["inspect", str(hostile_dir), "--format", "json"])
    broken = {
        f["path"]
        for f in json.loads(ins.stdout)["findings"]
        if f["code"] == "MD001" and f["severity"] == "error"
    }
    assert broken
    norm = {os.path.abspath(p) for p in paths}
    assert {os.path.abspath(p) for p in broken} <= norm
    for name in ("empty.mlir", "junk.mlir"):
        assert str(hostile_dir / name) in norm
    assert elapsed < 45, f"lint took {elapsed:.1f}s"


def test_one_bad_file_does_not_lose_the_good_ones(tmp_path: Path) -> None:
    good = FIXTURES / "seed" / "distorted_mesh.mlir"
    shutil.copy(good, tmp_path / "a_good.mlir")
    (tmp_path / "b_bad.mlir").write_bytes(b"module {\n  %0 = f32[8,\xc2\xb2] sharding={{{{\n")
    shutil.copy(good, tmp_path / "c_good.mlir")
    proc = run(["inspect", str(tmp_path), "--format", "json"])
    assert proc.returncode == 0, proc.stderr.decode()
    files = {Path(f["path"]).name: f for f in json.loads(proc.stdout)["files"]}
    assert files["a_good.mlir"]["modules"] == files["c_good.mlir"]["modules"]
    assert files["a_good.mlir"]["modules"][0]["values"]


# -- long lines are streamed -----------------------------------------------------------------


def _write_long_line_dump(path: Path, line_bytes: int) -> None:
    """A dump whose second line is `line_bytes` long, written lazily in 1 MiB pieces."""
    head = b'module @m {\n  sdy.mesh @mesh = <["x"=2]>\n  %0 = "op"() {sdy.sharding = "'
    piece = b"{devices=[2]0,1} " * (1 << 16)
    with open(path, "wb") as f:
        f.write(head)
        written = 0
        while written < line_bytes:
            chunk = piece[: line_bytes - written]
            f.write(chunk)
            written += len(chunk)
        f.write(b'"} : () -> tensor<8xf32>\n')
        f.write(
            b'  func.func @g(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>})\n}\n'
        )


def _peak_rss_mb(proc_stderr: bytes) -> float:
    m = re.search(rb"PEAK_RSS_KB=(\d+)", proc_stderr)
    assert m, proc_stderr[-500:]
    return int(m.group(1)) / 1024


def test_a_long_line_is_streamed_with_bounded_memory(tmp_path: Path) -> None:
    # a 1 GB line when the disk has room for it comfortably; else 100 MB with a lowered limit
    free = shutil.disk_usage(tmp_path).free
    size = (1 << 30) if free > (20 << 30) and os.environ.get("MESHDIAG_BIG_LINE") else 100 << 20
    path = tmp_path / "long.mlir"
    _write_long_line_dump(path, size)
    code = (
        "import sys\n"
        "from meshdiag.ir.scan import scan_path\n"
        f"r = scan_path({str(path)!r})\n"
        "vals = [v.name for m in r.modules for v in m.values]\n"
        "print([f.message for f in r.findings], vals)\n"
        # VmHWM, not ru_maxrss: Linux carries the forking pytest process's peak into the
        # child's ru_maxrss across exec, which would measure pytest, not the scan
        "peak = next(int(ln.split()[1]) for ln in open('/proc/self/status')"
        " if ln.startswith('VmHWM:'))\n"
        "print(f'PEAK_RSS_KB={peak}', file=sys.stderr)\n"
    )
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "MESHDIAG_MAX_ANNOTATION_CHARS": str(1 << 20)},
        capture_output=True,
        timeout=120,
        preexec_fn=_limit_memory,
    )
    elapsed = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    out = proc.stdout.decode()
    assert "line 3 is longer than" in out and "skipped" in out  # reported, with its line
    assert "%arg0" in out  # the line after it is still read
    # memory: far below the line's size (interpreter + numpy + a few 1 MiB blocks)
    assert _peak_rss_mb(proc.stderr) < 200, _peak_rss_mb(proc.stderr)
    assert elapsed < 60


# -- inputs are only read ----------------------------------------------------------------------


def test_no_eval_exec_pickle_or_unsafe_yaml_on_inputs() -> None:
    # everything that turns bytes into running code or arbitrary objects; (pickle.dumps of
    # meshdiag's own functions, to fan work out to processes, reads no input and is fine)
    pattern = re.compile(
        r"(?<![\w.])(eval|exec|compile|__import__)\s*\(|\bliteral_eval\b|"
        r"\b(pickle|cPickle|dill|marshal|jsonpickle)\.(Unpickler|loads?)\b|\bshelve\.open\b|"
        r"\byaml\.(unsafe_|full_)?load(_all)?\b|\bnp\.load\b|allow_pickle\s*=\s*True|"
        r"\bos\.system\s*\("
    )
    hits = []
    for p in sorted((ROOT / "src" / "meshdiag").rglob("*.py")):
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if pattern.search(code):
                hits.append(f"{p.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not hits, "\n".join(hits)
    # the pattern does catch what it is for
    for bad in ("eval(text)", "pickle.loads(b)", "yaml.load(f)", "exec(code)", "np.load(p)"):
        assert pattern.search(bad), bad
    assert not pattern.search("re.compile(r'x')") and not pattern.search("pickle.dumps(fn)")


def test_config_files_are_read_with_tomllib_or_json_only() -> None:
    readers = set()
    for p in sorted((ROOT / "src" / "meshdiag").rglob("*.py")):
        text = p.read_text(encoding="utf-8")
        readers |= set(re.findall(r"\b(tomllib|tomli|toml|json|yaml|configparser)\.\w*load", text))
    assert readers and readers <= {"tomllib", "json"}, readers


def _snapshot(d: Path) -> set[str]:
    return {str(p.relative_to(d)) for p in d.rglob("*")}


def test_commands_write_only_the_requested_files(tmp_path: Path) -> None:
    dump = FIXTURES / "seed" / "distorted_mesh.mlir"
    cmds = [
        (["layout", "{devices=[1,4,2]<=[8] last_tile_dim_replicate}", "-s", "32,32"], set()),
        (["layout", "{devices=[2,2]<=[4]}", "-s", "8,8", "--svg", "pic.svg"], {"pic.svg"}),
        (["layout", "P(None,'cols')", "-s", "8,8", "-m", "t3k", "--html", "p.html"], {"p.html"}),
        (["inspect", str(dump), "--format", "json", "--layouts"], set()),
        (["simulate-copy", "-m", "1x8", "-s", "1,7,32,32", "--mapper", "shard:1"], set()),
        (["convert", "{devices=[2,4]<=[8]}", "--to", "sdy"], set()),
        (["rule", "MD101"], set()),
        (["lint", str(dump), "--isolated", "-j", "1"], set()),
        (
            ["lint", str(dump), "--isolated", "-j", "1", "-o", "out.sarif", "-f", "sarif"],
            {"out.sarif"},
        ),
    ]
    for args, outputs in cmds:
        before = _snapshot(tmp_path)
        proc = run(args, cwd=tmp_path, limit=False)
        assert proc.returncode in (0, 1), (args, proc.stderr.decode())
        new = _snapshot(tmp_path) - before
        assert new == outputs, (args, new)
        for name in outputs:
            assert (tmp_path / name).stat().st_size > 0
    # the inputs are untouched
    assert dump.read_bytes() == (FIXTURES / "seed" / "distorted_mesh.mlir").read_bytes()
