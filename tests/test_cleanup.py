"""A stop signal that arrives while a run cleans up waits until the clean-up is done: the
spool directory goes, the workers are joined, and the signal still ends the run."""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

import pytest

from meshdiag.cleanup import signals_deferred
from meshdiag.cli.app import main
from meshdiag.pipeline import spool
from meshdiag.pipeline.spool import SpoolDir

SEED = Path(__file__).resolve().parent.parent / "fixtures" / "seed" / "distorted_mesh.mlir"


class Stopped(Exception):
    pass


@pytest.fixture
def sigterm_raises():
    def stop(signum, frame):
        raise Stopped(signum)

    old = signal.signal(signal.SIGTERM, stop)
    yield
    signal.signal(signal.SIGTERM, old)


def test_signal_in_block_is_raised_after_it(sigterm_raises):
    before = signal.getsignal(signal.SIGTERM)
    steps = []
    with pytest.raises(Stopped), signals_deferred():
        os.kill(os.getpid(), signal.SIGTERM)
        steps.append("after the signal")
    assert steps == ["after the signal"]
    assert signal.getsignal(signal.SIGTERM) is before  # the handler is back


def test_no_signal_no_change(sigterm_raises):
    before = signal.getsignal(signal.SIGTERM)
    with signals_deferred():
        pass
    assert signal.getsignal(signal.SIGTERM) is before


def test_nested_blocks_raise_once_at_the_outer_end(sigterm_raises):
    steps = []
    with pytest.raises(Stopped), signals_deferred():
        with signals_deferred():
            os.kill(os.getpid(), signal.SIGTERM)
        steps.append("outer block goes on")
    assert steps == ["outer block goes on"]


def _rmtree_signalled(monkeypatch):
    """`shutil.rmtree` (what the spool module removes its directory with) gets SIGTERM
    just before it starts."""
    import shutil

    real = shutil.rmtree

    def rmtree(path, *args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        real(path, *args, **kwargs)

    monkeypatch.setattr(shutil, "rmtree", rmtree)


def test_spool_removed_when_signal_comes_during_close(tmp_path, monkeypatch, sigterm_raises):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    sd = SpoolDir()
    sd.worker_init(*sd.init_args)
    sd.read(spool.spool_write(b"some output"))
    _rmtree_signalled(monkeypatch)
    with pytest.raises(Stopped):
        sd.close()
    assert list(tmp_path.iterdir()) == []


def test_inspect_terminated_while_cleaning_up_leaves_nothing(tmp_path, monkeypatch, capsys):
    """The run (two workers, spooling) ends as SIGTERM says (one line, status 143), with
    nothing left in TMPDIR."""
    from meshdiag.ir import batches

    monkeypatch.setattr(batches, "PARALLEL_BYTES", 1)  # (workers even for a few bytes)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    _rmtree_signalled(monkeypatch)
    with pytest.raises(SystemExit) as stop:
        main(["inspect", "-j", "2", "-f", "json", str(SEED), str(SEED)])
    assert stop.value.code == 128 + signal.SIGTERM
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["meshdiag: terminated"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "args",
    [
        ["inspect", "-j", "1", str(SEED)],
        ["inspect", "-j", "1", "-f", "json", str(SEED)],
        ["inspect", "-j", "1", str(SEED.parent)],
        ["inspect", str(SEED)],  # (too few bytes for workers: one process)
    ],
)
def test_a_run_in_one_process_makes_no_spool_directory(args, tmp_path, monkeypatch, capsys):
    """A run in one process writes its outputs straight out (text or JSON, a file or a
    directory): no temporary directory is made (it was, with its imports, 9 ms of every
    such run), and the output is the one spooled (`SpoolDir.serial`: each output in a
    spool file, then copied)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with monkeypatch.context() as m:
        m.setattr(SpoolDir, "direct", lambda self, out, sep: self.serial())
        with pytest.raises(SystemExit) as spooled:
            main(args)
    want = capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []  # (the spooled run's directory, removed)

    def refused(*a, **k):
        raise AssertionError("a spool directory was made")

    monkeypatch.setattr(tempfile, "mkdtemp", refused)
    with pytest.raises(SystemExit) as direct:
        main(args)
    assert direct.value.code == spooled.value.code
    assert capsys.readouterr().out == want


def test_a_second_signal_is_obeyed_at_once(sigterm_raises):
    """Ctrl-C pressed again while a clean-up waits (a worker still on a big file)."""
    steps = []
    with pytest.raises(Stopped), signals_deferred():
        os.kill(os.getpid(), signal.SIGTERM)
        steps.append("first noted")
        os.kill(os.getpid(), signal.SIGTERM)
        steps.append("not reached")
    assert steps == ["first noted"]


class _StopSignal(BaseException):
    signum = signal.SIGTERM


def test_clean_up_after_a_stop_obeys_the_next_one(sigterm_raises):
    """The block runs because of a stop signal (Ctrl-C mid-run): the next one is the
    user's second, and ends it at once."""
    steps = []
    with pytest.raises(Stopped):
        try:
            raise _StopSignal
        finally:
            with signals_deferred():
                os.kill(os.getpid(), signal.SIGTERM)
                steps.append("not reached")
    assert steps == []


def test_default_action_when_no_handler_was_set(tmp_path):
    """With SIGTERM's default action in place, a noted SIGTERM still ends the process (as
    SIGTERM), after the block."""
    import subprocess
    import sys

    code = (
        "import os, signal, sys\n"
        "from meshdiag.cleanup import signals_deferred\n"
        "with signals_deferred():\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    print('block done', flush=True)\n"
        "print('not reached', flush=True)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == -signal.SIGTERM
    assert r.stdout == "block done\n"


def test_a_stopped_worker_starts_no_later_task(monkeypatch):
    """SIGTERM in a task stops it, and the tasks the pool had already handed to the worker
    stop at once instead of running to their end (a part of a big file: seconds)."""
    from meshdiag.pipeline import tasks

    monkeypatch.setattr(tasks, "_WORKER", {"in_task": False, "stop": False})
    ran = []

    def work(n):
        ran.append(n)
        if n == 1:
            tasks.stop_requested(signal.SIGTERM, None)  # as if the signal came now
        return n

    task = tasks.Task(work)
    assert task(0) == 0
    with pytest.raises(tasks.TaskStopped):
        task(1)
    with pytest.raises(tasks.TaskStopped):
        task(2)  # queued before the stop: not run
    assert ran == [0, 1]
