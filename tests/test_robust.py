"""What a new user and a CI maintainer run into (issue 14): meshdiag never hangs on a FIFO,
never destroys an output before the new one is whole, never reads an option's file without
bound, never passes a gate that checked nothing, exits cleanly on Ctrl-C and SIGTERM, and
answers bad input with one line (never "internal error").

Everything runs the real command line in a subprocess (a few gate tests in-process, where a
failure has to be injected).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "fixtures" / "seed" / "distorted_mesh.mlir"
MESH = ["--mesh", "batch=2,model=4"]
LINT = ["lint", "--isolated", *MESH]
INSPECT_J2 = ["inspect", "-j", "2", "-f", "json"]


def meshdiag(*args, cwd=None, env=None, timeout=60, stdin=None, preexec=None, **kw):
    return subprocess.run(
        [sys.executable, "-m", "meshdiag", *map(str, args)],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        timeout=timeout,
        stdin=stdin,
        preexec_fn=preexec,
        **kw,
    )


def one_line_error(r: subprocess.CompletedProcess, *words: str) -> str:
    """Exit 2 with exactly one line on stderr, no traceback, not an internal error."""
    err = r.stderr.decode("utf-8", "replace") if isinstance(r.stderr, bytes) else r.stderr
    assert r.returncode == 2, (r.returncode, err)
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    for w in words:
        assert w in err, (w, err)
    return err


@pytest.fixture
def work(tmp_path):
    (tmp_path / "dump.mlir").write_bytes(SEED.read_bytes())
    return tmp_path


def _suppressed_copy(path: Path) -> bytes:
    """The seed dump with a bare suppression comment before its first mesh line (silences
    the findings located on that line)."""
    lines = SEED.read_bytes().split(b"\n")
    i = next(i for i, line in enumerate(lines) if b"sdy.mesh" in line)
    lines.insert(i, b"// meshdiag: ignore")
    data = b"\n".join(lines)
    path.write_bytes(data)
    return data


def _codes(r: subprocess.CompletedProcess) -> list[tuple[str, int]]:
    return [(f["code"], f["line"]) for f in json.loads(r.stdout)["findings"]]


# -- hangs -------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["inspect", "-j", "1"], [*LINT, "-j", "1"]])
def test_fifo_in_a_scanned_directory_is_skipped(work, command):
    os.mkfifo(work / "pipe.mlir")  # nobody ever writes to it: reading it would block forever
    r = meshdiag(*command, work, timeout=30)
    assert r.returncode in (0, 1), r.stderr
    assert b"pipe.mlir" not in r.stdout
    assert b"dump.mlir" in r.stdout


def _feed_fifo(path: Path, data: bytes) -> threading.Thread:
    def write():
        with open(path, "wb") as fh:  # blocks until meshdiag opens it for reading
            fh.write(data)

    t = threading.Thread(target=write, daemon=True)
    t.start()
    return t


def test_named_fifo_with_findings_is_read_once_and_keeps_suppressions(work):
    data = _suppressed_copy(work / "plain.mlir")
    expected = _codes(meshdiag(*LINT, work / "plain.mlir", "-f", "json"))
    assert expected  # the copy still has findings, and some were suppressed:
    assert len(expected) < len(_codes(meshdiag(*LINT, SEED, "-f", "json")))
    os.mkfifo(work / "pipe.mlir")
    writer = _feed_fifo(work / "pipe.mlir", data)
    r = meshdiag(*LINT, work / "pipe.mlir", "-f", "json", timeout=30)
    writer.join(5)
    assert r.returncode == 1, r.stderr
    assert _codes(r) == expected
    assert {f["path"] for f in json.loads(r.stdout)["findings"]} == {str(work / "pipe.mlir")}


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_named_fifo_is_inspected_from_its_one_opening(work, jobs):
    """A named pipe is opened once, by the scan: opened and closed before it (to see
    whether it is a small file), what its writer had sent was lost and the scan waited
    for a writer that never came."""
    expected = meshdiag("inspect", "-j", jobs, work / "dump.mlir", "-f", "json")
    os.mkfifo(work / "pipe.mlir")
    writer = _feed_fifo(work / "pipe.mlir", SEED.read_bytes())
    r = meshdiag("inspect", "-j", jobs, work / "pipe.mlir", "-f", "json", timeout=30)
    writer.join(5)
    assert r.returncode == expected.returncode, r.stderr
    doc, want = json.loads(r.stdout), json.loads(expected.stdout)
    assert doc["files"][0]["modules"] == want["files"][0]["modules"]
    assert [f["code"] for f in doc["findings"]] == [f["code"] for f in want["findings"]]
    assert doc["files"][0]["modules"]  # the pipe's modules were read


def test_process_substitution_keeps_suppressions(work):
    _suppressed_copy(work / "plain.mlir")
    expected = _codes(meshdiag(*LINT, work / "plain.mlir", "-f", "json"))
    cmd = f"{sys.executable} -m meshdiag lint --isolated --mesh batch=2,model=4 -f json <(cat plain.mlir)"
    r = subprocess.run(["bash", "-c", cmd], cwd=work, capture_output=True, timeout=60)
    assert r.returncode == 1, r.stderr
    assert _codes(r) == expected


def test_stdin_filename_names_the_dump_and_keeps_suppressions(work):
    data = _suppressed_copy(work / "plain.mlir")
    expected = _codes(meshdiag(*LINT, work / "plain.mlir", "-f", "json"))
    r = meshdiag(*LINT, "-", "--stdin-filename", "sub/x.mlir", "-f", "json", input=data)
    assert r.returncode == 1
    assert _codes(r) == expected
    assert {f["path"] for f in json.loads(r.stdout)["findings"]} == {"sub/x.mlir"}
    # per-file ignores match the name it was given
    r = meshdiag(
        *LINT, "-", "--stdin-filename", "sub/x.mlir", "--per-file-ignores", "sub/*:ALL", input=data
    )
    assert r.returncode == 0, r.stdout
    one_line_error(meshdiag(*LINT, work / "plain.mlir", "--stdin-filename", "x"), "'-'")


# -- long lines ---------------------------------------------------------------------------------


def test_suppression_scan_of_a_long_line_is_linear_and_bounded(work):
    """A 64 MB line after the findings: the comment scan streams it (the old scan held it
    whole and searched it quadratically: 100 MB took 4.4 s and 224 MB)."""
    path = work / "long.mlir"
    with open(path, "wb") as fh:
        fh.write(SEED.read_bytes())
        fh.write(b"// " + b"a" * (64 << 20) + b" meshdiag\n")
    code = (
        "import resource, sys, time\n"
        "from meshdiag.lint.suppress import comment_lines\n"
        "t = time.perf_counter()\n"
        f"found = comment_lines({str(path)!r}, 10**9)\n"
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
        "assert found == {}, found\n"
    )
    base = subprocess.run(
        [
            sys.executable,
            "-c",
            "import resource, meshdiag.lint.suppress; "
            "print(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    seconds, rss_kb = map(float, r.stdout.split())
    base_kb = float(base.stdout.split()[1])
    assert rss_kb - base_kb < 32 << 10, (rss_kb, base_kb)  # < 32 MB over an idle interpreter
    assert seconds < 5, seconds


def test_suppression_comments_match_a_line_by_line_reading(tmp_path):
    """The streaming scan finds the same comments as reading line by line, for any block
    size, with comments across block boundaries and markers that are not comments."""
    import random

    from meshdiag.lint import suppress

    rng = random.Random(14)
    path = tmp_path / "f.mlir"
    comments = [
        b"// meshdiag: ignore[MD103]",
        b"# meshdiag: ignore",
        b"meshdiag",
        b"//meshdiag:ignore[md1, MD2]",
    ]
    for _ in range(60):
        parts = []
        for _ in range(rng.randint(0, 30)):
            if rng.random() < 0.4:
                parts.append(
                    b"x" * rng.randint(0, 300) + rng.choice(comments) + b"y" * rng.randint(0, 9)
                )
            else:
                parts.append(b"z" * rng.randint(0, 50))
        data = b"\n".join(parts) + rng.choice([b"", b"\n"])
        path.write_bytes(data)
        expected = {}
        for i, raw in enumerate(data.split(b"\n"), 1):
            codes = suppress.parse_comment(raw.decode())
            if codes is not None:
                expected[i] = codes
        for block in (1, 5, 64, 1 << 20):
            old = suppress._BLOCK, suppress._WINDOW
            suppress._BLOCK, suppress._WINDOW = block, 512
            try:
                for last in (1, 7, 10**9):
                    want = {k: v for k, v in expected.items() if k <= last}
                    assert suppress.comment_lines(str(path), last) == want
            finally:
                suppress._BLOCK, suppress._WINDOW = old


# -- outputs ------------------------------------------------------------------------------------


def _no_bigger_than(n: int):
    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail (EFBIG)
        resource.setrlimit(resource.RLIMIT_FSIZE, (n, n))

    return limit


@pytest.mark.parametrize(
    "option", ["--write-baseline", "-o"], ids=["write-baseline", "output-file"]
)
def test_a_failed_write_keeps_the_old_file(work, option):
    """A write that fails half-way (like a full disk) leaves the old file as it was and no
    temporary file behind; the error is one line."""
    many = work / "many"
    many.mkdir()
    for i in range(40):
        (many / f"d{i}.mlir").write_bytes(SEED.read_bytes())
    target = work / "old.json"
    old = b'{"version": 1, "tool": "meshdiag", "findings": []}\n'
    target.write_bytes(old)
    extra = ["-f", "json"] if option == "-o" else []
    r = meshdiag(*LINT, many, option, target, *extra, "-j", "1", preexec=_no_bigger_than(8192))
    one_line_error(r, "old.json")
    assert target.read_bytes() == old
    assert sorted(p.name for p in work.iterdir()) == ["dump.mlir", "many", "old.json"]


@pytest.mark.parametrize("kind", ["svg", "html"])
def test_a_failed_drawing_keeps_the_old_one(work, kind):
    target = work / f"old.{kind}"
    target.write_text("old drawing")
    r = meshdiag(
        "layout",
        "{devices=[64,64]<=[4096]}",
        "-s",
        "4096,4096",
        f"--{kind}",
        target,
        preexec=_no_bigger_than(4096),
    )
    one_line_error(r, target.name)
    assert target.read_text() == "old drawing"
    assert sorted(p.name for p in work.iterdir()) == ["dump.mlir", target.name]


def test_concurrent_output_writers_leave_one_whole_report(work):
    target = work / "report.json"
    for _ in range(3):
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "meshdiag",
                    *LINT,
                    work / "dump.mlir",
                    "-f",
                    "json",
                    "-o",
                    target,
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            for _ in range(3)
        ]
        for p in procs:
            p.wait(timeout=60)
            assert p.returncode == 1, p.stderr.read()
        doc = json.loads(target.read_text())  # one whole document, never two mixed
        assert len(doc["findings"]) == 4
    assert sorted(p.name for p in work.iterdir()) == ["dump.mlir", "report.json"]


def test_output_over_an_input_is_refused(work):
    before = (work / "dump.mlir").read_bytes()
    one_line_error(meshdiag(*LINT, work / "dump.mlir", "-o", work / "dump.mlir"), "input")
    # a report inside a linted directory is fine (ruff-style `lint . -o report.json`)
    assert meshdiag(*LINT, work, "-o", work / "report.json").returncode == 1
    assert meshdiag(*LINT, work, "-o", work / "report.json").returncode == 1
    bl = work / "bl.json"
    meshdiag(*LINT, work / "dump.mlir", "--write-baseline", bl)
    one_line_error(meshdiag(*LINT, work / "dump.mlir", "--baseline", bl, "-o", bl), "input")
    assert (work / "dump.mlir").read_bytes() == before


def test_output_keeps_the_mode_of_the_file_it_replaces(work):
    target = work / "r.txt"
    target.write_text("old")
    target.chmod(0o640)
    meshdiag(*LINT, work / "dump.mlir", "-o", target)
    assert (target.stat().st_mode & 0o777) == 0o640
    assert "MD101" in target.read_text()


# -- unbounded reads ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        [*LINT, SEED, "--baseline", "/dev/zero"],
        ["lint", SEED, "--config", "/dev/zero"],
        ["inspect", SEED, "--mesh", "/dev/zero"],
        [
            "simulate-copy",
            "--mesh",
            "t3k",
            "--shape",
            "1,7,32,32",
            "--mapper",
            "shard:1",
            "--dest",
            "per-device:/dev/zero",
            "--write",
            "by-value",
        ],
    ],
    ids=["baseline", "config", "mesh", "per-device"],
)
def test_device_files_are_refused_before_reading(args):
    start = time.monotonic()
    r = meshdiag(*args, preexec=lambda: resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)))
    one_line_error(r, "/dev/zero", "not a regular file")
    assert time.monotonic() - start < 20


def test_an_oversized_baseline_is_refused_unread(work):
    big = work / "big.json"
    with open(big, "wb") as fh:
        fh.truncate((64 << 20) + 1)  # sparse: costs no disk
    one_line_error(meshdiag(*LINT, work / "dump.mlir", "--baseline", big), "limit")


def test_a_fifo_as_baseline_is_refused_without_blocking(work):
    os.mkfifo(work / "bl.json")
    one_line_error(
        meshdiag(*LINT, work / "dump.mlir", "--baseline", work / "bl.json", timeout=20), "FIFO"
    )


# -- gates that checked nothing ------------------------------------------------------------------


def test_lint_of_an_empty_tree_is_an_error(tmp_path):
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    one_line_error(meshdiag(*LINT, tmp_path / "empty"), "nothing to lint")
    one_line_error(meshdiag("inspect", tmp_path / "empty"), "no files")


def test_lint_of_an_unreadable_directory_is_an_error(tmp_path, monkeypatch, capsys):
    """(Root reads any directory, so the failure is injected.)"""
    from meshdiag.cli.app import main

    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "dump.mlir").write_bytes(SEED.read_bytes())
    real_scandir = os.scandir

    def scandir(path="."):
        if os.fspath(path) == str(locked):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(SystemExit) as e:
        main([*LINT, str(locked)])
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert "cannot read directory" in err and "Permission denied" in err
    assert len(err.strip().splitlines()) == 1


def test_everything_excluded_is_still_a_pass(work):
    r = meshdiag(*LINT, work, "--exclude", "*.mlir")
    assert r.returncode == 0 and b"checked 0 files" in r.stdout
    (work / "sub").mkdir()
    (work / "dump.mlir").rename(work / "sub" / "dump.mlir")
    r = meshdiag(*LINT, work, "--exclude", str(work / "sub"))  # a pruned directory
    assert r.returncode == 0 and b"checked 0 files" in r.stdout, r.stderr


# -- signals ------------------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(c) for c in text.split()]


def _alive(pid: int) -> bool:
    """Whether `pid` is a running process (not a zombie waiting to be reaped)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z"


