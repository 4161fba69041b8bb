"""A big MLIR file read in parts by several workers (`ir.parts`): the parts are cut only
where the scan carries nothing across, and reading them gives what reading the whole file
gives — the modules, the findings, and `inspect`'s text and JSON output byte for byte."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshdiag.checks.registry import module_checks
from meshdiag.ir import parts as P
from meshdiag.ir.scan import scan_path
from meshdiag.memo import RunMemos
from meshdiag.pipeline.inspect import joined_findings, scan_checked, scan_checked_part

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(ROOT.glob("fixtures/**/*.mlir")) + [ROOT / "tests/data/trace_passes.mlir"]
#: the sources without a `// -----` line: put together with nothing between them, a file
#: of modules with no section anywhere (as `cat *.mlir` makes)
BARE = [i for i, p in enumerate(SOURCES) if b"// -----" not in p.read_bytes()]
#: what goes between two files of the corpus: a plain split, a pass dump's section header,
#: nothing (no place to cut), a line that is neither (no place to cut either)
JOINERS = [
    "// -----\n",
    "// -----// IR Dump After Canonicalizer (canonicalize) ('builtin.module' operation: @m)"
    " //----- //\n",
    "",
    "// ----- not a split\n",
]


def corpus(order: list[int], joiners: list[int]) -> str:
    texts = [SOURCES[i % len(SOURCES)].read_text() for i in order]
    out = texts[0]
    for k, t in enumerate(texts[1:]):
        out += JOINERS[joiners[k % len(joiners)] % len(JOINERS)] + t
    return out


@pytest.fixture
def small_parts(monkeypatch):
    """Any file is cut, in parts of at least `size` bytes (the test's `part_bytes`)."""
    monkeypatch.setattr(P, "SPLIT_BYTES", 1)

    def size(n: int) -> None:
        monkeypatch.setattr(P, "PART_BYTES", n)

    return size


def every_source_twice(tmp_path: Path) -> tuple[Path, bytes]:
    """The corpus of every source twice, with every joiner, as a file: its path and bytes."""
    path = tmp_path / "big.mlir"
    path.write_text(corpus(list(range(len(SOURCES))) * 2, [0, 1, 2, 3]))
    return path, path.read_bytes()


def test_parts_are_whole_and_start_where_the_scan_carries_nothing(tmp_path, small_parts):
    small_parts(2000)
    path, data = every_source_twice(tmp_path)
    parts = P.split_file(str(path), len(data), 8)
    assert parts is not None and len(parts) > 2
    assert parts[0].start == 0 and parts[-1].stop == len(data)
    for a, b in zip(parts, parts[1:], strict=False):
        assert a.stop == b.start  # contiguous
    for k, p in enumerate(parts):
        assert (p.index, p.count) == (k, len(parts))
        assert p.line == data.count(b"\n", 0, p.start) + 1
        if k:
            assert data[: p.start].endswith(b"\n}\n")
            mark, opening = data[p.start :].split(b"\n", 2)[:2]
            assert mark.startswith(b"// -----") and not mark.startswith(b"// ----- not")
            assert opening.startswith(b"module")


@settings(max_examples=40, deadline=None)
@given(
    order=st.lists(st.integers(0, len(SOURCES) - 1), min_size=2, max_size=12),
    joiners=st.lists(st.integers(0, len(JOINERS) - 1), min_size=1, max_size=6),
    part_bytes=st.integers(1, 40_000),
    jobs=st.integers(2, 8),
)
def test_parts_read_as_the_whole_file(tmp_path_factory, order, joiners, part_bytes, jobs):
    """Modules and findings (MD001s of broken lines, module checks) of the parts, put
    together, are the whole file's."""
    path = tmp_path_factory.mktemp("parts") / "big.mlir"
    path.write_text(corpus(order, joiners))
    size = path.stat().st_size
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(P, "SPLIT_BYTES", 1)
        mp.setattr(P, "PART_BYTES", part_bytes)
        parts = P.split_file(str(path), size, jobs)
    whole: list = []
    scan_path(str(path), on_module=whole.append)
    checks = module_checks()
    _, _, findings = scan_checked(str(path), None, None, "xla", checks, None, RunMemos())
    if parts is None:  # no place to cut: read whole
        return
    read: list = []
    found = []
    memos = RunMemos()  # one worker may read several parts with its memos
    for p in parts:
        n, scanned, checked = scan_checked_part(p, None, None, "xla", checks, read.append, memos)
        found.append((scanned, checked))
    assert read == whole
    assert joined_findings(found) == findings


def test_no_cut_where_the_scan_carries_something(tmp_path, small_parts):
    """Diagnostics after a module attach to it; a `// -----` line that is not a split sets
    no section; a split before anything but a module: none of these is a place to cut."""
    small_parts(1)
    seed = (ROOT / "fixtures/seed/distorted_mesh.mlir").read_text()
    assert "}\n\n\nerror: Mesh is not valid\n// -----// IR Dump" in seed  # after a module
    mixed = (  # unsafe marks, then the one safe one, then enough bytes for a target before it
        "module @a {\n}\nerror: bad\n// -----\nmodule @c {\n}\n"
        "// -----\n#loc = loc(unknown)\nmodule @d {\n}\n// ----- no\nmodule @e {\n}\n"
        "// -----\nmodule @b {\n" + "  // padding\n" * 20 + "}\n"
    )
    cases = {
        "seed.mlir": (seed * 3, []),  # diagnostics or a blank line before every header
        "not_a_split.mlir": (corpus([0, 1, 2], [3]), []),
        "one_module.mlir": (SOURCES[0].read_text(), []),
        "mixed.mlir": (mixed, [mixed.index("// -----\nmodule @b")]),  # the one safe place
    }
    for name, (text, where) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        parts = P.split_file(str(path), path.stat().st_size, 4)
        assert ([p.start for p in parts[1:]] if parts else []) == where, name


def test_marks_that_are_no_place_to_cut_cost_little(tmp_path, small_parts, monkeypatch):
    """A file of nothing but `}` / `// -----` pairs followed by no module: each such mark
    costs a read, and a cut looks at a bounded number of them before it gives up."""
    small_parts(1)
    path = tmp_path / "marks.mlir"
    unit = "}\n// -----\nx\n"
    path.write_text("module {\n" + unit * 100_000 + "}\n// -----\nmodule {\n}\n")
    looked = []
    opens = P._opens
    monkeypatch.setattr(P, "_opens", lambda fd, offset: looked.append(offset) or opens(fd, offset))
    parts = P.split_file(str(path), path.stat().st_size, 8)
    assert len(looked) <= P.TRIES * 16  # 15 cuts sought, 100,000 marks
    assert parts is None or len(parts) == 2  # the one real cut, at the end


@pytest.mark.parametrize("chunk", [11, 64, 1000])
def test_cuts_do_not_depend_on_the_chunk_size(tmp_path, small_parts, monkeypatch, chunk):
    """The marks are looked for and the lines counted a chunk at a time: a mark across two
    chunks is found, none twice, and each part's line number is its first line's."""
    small_parts(500)
    path, data = every_source_twice(tmp_path)
    want = P.split_file(str(path), len(data), 8)
    assert want is not None and len(want) > 4
    for part in want:
        assert part.line == data.count(b"\n", 0, part.start) + 1
        assert part.start == 0 or data[part.start - 1 : part.start + 8] == b"\n// -----"
    monkeypatch.setattr(P, "_CHUNK", chunk)
    monkeypatch.setattr(P, "_FIRST_CHUNK", max(chunk // 4, 1))  # (doubled up to _CHUNK)
    monkeypatch.setattr(P, "_COUNT_CHUNK", chunk)
    assert P.split_file(str(path), len(data), 8) == want
    # the same with the twin's count, and without os.preadv
    monkeypatch.setattr(P, "count_lines", P.count_lines_py)
    assert P.split_file(str(path), len(data), 8) == want
    monkeypatch.delattr(os, "preadv", raising=False)
    assert P.split_file(str(path), len(data), 8) == want


@pytest.mark.parametrize("first", [1, 3, 7, 64])
def test_a_word_is_found_wherever_it_is_whatever_the_chunks(tmp_path, monkeypatch, first):
    """`_holds` reads a small first chunk and doubles it: a word across any two chunks,
    at the start or at the end, is found; one cut short of a byte is not."""
    monkeypatch.setattr(P, "_FIRST_CHUNK", first)
    monkeypatch.setattr(P, "_CHUNK", 4 * first)
    word = b"// -----"
    path = tmp_path / "w.mlir"
    for at in range(0, 80):
        data = b"x" * at + word + b"y" * (80 - at)
        path.write_bytes(data)
        fd = os.open(path, os.O_RDONLY)
        try:
            assert P._holds(fd, len(data), word), at
            assert not P._holds(fd, len(data), word + b"z"), at
            cut = data[: at + len(word) - 1]
            path.write_bytes(cut)
            assert not P._holds(fd, len(cut), word), at
        finally:
            os.close(fd)


def test_small_compressed_and_stdin_are_read_whole(tmp_path):
    path = tmp_path / "a.mlir"
    path.write_text(corpus([0, 1, 2, 3], [0]))
    assert P.split_file(str(path), path.stat().st_size, 4) is None  # below SPLIT_BYTES
    assert P.split_file("-", 1 << 40, 4) is None
    assert P.split_file(str(path) + ".gz", 1 << 40, 4) is None
    assert P.split_file(str(path), 1 << 40, 1) is None  # one worker


def test_a_binary_file_is_read_whole(tmp_path, small_parts):
    """A file the scan skips as binary (a NUL in its first bytes) is not cut: it is one
    skipped file, whatever it holds after."""
    small_parts(1)
    path = tmp_path / "a.mlir"
    path.write_bytes(b"\0" + corpus([0, 1, 2, 3], [0]).encode())
    assert P.split_file(str(path), path.stat().st_size, 4) is None
    path.write_bytes(corpus([0, 1, 2, 3], [0]).encode())
    assert P.split_file(str(path), path.stat().st_size, 4) is not None


#: a `meshdiag` command with every file cut in parts of 4 KB; says on stderr how many parts
INSPECT_IN_PARTS = r"""
import sys
from meshdiag.ir import parts as P
P.SPLIT_BYTES = 1
P.PART_BYTES = 4096
cut = P.file_parts
def file_parts(path, size, jobs):
    parts = cut(path, size, jobs)
    sys.stderr.write(f"parts: {len(parts or ())}\n")
    return parts
P.file_parts = file_parts
from meshdiag.cli.app import main
sys.argv = ["meshdiag", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_inspect_in_parts_prints_what_one_reader_prints(tmp_path, fmt):
    """`inspect` of big files read in parts by two workers prints, byte for byte, what
    one process reading them whole prints: text (head, modules, findings) and JSON."""
    big = tmp_path / "big.mlir"
    big.write_text(corpus(list(range(len(SOURCES))), [0, 1, 0, 2]))
    other = tmp_path / "other.mlir"
    other.write_text(corpus([5, 3, 1, 0, 2, 4], [1, 0]))
    files = [str(big), str(ROOT / "fixtures/seed/distorted_mesh.mlir"), str(other)]
    one, cut, made = _inspect_whole_and_in_parts(["--format", fmt, *files])
    assert one.returncode == cut.returncode
    assert len(made) == 3 and made[0] > 2 and made[2] > 2  # the big files were read in parts
    assert cut.stdout == one.stdout


def _inspect_whole_and_in_parts(args: list[str]):
    """`inspect args` by one process, and by two workers with every file cut in parts:
    both runs, and how many parts each file was cut in."""
    env = {**os.environ, "COLUMNS": "100"}
    one = subprocess.run(
        [sys.executable, "-m", "meshdiag", "inspect", "-j1", *args], capture_output=True, env=env
    )
    cut = subprocess.run(
        [sys.executable, "-c", INSPECT_IN_PARTS, "inspect", "-j2", *args],
        capture_output=True,
        env=env,
    )
    made = [int(line[7:]) for line in cut.stderr.decode().splitlines() if line[:7] == "parts: "]
    return one, cut, made


def _lint_corpus(tmp_path: Path) -> list[str]:
    """Big files whose modules have findings (meshes off the global one, unsupported on
    the target), collectives, and a suppression comment in one module."""
    seed = (ROOT / "fixtures/seed/distorted_mesh.mlir").read_text()
    quiet = seed.replace("{\n", "{\n  // meshdiag: ignore[MD103]\n", 1)
    comms = sorted(ROOT.glob("fixtures/comms/shardy/**/*.mlir"))
    texts = [seed, quiet, *(p.read_text() for p in comms), corpus(list(range(8)), [0, 1])]
    big = tmp_path / "big.mlir"
    big.write_text("// -----\n".join(texts * 3))
    other = tmp_path / "other.mlir"
    other.write_text(corpus([4, 2, 0, 1, 3], [1, 0]) + "// -----\n" + seed)
    # modules with nothing between them (no `// -----` line): cut before a module line
    bare = tmp_path / "cat.mlir"
    bare.write_text("".join([*(p.read_text() for p in comms), corpus(BARE[:8], [2])] * 3))
    return [str(big), str(ROOT / "fixtures/jax/mlp_shardy.mlir"), str(other), str(bare)]


@pytest.mark.parametrize("fmt", ["full", "json"])
def test_lint_in_parts_finds_what_one_reader_finds(tmp_path, fmt):
    """`lint` of big files read in parts by two workers reports, byte for byte, what one
    process reading them whole reports: module and collective findings, suppressions."""
    files = _lint_corpus(tmp_path)
    args = ["--mesh", "batch=2,model=4", "--target", "tt-mlir", "--select", "ALL"]
    args += ["--remat-min-bytes", "0", "--collective-budget", "1"]  # collectives found too
    args += ["--output-format", fmt, *files]
    one = subprocess.run(
        [sys.executable, "-m", "meshdiag", "lint", "-j1", *args], capture_output=True
    )
    cut = subprocess.run(
        [sys.executable, "-c", INSPECT_IN_PARTS, "lint", "-j2", *args], capture_output=True
    )
    assert one.returncode == cut.returncode == 1, one.stderr  # findings: exit 1
    made = [int(line[7:]) for line in cut.stderr.decode().splitlines() if line[:7] == "parts: "]
    assert made[0] > 2 and made[-2] > 2 and made[-1] > 2  # the big files were read in parts
    assert all(code in one.stdout for code in (b"MD101", b"MD103", b"MD201", b"MD202"))
    assert cut.stdout == one.stdout


def test_a_file_without_splits_is_cut_before_its_modules(tmp_path, small_parts):
    """With no `// -----` line in the file there is no section to carry: a cut is made at a
    line opening a module right after a line `}`, and the parts read as the whole file. One
    such line anywhere, and only the marked splits are places to cut."""
    small_parts(1)
    assert len(BARE) > 10
    path = tmp_path / "cat.mlir"
    path.write_text(corpus(BARE * 2, [2]))
    data = path.read_bytes()
    parts = P.split_file(str(path), len(data), 8)
    assert parts is not None and len(parts) > 4
    for part in parts[1:]:
        assert data[part.start - 3 : part.start] == b"\n}\n"
        assert data[part.start :].startswith(b"module")
        assert part.line == data.count(b"\n", 0, part.start) + 1
    whole: list = []
    scan_path(str(path), on_module=whole.append)
    checks = module_checks()
    _, _, findings = scan_checked(str(path), None, None, "xla", checks, None, RunMemos())
    read: list = []
    found = []
    memos = RunMemos()
    for p in parts:
        _, scanned, checked = scan_checked_part(p, None, None, "xla", checks, read.append, memos)
        found.append((scanned, checked))
    assert read == whole
    assert joined_findings(found) == findings
    for mark in ("// -----\n", "// -----// IR Dump After X (x) //----- //\n"):
        path.write_bytes(mark.encode() + data)  # a section from the first line on
        assert P.split_file(str(path), len(data) + len(mark), 8) is None
        path.write_bytes(data + mark.encode())  # a split after the last module
        assert P.split_file(str(path), len(data) + len(mark), 8) is None


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_inspect_of_a_file_without_splits_in_parts(tmp_path, fmt):
    """`inspect` of a file of modules with nothing between them, read in parts by two
    workers, prints what one reader prints."""
    big = tmp_path / "cat.mlir"
    big.write_text(corpus(BARE * 2, [2]))
    one, cut, made = _inspect_whole_and_in_parts(["--format", fmt, str(big)])
    assert made and made[0] > 2
    assert one.returncode == cut.returncode
    assert cut.stdout == one.stdout


def test_parts_are_given_before_the_lines_after_them_are_counted(
    tmp_path, small_parts, monkeypatch
):
    """The first part goes to a worker before any line is counted, and each later part's
    lines are counted when it is taken (the workers start while the parent counts)."""
    small_parts(2000)
    path, data = every_source_twice(tmp_path)
    counted = []
    newlines = P._newlines
    monkeypatch.setattr(P, "_newlines", lambda *a: counted.append(a[1:]) or newlines(*a))
    parts = P.file_parts(str(path), len(data), 8)
    assert parts is not None and len(parts) > 2 and not counted
    taken = iter(parts)
    first = next(taken)
    assert (first.start, first.line, counted) == (0, 1, [])
    second = next(taken)
    assert counted == [(0, second.start)]
    assert [second, *taken] == P.split_file(str(path), len(data), 8)[1:]


PARTS_GONE = r"""
import sys
from meshdiag.ir import parts as P
P.SPLIT_BYTES = 1
P.PART_BYTES = 4096
def gone(fd, start, stop):
    raise FileNotFoundError(2, "No such file or directory")
P._newlines = gone
from meshdiag.cli.app import main
sys.argv = ["meshdiag", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize("command", ["inspect", "lint"])
def test_a_big_file_gone_while_its_parts_go_out_is_one_line(tmp_path, command):
    """A big file that cannot be read any more when its parts' lines are counted (removed
    after it was cut) ends the run with one line naming it, not a traceback."""
    path = tmp_path / "big.mlir"
    path.write_text(corpus(list(range(len(SOURCES))) * 2, [0, 1, 2, 3]))
    got = subprocess.run(
        [sys.executable, "-c", PARTS_GONE, command, "-j2", str(path)], capture_output=True
    )
    err = got.stderr.decode()
    assert got.returncode == 2 and "Traceback" not in err, err
    assert f"cannot read {path}: No such file or directory" in err
    assert len(err.strip().splitlines()) == 1, err
