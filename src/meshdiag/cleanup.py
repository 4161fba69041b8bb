"""Clean-up that a stop signal cannot cut short.

A run's `finally` blocks stop its worker pool and remove its spool directory. Ctrl-C or
SIGTERM arriving in the middle of one (a run that was just finishing, say) would raise
there and leave half of it undone: workers not joined, a spool file left in TMPDIR.
Inside `signals_deferred()` the stop signals are only noted; the first one noted is sent
again once the block is done, to the handlers that were there before (the command line's
one-line exit, Python's KeyboardInterrupt, or the default action).

Masking the signal (`pthread_sigmask`) would not do: it holds only this thread, and the
pool's threads would take the signal for the interpreter, which runs the handler in the
main thread all the same.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

#: the signals a run stops on (see `meshdiag.cli.app`)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Run the block with the stop signals noted rather than handled; the first one
    noted is raised again when the block ends. Outside the main thread (where handlers
    cannot be set) the block runs as it is."""
    noted: list[int] = []

    def note(signum, frame) -> None:
        noted.append(signum)

    saved = {}
    try:
        for signum in STOP_SIGNALS:
            if signal.getsignal(signum) is not None:  # None: set outside Python, kept
                saved[signum] = signal.signal(signum, note)
    except ValueError:  # not the main thread
        pass
    try:
        yield
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)
        if noted:
            signal.raise_signal(noted[0])