def _many(tmp_path: Path, n: int) -> Path:
    d = tmp_path / "many"
    d.mkdir()
    data = SEED.read_bytes()
    for i in range(n):  # each file its own bytes: no file is answered from the one before
        (d / f"f{i:05}.mlir").write_bytes(data + f"// file {i}\n".encode())
    return d


@pytest.fixture(scope="module")
def many_dumps(tmp_path_factory) -> Path:
    """30,000 distinct small dumps, for the tests that stop a busy run: `inspect -j 2` over
    6,000 took 0.5 s once its start-up got faster, and runs ended before their signal."""
    return _many(tmp_path_factory.mktemp("busy"), 30_000)


def _busy_run(dumps: Path, command: list[str], tmp: Path, **streams) -> subprocess.Popen:
    """`meshdiag COMMAND` over the `many_dumps` in its own session, TMPDIR=`tmp` (stdout and
    stderr to /dev/null unless given)."""
    return subprocess.Popen(
        [sys.executable, "-m", "meshdiag", *command, dumps],
        stdout=streams.get("stdout", subprocess.DEVNULL),
        stderr=streams.get("stderr", subprocess.DEVNULL),
        env={**os.environ, "TMPDIR": str(tmp)},
        start_new_session=True,
    )


def _workers(proc: subprocess.Popen) -> list[int] | None:
    """The run's two worker processes once both are up; None when it ended first."""
    deadline = time.monotonic() + 60
    while len(_children(proc.pid)) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    return None if proc.poll() is not None else _children(proc.pid)


