"""Tasks of a worker pool that a stop request ends: the parent that stops (Ctrl-C, an error,
a consumer closing early) does not wait for the file a worker is on, which can take a
minute.

The worker's SIGTERM handler (`stop_requested`) raises `TaskStopped` only while a `Task`
runs; between tasks it notes the request and the next task stops at once. Killing the
worker instead could cut a result it is sending in half, and the parent would wait for
the rest of that message for ever.
"""

from __future__ import annotations

import os
from collections.abc import Callable


def stop_tasks(pool) -> None:
    """Ask the pool's workers to drop the task they are on (SIGTERM, which
    `stop_requested` handles). `_processes` is the executor's own table of them: Python
    has no public way before 3.14, whose `terminate_workers` sends the same signal."""
    import signal

    for process in list((getattr(pool, "_processes", None) or {}).values()):
        try:
            os.kill(process.pid, signal.SIGTERM)
        except (OSError, AttributeError, TypeError):  # gone already
            pass


class TaskStopped(BaseException):
    """A worker dropped its task because it was asked to (SIGTERM): the run is stopping,
    or someone stopped the worker. A BaseException, like KeyboardInterrupt, so that no
    `except Exception` in the task's code takes it for an error of the file."""


#: in a worker: whether it is inside a `Task`, and whether a stop was asked for
#: outside one (the next task then stops at once)
_WORKER = {"in_task": False, "stop": False}


class Task:
    """`fn` run in a worker as a task that a stop request may end: SIGTERM raises
    `TaskStopped` only while the task runs, never while the worker sends a result (a
    result cut off there would leave the parent reading half a message for ever)."""

    def __init__(self, fn: Callable) -> None:
        self.fn = fn

    def __call__(self, *args):
        _WORKER["in_task"] = True
        try:
            if _WORKER["stop"]:
                raise TaskStopped()
            return self.fn(*args)
        finally:
            _WORKER["in_task"] = False


def stop_requested(signum, frame) -> None:
    """A worker's SIGTERM handler (see the module docstring). Every later task stops at
    once too: the pool has already handed the worker up to one task more than it runs,
    which `shutdown(cancel_futures=True)` cannot take back (a part of a big file: seconds)."""
    _WORKER["stop"] = True
    if _WORKER["in_task"]:
        _WORKER["in_task"] = False  # raised once
        raise TaskStopped()
