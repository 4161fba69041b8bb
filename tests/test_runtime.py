"""The command's process: collector tuned, and a fast exit that keeps the exit code and
every byte of output (a pipe read to its end, a file written with -o)."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

from meshdiag.cli import runtime

ROOT = Path(__file__).resolve().parent.parent
DUMP = ROOT / "fixtures" / "xla_dump" / "mlp2"
SEED = "fixtures/seed"  # findings on the global mesh below


def run(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "meshdiag", *args], capture_output=True, cwd=ROOT, **kw
    )


def test_fast_exit_keeps_the_code_and_the_whole_output(tmp_path):
    args = ["lint", SEED, "-m", "batch=2,model=4", "-t", "tt-mlir", "-j", "1", "--isolated"]
    args += ["-f", "json"]
    # main(argv) called in-process exits the normal way
    code = f"from meshdiag.cli.app import main; main({args!r})"
    want = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=ROOT)
    got = run(*args)
    assert got.returncode == want.returncode == 1  # findings: exit 1
    assert got.stdout == want.stdout and json.loads(got.stdout)["findings"]
    out = tmp_path / "out.sarif"
    got = run(*args[:-2], "-f", "sarif", "-o", str(out))
    assert got.returncode == 1 and json.loads(out.read_text())["runs"]


def test_usage_errors_still_exit_2():
    r = run("inspect", "--jobs", "many", str(DUMP))
    assert r.returncode == 2 and r.stderr


def test_exit_now_leaves_codes_it_cannot_give_to_the_normal_exit():
    assert runtime.exit_now("a message") is None  # returned: SystemExit prints it


def test_tune_gc_raises_the_young_threshold():
    before = gc.get_threshold()
    try:
        runtime.tune_gc()
        assert gc.get_threshold()[0] == runtime.YOUNG
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_single_threaded_blas_sets_what_the_user_left_unset(monkeypatch):
    """One BLAS thread for the command and its workers, a number the user set kept."""
    for name in runtime.BLAS_THREADS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    runtime.single_threaded_blas()
    import os

    assert [os.environ[n] for n in runtime.BLAS_THREADS] == ["1", "3", "1"]


#: the command as its own process, its environment shown where it would exit
_SHOW_BLAS = """
import os, sys
from meshdiag.cli import runtime
runtime.exit_now = lambda code: print([os.environ.get(n) for n in runtime.BLAS_THREADS])
sys.argv = ["meshdiag", "--version"]
from meshdiag.cli.app import main
try:
    main()
except SystemExit:
    pass
"""


def test_the_command_runs_with_one_blas_thread_but_not_main_called_in_process():
    """The `meshdiag` process (main() without arguments) sets one BLAS thread before any
    numpy import; main(argv) called in-process leaves its host's environment alone."""
    import os

    env = {k: v for k, v in os.environ.items() if k not in runtime.BLAS_THREADS}
    env["MKL_NUM_THREADS"] = "2"
    got = subprocess.run([sys.executable, "-c", _SHOW_BLAS], capture_output=True, env=env, cwd=ROOT)
    assert got.stdout.decode().strip().splitlines()[-1] == "['1', '1', '2']"
    code = (
        "import os\nfrom meshdiag.cli.app import main\ntry:\n    main(['--version'])\n"
        "except SystemExit:\n    pass\nprint(os.environ.get('OPENBLAS_NUM_THREADS'))"
    )
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, cwd=ROOT)
    assert got.stdout.decode().strip().splitlines()[-1] == "None"
