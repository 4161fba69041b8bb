"""One file's modules as an iterator, for a consumer that reads two files side by side.

The scanner hands each module to a callback as it ends (`scan_path(on_module=...)`), which
suits one file at a time; `diff` walks two dumps in step and pulls a module from either
when it needs one. A `ModuleStream` runs its file's scan a block at a time
(`scan.scan_steps`), only as far as the next module asked for: the modules waiting are
those one block ended, so memory stays flat in the file's size.

    with ModuleStream(path, cache) as modules:
        for m in modules: ...
        modules.report  # the FileReport (without its modules), once they are all out
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING

from meshdiag.ir.scan import scan_steps

if TYPE_CHECKING:
    from meshdiag.ir.model import FileReport, ModuleReport
    from meshdiag.ir.scancache import ScanCache


class ModuleStream(Iterator["ModuleReport"]):
    """The modules of `path` in file order, scanned with `cache` as they are asked for;
    `report` is the file's report once the last module is out (its modules are not kept
    in it)."""

    def __init__(self, path: str, cache: ScanCache | None = None) -> None:
        self.path = path
        self.report: FileReport | None = None
        self._ready: deque[ModuleReport] = deque()
        self._steps = scan_steps(path, self._ready.append, cache)
        self._scanning = True

    def __next__(self) -> ModuleReport:
        ready = self._ready
        while not ready:
            if not self._scanning:
                raise StopIteration
            try:
                next(self._steps)
            except StopIteration as done:
                self.report = done.value
                self._scanning = False
        return ready.popleft()

    def close(self) -> None:
        """Stop the scan (the file it streams is closed) when not all modules were taken."""
        if self._scanning:
            self._scanning = False
            self._steps.close()
        self._ready.clear()

    def __enter__(self) -> ModuleStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
