"""Clean-up that a stop signal cannot cut short.

A run's `finally` blocks stop its worker pool and remove its spool directory. Ctrl-C or
SIGTERM arriving in the middle of one (a run that was just finishing, say) would raise
there and leave half of it undone: workers not joined, a spool file left in TMPDIR.
Inside `signals_deferred()` the stop signals are noted; the first one noted is sent again
once the block is done, to the handlers that were there before (the command line's
one-line exit, Python's KeyboardInterrupt, or the default action).

Only the first is held back: a user who presses Ctrl-C again while a block waits (for
workers to end) is obeyed at once, and so is the first stop signal of a
block entered because of one (the clean-up after a Ctrl-C mid-run: that stop was the
first, this is the second).

Masking the signal (`pthread_sigmask`) would not do: it holds only this thread, and the
pool's threads would take the signal for the interpreter, which runs the handler in the
main thread all the same.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager

#: the signals a run stops on (see `meshdiag.cli.app`)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

#: marks the handler a block installs: a block inside it leaves the signals to it
_DEFERRING = "_meshdiag_defers_stop_signals"


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Run the block with the first stop signal noted rather than handled, and raised
    again when the block ends. Outside the main thread (where handlers cannot be set),
    and inside another such block, the block runs as it is."""
    current = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    if any(getattr(h, _DEFERRING, False) for h in current.values()):
        yield  # the enclosing block holds them
        return
    noted: list[int] = []
    saved: dict[int, object] = {}
    stopping = _is_stop(sys.exc_info()[1])  # entered on the way out of a stop

    def note(signum, frame) -> None:
        if noted or stopping:  # asked again: obeyed now
            noted.clear()
            _pass_on(signum, frame, saved)
        else:
            noted.append(signum)

    setattr(note, _DEFERRING, True)
    try:
        for s, handler in current.items():
            if handler is not None:  # None: set outside Python, left alone
                signal.signal(s, note)
                saved[s] = handler
    except ValueError:  # not the main thread
        pass
    try:
        yield
    finally:
        _restore(saved)
        if noted:
            signal.raise_signal(noted[0])


def _is_stop(exc: BaseException | None) -> bool:
    """Whether `exc` is a stop signal on its way out: KeyboardInterrupt, or an exception
    that says which signal raised it (`signum`, as the command line's does)."""
    return isinstance(exc, KeyboardInterrupt) or getattr(exc, "signum", None) in STOP_SIGNALS


def _pass_on(signum: int, frame, saved: dict) -> None:
    """What the handler in place before the block does with `signum`."""
    handler = saved.get(signum, signal.SIG_DFL)
    if callable(handler):
        handler(signum, frame)
    elif handler == signal.SIG_DFL:  # the default action (SIGTERM ends the process)
        _restore(saved)
        signal.raise_signal(signum)


def _restore(saved: dict) -> None:
    for s, handler in saved.items():
        signal.signal(s, handler)