def _gone(pids: list[int], within: float = 10) -> bool:
    deadline = time.monotonic() + within
    while any(_alive(w) for w in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not [w for w in pids if _alive(w)]


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc")
@pytest.mark.parametrize(
    "sig, command, status",
    [
        (signal.SIGINT, [*LINT, "-j", "2", "-f", "json"], 130),
        (signal.SIGTERM, INSPECT_J2, 143),
        (signal.SIGTERM, [*LINT, "-j", "2"], 143),
    ],
    ids=["ctrl-c-lint", "sigterm-inspect", "sigterm-lint"],
)
def test_signals_give_one_line_and_leave_nothing_behind(tmp_path, many_dumps, sig, command, status):
    """Ctrl-C reaches the whole process group (workers too); SIGTERM only the parent, as
    `kill` and CI runners send it. Either way: one line, the signal's exit status, and no
    spool directory left in TMPDIR."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = _busy_run(many_dumps, command, tmp, stderr=subprocess.PIPE)
    if _workers(proc) is None:
        pytest.skip("the run finished before it could be interrupted")
    time.sleep(0.3)  # workers busy
    workers = _children(proc.pid)
    if sig == signal.SIGINT:
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    err = err.decode()
    if proc.returncode in (0, 1):
        pytest.skip("the run finished before the signal arrived")
    assert proc.returncode == status, err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    assert _gone(workers)  # no worker outlives the run
    assert list(tmp.iterdir()) == []


def test_a_closed_pipe_stops_the_workers(tmp_path, many_dumps):
    """`meshdiag inspect -j2 -f json DIR | head` closes the pipe while the workers are busy:
    the run ends and so do its workers. (They used to be left waiting for work forever,
    holding stderr open, when the exit skipped collecting the pool's generator.)"""
    proc = _busy_run(many_dumps, INSPECT_J2, tmp_path, stdout=subprocess.PIPE)
    assert len(proc.stdout.read(200_000)) == 200_000
    workers = _children(proc.pid)
    proc.stdout.close()
    proc.wait(timeout=60)
    assert len(workers) == 2 and _gone(workers)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel's parent-death signal")
def test_workers_die_with_a_killed_parent(tmp_path, many_dumps):
    """`kill -9` leaves no cleanup to the parent: the kernel ends its workers."""
    proc = _busy_run(many_dumps, INSPECT_J2, tmp_path)
    workers = _workers(proc)
    if workers is None:
        pytest.skip("the run finished before it could be killed")
    proc.kill()
    proc.wait(timeout=60)
    assert len(workers) == 2 and _gone(workers)


_SIGNAL_AT_POOL_START = """
import os, signal
from concurrent.futures import process
from meshdiag.pipeline.inspect import map_files

class Stop(Exception):
    pass

def stop(signum, frame):
    raise Stop

start = process._ExecutorManagerThread.start

def signalled_start(self):
    signal.raise_signal(signal.SIGTERM)  # before the thread runs
    start(self)

process._ExecutorManagerThread.start = signalled_start
signal.signal(signal.SIGTERM, stop)
try:
    list(map_files(os.path.basename, ["a/b"] * 8, 2, min_files=1))
except Stop:
    print("stopped")
"""


def test_a_signal_while_the_pool_starts_waits_until_it_has():
    """SIGTERM just as the pool starts its thread (the window a CI run hit: "cannot join
    thread before it is started", or a hang) is raised once the pool can be stopped, and
    stops it. In a subprocess: the failure this guards against is a hang."""
    r = subprocess.run(
        [sys.executable, "-c", _SIGNAL_AT_POOL_START], capture_output=True, text=True, timeout=60
    )
    assert (r.returncode, r.stdout, r.stderr) == (0, "stopped\n", "")


# -- bad input: one line, never "internal error" -------------------------------------------------


def _deep(open_: str, close: str, n: int = 100_000) -> str:
    return open_ * n + close * n


@pytest.fixture
def hostile(tmp_path):
    d = tmp_path
    (d / "deep.json").write_text('{"axes": ' + _deep("[", "]") + "}")
    (d / "deep.toml").write_text("[mesh]\naxes = " + _deep("[", "]") + "\n")
    (d / "deepcfg.toml").write_text("select = " + _deep("[", "]") + "\n")
    (d / "deepbl.json").write_text('{"version": 1, "findings": ' + _deep("[", "]") + "}")
    (d / "latin1.toml").write_bytes(b'select = ["MD1\xff"]\n')
    (d / "dump.mlir").write_bytes(SEED.read_bytes())
    return d


@pytest.mark.parametrize(
    "args, words",
    [
        (["layout", "{devices=[2]0,1}", "-s", str(2**63)], ["too large"]),
        (["layout", "{devices=[2]0,1}", "-s", f"{2**62},4"], ["too large"]),
        (
            [
                "simulate-copy",
                "--mesh",
                "t3k",
                "--shape",
                f"{2**63},8",
                "--mapper",
                "shard:1",
                "--dest",
                "fresh",
                "--write",
                "by-value",
            ],
            ["too large"],
        ),
        (["inspect", "{d}/dump.mlir", "--mesh", "{d}/deep.json"], ["nested too deeply"]),
        (["inspect", "{d}/dump.mlir", "--mesh", "{d}/deep.toml"], ["nested too deeply"]),
        (["lint", "{d}/dump.mlir", "--config", "{d}/deepcfg.toml"], ["nested too deeply"]),
        (["lint", "{d}/dump.mlir", "--isolated", "--baseline", "{d}/deepbl.json"], ["nested"]),
        (["lint", "{d}/dump.mlir", "--config", "{d}/latin1.toml"], ["not UTF-8", "line 1"]),
        (
            ["inspect", "{d}/dump.mlir", "--mesh", '{"axes": ' + _deep("[", "]", 5000) + "}"],
            ["nested"],
        ),
    ],
    ids=[
        "shape-2^63",
        "shape-2^62",
        "simulate-2^63",
        "deep-json-mesh",
        "deep-toml-mesh",
        "deep-config",
        "deep-baseline",
        "latin1-config",
        "deep-inline-mesh",
    ],
)
def test_bad_input_is_one_line(hostile, args, words):
    one_line_error(meshdiag(*(a.replace("{d}", str(hostile)) for a in args)), *words)


def test_deep_mesh_files_in_a_tree_are_findings_not_crashes(hostile):
    r = meshdiag("lint", "--isolated", hostile, "-f", "json", "-j", "1")
    assert r.returncode == 1, r.stderr
    found = {(f["path"].rsplit("/", 1)[-1], f["code"]) for f in json.loads(r.stdout)["findings"]}
    assert ("deep.toml", "MD001") in found


def test_huge_dimension_in_a_dump_is_not_an_internal_error(tmp_path):
    dump = tmp_path / "huge.mlir"
    dump.write_text(
        "module @m attributes {mhlo.num_partitions = 2 : i32} {\n"
        f"  func.func @main(%arg0: tensor<{2**63}x8xf32> "
        '{mhlo.sharding = "{devices=[2,1]0,1}"}) -> tensor<8x8xf32> {\n'
        "    return %arg0 : tensor<8x8xf32>\n  }\n}\n"
    )
    for args in (["inspect", dump], ["inspect", dump, "--layouts", "-f", "json"], [*LINT, dump]):
        r = meshdiag(*args)
        assert r.returncode in (0, 1), r.stderr
        assert b"internal error" not in r.stderr


@pytest.mark.parametrize(
    "fmt", ["full", "concise", "json", "json-lines", "sarif", "github", "junit", "gitlab"]
)
def test_a_file_name_that_is_not_utf8(tmp_path, fmt):
    name = os.fsdecode(b"bad\xffname.mlir")
    (tmp_path / name).write_bytes(SEED.read_bytes())
    r = meshdiag(*LINT, name, "--output-format", fmt, cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert r.stderr == b""
    if fmt in ("json", "sarif", "gitlab"):
        json.loads(r.stdout)
    elif fmt == "json-lines":
        [json.loads(line) for line in r.stdout.splitlines()]
    elif fmt == "junit":
        import xml.etree.ElementTree as ET

        ET.fromstring(r.stdout)
    else:
        assert b"bad\xffname.mlir" in r.stdout  # the name as it is on disk
    r = meshdiag(*LINT, name, "--output-format", fmt, "-o", "out", cwd=tmp_path)
    assert r.returncode == 1 and b"internal error" not in r.stderr


def test_inspect_a_file_name_that_is_not_utf8(tmp_path):
    name = os.fsdecode(b"bad\xffname.mlir")
    (tmp_path / name).write_bytes(SEED.read_bytes())
    r = meshdiag("inspect", name, cwd=tmp_path)
    assert r.returncode == 0 and r.stderr == b""
    assert r.stdout.startswith(b"bad\xffname.mlir")
    json.loads(meshdiag("inspect", name, "-f", "json", cwd=tmp_path).stdout)


def _remove_deep(top: Path) -> None:
    """Delete a deep chain of `d` directories bottom-up without recursion (shutil.rmtree
    recurses, and pytest's clean-up of old temporary directories would hit the limit)."""
    os.chdir(top)
    try:
        depth = 0
        while os.path.isdir("d"):
            os.chdir("d")
            depth += 1
        for name in os.listdir("."):
            os.unlink(name)
        for _ in range(depth):
            os.chdir("..")
            os.rmdir("d")
    finally:
        os.chdir(ROOT)


def test_a_1500_deep_tree(tmp_path):
    os.chdir(tmp_path)  # built relative: each path the OS sees stays short
    try:
        for _ in range(1500):
            os.mkdir("d")
            os.chdir("d")
        Path("x.mlir").write_bytes(SEED.read_bytes())
        os.chdir(ROOT)
        r = meshdiag(*LINT, "d", "-f", "json", cwd=tmp_path)
        assert r.returncode == 1, r.stderr[-300:]
        assert len(json.loads(r.stdout)["findings"]) == 4
        r = meshdiag("inspect", "d", cwd=tmp_path)
        assert r.returncode == 0 and r.stdout.rstrip().endswith(
            b"1 file(s) read, 0 skipped, 0 finding(s)"
        )
    finally:
        _remove_deep(tmp_path)


COMMANDS = [
    ["inspect", str(SEED)],
    ["inspect", str(SEED), "-f", "json"],
    [*LINT, str(SEED)],
    [*LINT, str(SEED), "-f", "sarif"],
    ["layout", "P(None, 'model')", *MESH, "-s", "32,32"],
    [
        "simulate-copy",
        "--mesh",
        "t3k",
        "--shape",
        "1,7,32,32",
        "--mapper",
        "shard:1",
        "--dest",
        "uniform:1,1,32,32",
        "--write",
        "by-value",
    ],
    ["convert", "{devices=[2]0,1}", "--to", "sdy"],
    ["rule", "MD101"],
]
IDS = ["inspect", "inspect-json", "lint", "lint-sarif", "layout", "simulate", "convert", "rule"]


@pytest.mark.parametrize("args", COMMANDS, ids=IDS)
def test_closed_stdout(args):
    r = subprocess.run(
        [sys.executable, "-m", "meshdiag", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=60,
        preexec_fn=lambda: os.close(1),
    )
    one_line_error(r, "standard output is closed")


@pytest.mark.parametrize("args", COMMANDS, ids=IDS)
def test_full_stdout(args):
    with open("/dev/full", "wb") as full:
        r = subprocess.run(
            [sys.executable, "-m", "meshdiag", *args],
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=60,
        )
    one_line_error(r, "No space left")


@pytest.mark.parametrize("args", COMMANDS, ids=IDS)
def test_ascii_only_terminal(args):
    r = meshdiag(*args, env={"PYTHONIOENCODING": "ascii"})
    assert r.returncode in (0, 1), r.stderr
    assert r.stderr == b""
    assert r.stdout.strip() and r.stdout.isascii()  # ASCII boxes, '?' for the rest


def test_lint_to_a_file_with_stdout_closed(work):
    r = subprocess.run(
        [sys.executable, "-m", "meshdiag", *LINT, work / "dump.mlir", "-o", work / "r.txt"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=60,
        preexec_fn=lambda: os.close(1),
    )
    assert r.returncode == 1 and r.stderr == b""
    assert "MD101" in (work / "r.txt").read_text()


# -- smaller ------------------------------------------------------------------------------------


def test_default_output_honours_no_color(work):
    colored = meshdiag(*LINT, work / "dump.mlir", env={"FORCE_COLOR": "1"}).stdout
    assert b"\x1b[1;31m" in colored  # red "error" on a terminal
    plain = meshdiag(*LINT, work / "dump.mlir", env={"FORCE_COLOR": "1", "NO_COLOR": "1"}).stdout
    assert b"\x1b[1;31m" not in plain and b"\x1b[31m" not in plain


def test_color_option(work):
    assert b"\x1b[" in meshdiag(*LINT, work / "dump.mlir", "--color", "always").stdout
    never = meshdiag(*LINT, work / "dump.mlir", "--color", "never", env={"FORCE_COLOR": "1"})
    assert b"\x1b[" not in never.stdout and b"MD101" in never.stdout
    one_line_error(meshdiag(*LINT, work / "dump.mlir", "--color", "sometimes"), "--color")


def test_symlink_loop_is_not_called_missing(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    one_line_error(meshdiag(*LINT, tmp_path / "a"), "symbolic links")
    one_line_error(meshdiag(*LINT, SEED, "--baseline", tmp_path / "a"), "symbolic links")
    one_line_error(meshdiag(*LINT, tmp_path / "missing"), "no such file")


def test_config_that_is_a_device_is_not_called_missing():
    err = one_line_error(meshdiag("lint", SEED, "--config", "/dev/zero"))
    assert "does not exist" not in err and "device" in err


def test_mesh_file_over_the_size_limit_is_reported(tmp_path):
    big = tmp_path / "mesh.toml"
    big.write_text("[mesh]\naxes = {batch = 2, model = 4}\n" + "# padding\n" * 120_000)
    r = meshdiag("lint", "--isolated", big, "-f", "json", "--target", "tt-mlir")
    assert r.returncode == 1, r.stderr
    (f,) = json.loads(r.stdout)["findings"]
    assert f["code"] == "MD001" and "bytes" in f["message"] and f["line"] == 1


def test_short_help_and_shell_completion():
    for args in (["-h"], ["lint", "-h"], ["inspect", "-h"]):
        r = meshdiag(*args)
        assert r.returncode == 0 and b"Usage:" in r.stdout
    r = meshdiag("--show-completion", "bash", env={"SHELL": "/bin/bash"})
    assert r.returncode == 0 and b"complete" in r.stdout


def test_help_lists_allowed_values():
    text = b" ".join(
        meshdiag(c, "-h").stdout
        for c in ("lint", "layout", "simulate-copy", "convert", "comms", "diff", "reshard", "trace")
    )
    # options name their values (typer 0.29+ prints a positional argument's type after its
    # name, `A <str>`: its display, not ours)
    options = [ln for ln in text.splitlines() if ln.lstrip().startswith(b"-")]
    assert options and not any(b"<str>" in ln or b"<int>" in ln for ln in options)
    for choices in (
        b"[full|concise|json|json-lines|sarif|github|junit|gitlab]",
        b"[error|warning|info]",
        b"[auto|always|never]",
        b"[xla|chunk|array-split|even]",
        b"[by-reference|by-value]",
    ):
        assert choices in text, choices


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc")
def test_ctrl_c_does_not_wait_for_a_big_file(tmp_path):
    """The workers drop the file they are reading: Ctrl-C ends the run in a moment, not
    once a big file is done (seconds here, a minute for a 250 MB dump)."""
    text = SEED.read_text()
    big = [tmp_path / "a.mlir", tmp_path / "b.mlir"]
    for k, path in enumerate(big):  # 6000 distinct modules each: seconds to render
        path.write_text(
            "".join(
                text.replace("32x32", f"{8 * (i + 4)}x{8 * (i % 50 + 4) + k}").replace(
                    "ReplicateShardedData.6", f"M{i}"
                )
                for i in range(6000)
            )
        )
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "meshdiag", "inspect", "-j", "2", *map(str, big)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "TMPDIR": str(tmp)},
        start_new_session=True,
    )
    workers = _workers(proc)
    if workers is None:
        pytest.skip("the run finished before it could be interrupted")
    time.sleep(1.0)  # each worker deep in its file
    start = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    took = time.monotonic() - start
    assert proc.returncode == 130, err
    assert err.decode().strip() == "meshdiag: interrupted"
    assert took < 4, f"{took:.1f} s after Ctrl-C"
    assert _gone(workers)
    assert list(tmp.iterdir()) == []


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc")
def test_a_worker_stopped_from_outside_is_one_line(tmp_path, many_dumps):
    """SIGTERM sent to a worker (not the run): the run stops with one line saying so."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = _busy_run(many_dumps, ["inspect", "-j", "2"], tmp, stderr=subprocess.PIPE)
    workers = _workers(proc)
    if workers is None:
        pytest.skip("the run finished before it could be interrupted")
    time.sleep(0.2)
    os.kill(int(workers[0]), signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    if proc.returncode == 0:
        pytest.skip("the worker had no task left when it was stopped")
    assert proc.returncode == 2, err
    assert err.decode().strip() == (
        "meshdiag: error: a worker process was stopped (SIGTERM) before it was done"
    )
    assert _gone(workers)
    assert list(tmp.iterdir()) == []
