"""`inspect` as a library: scan IR dumps, run the module checks, build the JSON document.

    from meshdiag.pipeline.inspect import inspect_paths
    doc = inspect_paths(["dump.mlir"], mesh=None, layouts=True)   # the inspect JSON (docs/json.md)

`iter_inspect` yields one `Inspected` per file so callers can stream huge dump directories
(the CLI writes each file's JSON as soon as it is scanned).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sized
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from meshdiag.checks.context import CheckContext
from meshdiag.checks.registry import run_check
from meshdiag.cleanup import STOP_SIGNALS, signals_deferred
from meshdiag.errors import LimitError, MeshdiagError
from meshdiag.ir.batches import task_files
from meshdiag.ir.devices import assignment_for
from meshdiag.ir.fast import native
from meshdiag.ir.model import FileReport, MeshDecl, ModuleReport, Value
from meshdiag.ir.scan import (
    OnBlock,
    partitioned_by_name,
    read_small_file,
    scan_bytes,
    scan_part,
    scan_path,
    scan_paths,
)
from meshdiag.ir.scancache import ScanCache
from meshdiag.ir.text import match_end, split_top
from meshdiag.memo import RunMemos
from meshdiag.pipeline import file_batch
from meshdiag.pipeline.tasks import Task, TaskStopped, stop_requested, stop_tasks

if TYPE_CHECKING:
    from meshdiag.ir.devices import DeviceAssignment
    from meshdiag.ir.parts import FilePart
    from meshdiag.layouts.engine import Layout
    from meshdiag.model.findings import Finding
    from meshdiag.model.mesh import Mesh
    from meshdiag.model.sharding import HloSharding

JSON_VERSION = 1
T = TypeVar("T")


@dataclass
class Inspected:
    report: FileReport
    #: MD001 findings from the scan plus every module check's findings, sorted
    findings: list[Finding] = field(default_factory=list)


def run_checks(
    report: FileReport,
    mesh: Mesh | None,
    target: str | None,
    split: str,
    checks: dict | None = None,
    memos: RunMemos | None = None,
) -> list[Finding]:
    """Every registered module check (or `checks`) over every module of `report`, plus its
    MD001s."""
    checker = ModuleChecker(report.path, mesh, target, split, checks, memos)
    for module in report.modules:
        checker.check(module)
    return checker.findings(report)


class ModuleChecker:
    """The module checks of one file, run one module at a time: a file scanned module by
    module (`scan_checked`) is judged as each module ends, so none needs to be kept."""

    def __init__(
        self,
        path: str,
        mesh: Mesh | None,
        target: str | None,
        split: str,
        checks: dict | None = None,
        memos: RunMemos | None = None,
    ) -> None:
        if checks is None:
            from meshdiag.checks.registry import module_checks

            checks = module_checks()
        self._checks = checks
        memos = RunMemos() if memos is None else memos
        mesh, ids_note = logical_global_mesh(path, mesh, memos)
        self._path = path
        self._memos = memos
        #: the checks' context, made when a module is first checked: a file whose modules
        #: all came through clean before, or that repeats one read before, needs none (a
        #: frozen dataclass of nine fields was a third of a checker's cost, and a dump's
        #: files make one each)
        self._ctx: CheckContext | None = None
        #: what the findings depend on besides the modules and the file's name
        self.setting = (mesh, target, split, tuple(checks), ids_note)
        self._found: list[Finding] = []
        #: modules whose checks found nothing, by what the checks look at (`_clean_key`): a
        #: real every-pass dump repeats most modules' annotated lines exactly (27 of 36 in
        #: one XLA dump of a sharded MLP), and they need no second look
        self._clean = memos.content("inspect.clean")

    def check(self, module: ModuleReport) -> None:
        key = _clean_key(module, self.setting)
        if key is not None and self._clean.get(key) is not None:
            return  # the same annotated lines and meshes came through clean before
        ctx = self._ctx
        if ctx is None:
            mesh, target, split, _, ids_note = self.setting
            ctx = self._ctx = CheckContext(
                self._path, mesh, target, split, ids_note, memos=self._memos
            )
        found = []
        where = {"line": module.line, "module": module.name}
        for code, fn in self._checks.items():
            found.extend(run_check(code, fn, module, ctx, **where))
        if found:
            self._found.extend(found)
        elif key is not None:
            self._clean.put(key, len(module.items), True)

    def findings(self, report: FileReport) -> list[Finding]:
        """The scan's MD001s, then every module's findings, sorted."""
        return joined_findings([(report.findings, self._found)])

    @property
    def module_findings(self) -> list[Finding]:
        """The module checks' findings so far, in module order (not sorted)."""
        return self._found


def joined_findings(parts: list[tuple[list[Finding], list[Finding]]]) -> list[Finding]:
    """A file's findings from the (scan's MD001s, module checks' findings) of each of its
    parts in order (one for a file read whole): every MD001, then every module's, sorted
    (a stable sort: findings at one place keep that order)."""
    if len(parts) == 1 and not parts[0][0] and not parts[0][1]:
        return []  # (most files of a dump: no list made and sorted for nothing)
    out = [f for scanned, _ in parts for f in scanned]
    out.extend(f for _, checked in parts for f in checked)
    out.sort(key=lambda f: f.sort_key())
    return out


def scan_checked_part(
    part: FilePart,
    mesh: Mesh | None,
    target: str | None,
    split: str,
    checks: dict | None = None,
    each: Callable[[ModuleReport], None] | None = None,
    memos: RunMemos | None = None,
    on_block: OnBlock = None,
) -> tuple[int, list[Finding], list[Finding]]:
    """`scan_checked` of one part of a big file (`ir.parts`): how many modules it has, its
    MD001s and its module checks' findings, for `joined_findings` to put together with the
    other parts'. `on_block`: shown each buffer of lines read (`ir.scan.OnBlock`)."""
    checker = ModuleChecker(part.path, mesh, target, split, checks, memos)
    done = _Ended(checker, each)
    report = scan_part(
        part.path,
        part.start,
        part.stop,
        part.line,
        on_module=done,
        cache=scan_cache(memos),
        on_block=on_block,
    )
    done.flush()
    return done.count, report.findings, checker.module_findings


class _Ended:
    """What the scan of a big file (streamed, or a part of one) does with each module as
    it ends (its `on_module`): count it, check it, hand it to `each`. Modules wait in a
    batch, bounded as a `FileBatch`'s (`file_batch.BATCH_MODULES` modules, at most, and
    `BATCH_ENTRIES` column entries: a module of more goes alone), to be checked, then
    handed on, in order; the scan's caller `flush`es the last batch when the scan ends.
    Judged and written a batch at a time, the checks' and the writers' code and memos stay
    in the processor's caches, which scanning each module in between had turned over
    (`inspect -j1`, medians of 8 alternating runs: the cold bench's 252 MB file 1.58 →
    1.51 s, the Shardy passes 1.13 → 1.04 s)."""

    __slots__ = ("checker", "each", "count", "waiting", "entries")

    def __init__(self, checker: ModuleChecker, each: Callable[[ModuleReport], None] | None) -> None:
        self.checker = checker
        self.each = each
        self.count = 0
        self.waiting: list[ModuleReport] = []
        self.entries = 0  # the waiting modules' column entries

    def __call__(self, module: ModuleReport) -> None:
        self.count += 1
        self.waiting.append(module)
        self.entries += len(module.items)
        if (
            len(self.waiting) >= file_batch.BATCH_MODULES
            or self.entries >= file_batch.BATCH_ENTRIES
        ):
            self.flush()

    def flush(self) -> None:
        """Check the waiting modules, then hand them to `each`, in order."""
        waiting = self.waiting
        self.waiting, self.entries = [], 0
        check = self.checker.check
        for m in waiting:
            check(m)
        each = self.each
        if each is not None:
            for m in waiting:
                each(m)


def scan_checked(
    path: str,
    mesh: Mesh | None,
    target: str | None,
    split: str,
    checks: dict | None = None,
    each: Callable[[ModuleReport], None] | None = None,
    memos: RunMemos | None = None,
    data: bytes | None = None,
    replay: bool = True,
    on_block: OnBlock = None,
) -> tuple[FileReport, int, list[Finding]]:
    """Scan `path` module by module: a big file's modules are checked and handed to
    `each` a batch at a time as they end (`_Ended`) and let go, so memory stays flat in the
    file's size; a small file's (read whole, `data`) once it is read. Returns the report
    (without its modules), how many modules it had, and the findings `run_checks` gives on
    the whole.
    The scanner's memo (`ir.scancache.ScanCache`) is the run's: one slot of `memos`.
    `data`: the file's bytes when the caller read it already (`read_small_file`).
    `replay=False`: the caller remembers the files it read itself (`lint`, whose memo holds
    the findings of both its scans): none is kept here. `on_block`: shown each buffer of
    lines the scan reads (`ir.scan.OnBlock`; not for a file replayed from memory)."""
    shown = "<stdin>" if path == "-" else path
    checker = ModuleChecker(shown, mesh, target, split, checks, memos)
    # XLA's every-pass dumps write an unchanged module again under the next pass's name
    # (in the cold bench's dumps, 92 MB of the 222 MB read repeat the file just before and
    # 22 MB one of the 64 before): the same bytes, name hint and settings give the same
    # modules and findings
    recent = key = None
    if memos is not None and replay:
        recent = memos.recent("inspect.recent_files")
        data = read_small_file(path) if data is None else data
        if data is not None:
            key = (data, partitioned_by_name(path), checker.setting)
            hit = recent.get(data, key)
            if hit is not None:
                return hit.replay(shown, each)
    if data is None:  # a big file's modules are let go a batch at a time
        done = _Ended(checker, each)
        report = scan_path(path, on_module=done, cache=scan_cache(memos), on_block=on_block)
        done.flush()
        return report, done.count, checker.findings(report)
    # a small file's modules are few (its bytes are in memory already): checked once it
    # is read, then handed on, and kept for the next files
    modules: list[ModuleReport] = []
    report = scan_bytes(
        path, data, on_module=modules.append, cache=scan_cache(memos), on_block=on_block
    )
    check = checker.check
    for m in modules:
        check(m)
    if each is not None:
        for m in modules:
            each(m)
    findings = checker.findings(report)
    if key is not None and report.skipped is None:  # a skipped file's note names it
        scanned = Scanned(shown, report, modules, findings)
        recent.put(data, key, scanned)  # type: ignore[union-attr,arg-type]
    return report, len(modules), findings


@dataclass
class Scanned:
    """A small file's scan and findings, as `scan_checked` made them under `path`."""

    path: str
    report: FileReport
    modules: list[ModuleReport]
    findings: list[Finding]

    def replay(
        self, path: str, each: Callable[[ModuleReport], None] | None
    ) -> tuple[FileReport, int, list[Finding]]:
        """`scan_checked`'s result for the same bytes at `path`: the modules go to `each`
        again (they are read-only from the scan on), the findings are moved to `path`."""
        if each is not None:
            for m in self.modules:
                each(m)
        r = self.report  # (its four fields given, not `dataclasses.replace`: 4 us a call)
        report = FileReport(path, r.modules, self._moved(r.findings, path), r.skipped)
        return report, len(self.modules), self._moved(self.findings, path)

    def _moved(self, findings: list[Finding], path: str) -> list[Finding]:
        if not findings:
            return []
        return [dataclasses.replace(f, path=path) if f.path == self.path else f for f in findings]


def scan_cache(memos: RunMemos | None) -> ScanCache | None:
    """The scanner's memo of the run (what it learned of lines and parses), kept in the
    run's memos; None (a fresh one per scan) without them."""
    return None if memos is None else memos.slot("ir.scan", lambda: ScanCache(memos.hold))


def logical_global_mesh(
    path: str, mesh: Mesh | None, memos: RunMemos | None = None
) -> tuple[Mesh | None, str]:
    """The global mesh in the dump's id space, and a note saying how it got there.

    Shardings in a dump name logical partition ids. When the dump states its device
    assignment (JAX's compile_options.textproto) and the mesh lists device ids, those are
    physical devices (`jax.sharding.Mesh(devices[perm])`): they become the partitions the
    assignment runs on them. A mesh without device ids says nothing about the order.
    """
    if mesh is None or mesh.device_ids is None:
        return mesh, ""
    da = assignment_for(path, memos)
    if da is None:
        return mesh, ""
    logical = da.logical_mesh(mesh)
    src = da.where
    if logical is None:
        return mesh, (
            f"the mesh's device_ids are not the devices {src} assigns ({da.mapping_text()})"
        )
    return logical, (
        f"the mesh's device_ids are physical devices; {src} runs logical partitions on "
        f"them ({da.mapping_text()}), so the global mesh in the dump's ids is "
        f"<{logical.short()}>"
    )


def _clean_key(module: ModuleReport, setting: tuple) -> tuple | None:
    """Everything a check's verdict on `module` depends on, except positions (which only
    say where a finding goes): its values (by their shared column entries), its meshes and
    diagnostics, how it is partitioned, and the global settings. None for a module holding
    one-off values (they are not shared: nothing to remember it by)."""
    if module.has_own_values():  # (asked before making the entries)
        return None
    items = module.entries()[0]
    return (
        items,
        module.partitioned,
        module.num_partitions,
        tuple((d.name, d.text, d.source) for d in module.meshes),
        tuple((d.severity, d.message) for d in module.diagnostics),
        setting,
    )


def iter_inspect(
    paths: Iterable[str],
    *,
    mesh: Mesh | None = None,
    target: str | None = None,
    split: str = "xla",
    memos: RunMemos | None = None,
) -> Iterator[Inspected]:
    """One `Inspected` per file; `memos` (made here when None) serve every file."""
    from meshdiag.checks.registry import module_checks

    memos = memos if memos is not None else RunMemos()
    checks = module_checks()  # once: loading the registry walks the checks package
    for report in scan_paths(paths, cache=scan_cache(memos)):
        yield Inspected(report, run_checks(report, mesh, target, split, checks, memos))


# -- many files in worker processes -----------------------------------------------------------

#: below this many files a pool's start-up (importing meshdiag in each worker) costs more than
#: it saves
MIN_PARALLEL_FILES = 64


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def mp_context():
    """A start method safe with JAX or other threads running in the parent: forking a
    multithreaded process can deadlock the child (JAX warns once its runtime is up). Fork —
    cheapest, workers inherit everything imported — only while this process has one thread;
    else forkserver (spawn where there is none)."""
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and _single_threaded():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def _single_threaded() -> bool:
    """No other OS thread in this process (native ones included, e.g. XLA's thread pools)."""
    import threading

    if threading.active_count() > 1:
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:  # no /proc: only Python threads are visible
        return "jax" not in sys.modules


def map_files(
    fn: Callable[[str], T],
    files: Iterable,
    jobs: int | None,
    initializer: Callable | None = None,
    initargs: tuple = (),
    *,
    min_files: int = MIN_PARALLEL_FILES,
    chunksize: int | None = None,
    context=None,
    died: str = "a worker process died (out of memory or killed); rerun with --jobs 1",
    parallel: bool | None = None,
) -> Iterator[T]:
    """`fn(path)` for each file, in `files` order; in `jobs` worker processes when worth it
    (at least `min_files` files), started by `context` (default `mp_context()`), `chunksize`
    files per task (default: enough tasks to keep every worker busy to the end).

    `parallel` given: the caller has decided (`files` may then be an iterator, read while
    the workers start on its first items; without `chunksize`, one file per task).

    `fn`, `initializer` and `initargs` must be picklable (module-level functions) unless
    `context` forks. Serial runs call `initializer` in this process first, so `fn` sees the
    same state either way. Closing the iterator early cancels the work not yet started;
    a dead worker is a MeshdiagError saying `died`.

    Callers close the iterator in a `finally`: when the consumer raises (a closed pipe, a
    signal) the pool stops there, not whenever the generator is collected — which never
    happens when the command-line process ends with `os._exit`.
    """
    jobs = default_jobs() if jobs is None else jobs
    if jobs < 1:
        raise MeshdiagError(f"--jobs must be at least 1, got {jobs}")
    if parallel is None:
        files = list(files)
        jobs = min(jobs, len(files))
        parallel = jobs > 1 and len(files) >= min_files and "-" not in files
    if not parallel or jobs <= 1:
        if initializer is not None:
            initializer(*initargs)
        for path in files:
            yield fn(path)
        return
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    mp = context or mp_context()
    forked = mp.get_start_method() == "fork"
    if forked:
        _preload()  # imported once here, inherited by every worker
    chunk = chunksize or (task_files(len(files), jobs) if isinstance(files, Sized) else 1)
    # Ctrl-C or SIGTERM while the pool starts its thread and workers would leave it half
    # built (a thread that cannot be joined, a worker it does not know): held until then
    unheld = _hold_signals()
    try:
        with ProcessPoolExecutor(
            max_workers=jobs,
            mp_context=mp,
            initializer=_worker_start,
            # a forked worker's parent is this process; others' is a fork server
            initargs=(initializer, initargs, os.getpid() if forked else None),
        ) as pool:
            try:
                # `map` submits every item before it returns: an iterator of `files` (a walk
                # going on) is read meanwhile, with the stop signals let through again as
                # soon as the first task is in (the pool is up then)
                tasks = _released_after_first(files, unheld)
                results = pool.map(Task(fn), tasks, chunksize=chunk)
                unheld = _release_signals(unheld)  # one that came meanwhile is raised here
                yield from results
            except TaskStopped:  # not asked for by this process: someone stopped a worker
                stop_tasks(pool)
                raise MeshdiagError(
                    "a worker process was stopped (SIGTERM) before it was done"
                ) from None
            except BaseException:
                # the run stops here (Ctrl-C, an error, the caller closing early): what
                # the workers are on is not wanted, and a batch of a big file can take
                # a minute; they are asked to drop it rather than waited for
                stop_tasks(pool)
                raise
            finally:  # also when the caller stops early: no waiting for the rest
                with signals_deferred():  # the workers are joined whatever comes now
                    pool.shutdown(wait=True, cancel_futures=True)
    except BrokenProcessPool:
        raise MeshdiagError(died) from None
    finally:
        _release_signals(unheld)


def _released_after_first(items: Iterable, mask) -> Iterator:
    """`items`, the signal `mask` restored once the first has been taken (and submitted)."""
    it = iter(items)
    for first in it:
        yield first
        break
    _release_signals(mask)
    yield from it


def _hold_signals():
    """Block the stop signals in this thread; returns the mask to restore (None where
    there are no signal masks)."""
    import signal

    try:
        return signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    except (AttributeError, OSError, ValueError):
        return None


def _unblock_stop_signals() -> None:
    import signal

    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    except (AttributeError, OSError, ValueError):
        pass


def _release_signals(mask) -> None:
    """Restore the mask `_hold_signals` returned; a signal that came meanwhile is
    delivered now. Returns None: what is left to restore."""
    if mask is not None:
        import signal

        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _worker_start(initializer: Callable | None, initargs: tuple, parent: int | None) -> None:
    """A worker leaves Ctrl-C to the parent: the terminal sends SIGINT to the whole process
    group, and the parent prints one line (workers printing their own tracebacks would
    only add noise) and stops the pool, asking each worker with SIGTERM to drop the task
    it is on (`tasks.Task`)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, stop_requested)
    _unblock_stop_signals()  # forked while the parent held them (see `map_files`)
    _die_with_parent(parent)
    if initializer is not None:
        initializer(*initargs)


def _die_with_parent(parent: int | None) -> None:
    """A worker whose parent is gone (killed with SIGKILL, or ended without stopping its
    pool) would wait for work on its queue forever, holding the parent's stderr open: on
    Linux the kernel kills it when the parent dies. `parent` is the pid it was forked
    from, if known: a parent that died before the request took effect is seen here."""
    if not sys.platform.startswith("linux"):
        return
    import signal

    asked = _native_parent_death_signal
    if asked is not None:
        if not asked(signal.SIGKILL):
            return
    else:  # (importing ctypes took each worker 5 ms)
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):  # no prctl: the parent's own shutdown has to do
            return
    if parent is not None and os.getppid() != parent:
        os._exit(1)


#: prctl option from <linux/prctl.h>: signal to receive when the parent dies
_PR_SET_PDEATHSIG = 1
_native_parent_death_signal = native("parent_death_signal")


def _preload() -> None:
    """Import what every worker needs (the scanner, every check) before forking, so the
    workers do not each import it again. Not numpy: only some layouts need it (the 252 MB
    bench file none), and a worker that does imports it alongside the others, not in this
    process before any of them starts (0.04 s)."""
    from meshdiag.checks.registry import module_checks
    from meshdiag.ir import scan  # noqa: F401

    module_checks()


def inspect_paths(
    paths: Iterable[str],
    *,
    mesh: Mesh | None = None,
    target: str | None = None,
    split: str = "xla",
    layouts: bool = False,
) -> dict:
    """The whole inspect JSON document (docs/json.md) for `paths`."""
    memos = RunMemos()  # this run's
    files = []
    findings: list[Finding] = []
    for item in iter_inspect(paths, mesh=mesh, target=target, split=split, memos=memos):
        files.append(file_json(item.report, mesh=mesh, split=split, layouts=layouts, memos=memos))
        findings.extend(item.findings)
    return {
        "version": JSON_VERSION,
        "files": files,
        "findings": [f.to_json() for f in findings],
    }


# -- JSON ----------------------------------------------------------------------------------


def file_json(
    report: FileReport,
    *,
    mesh: Mesh | None = None,
    split: str = "xla",
    layouts: bool = False,
    memos: RunMemos | None = None,
) -> dict:
    try:
        modules = [
            module_json(m, mesh=mesh, split=split, layouts=layouts, memos=memos)
            for m in report.modules
        ]
    except LimitError as e:  # name the file: the value's location is line:column only
        raise LimitError(f"{report.path}: {e}") from None
    return {"path": report.path, **ids_json(report.path, memos), "modules": modules}


def file_json_parts(path: str, memos: RunMemos | None = None) -> tuple[str, str]:
    """`json.dumps` of a file's JSON around its modules: the file's JSON is the first part,
    its modules' `json.dumps` joined by ", ", then the second part (so a file streams out a
    module at a time with the bytes one `json.dumps(file_json(...))` writes)."""
    import json  # (a dotted `from json.encoder import` took 0.6 us a file, this 0.07)

    quoted = json.encoder.encode_basestring_ascii  # what json.dumps uses
    memos = memos if memos is not None else RunMemos()
    da = assignment_for(path, memos)
    # the id space's JSON is the same for every file of a dump directory: encoded once a
    # run of files sharing it (7.8 us a file with json.dumps, 2 us so)
    last = memos.last("inspect.ids_json_text")
    ids = last.get(da)
    if ids is None:
        ids = last.put(da, json.dumps(_ids(da))[1:-1])
    return f'{{"path": {quoted(path)}, {ids}, "modules": [', "]}"


def ids_json(path: str, memos: RunMemos | None = None) -> dict:
    """Which id space the file's device numbers are in, and the dump's device assignment
    (logical partition → physical device) when its directory states one."""
    return _ids(assignment_for(path, memos))


def _ids(da: DeviceAssignment | None) -> dict:
    return {
        "device_ids": "logical",
        "device_assignment": da.to_json() if da is not None else None,
    }


def mesh_json(d: MeshDecl) -> dict:
    m = d.mesh
    return {
        "name": d.name,
        "axes": [[a, s] for a, s in m.axes] if m is not None else None,
        "device_ids": m.id_list() if m is not None else None,
        "line": d.line,
        "column": d.column,
        "source": d.source,
        "text": d.text if m is None else None,
    }


def module_json(
    m: ModuleReport,
    *,
    mesh: Mesh | None = None,
    split: str = "xla",
    layouts: bool = False,
    values: bool = True,
    memos: RunMemos | None = None,
) -> dict:
    """A module's JSON; without `values` the "values" key (always last) is left out."""
    d = {
        "name": m.name,
        "line": m.line,
        "section": m.section,
        "dialect": m.dialect,
        "partitioned": m.partitioned,
        "num_partitions": m.num_partitions,
        "meshes": [mesh_json(d) for d in m.meshes],
        "diagnostics": [
            {"severity": d.severity, "message": d.message, "line": d.line, "location": d.location}
            for d in m.diagnostics
        ],
    }
    if values:
        d["values"] = [
            value_json(v, m, text, mesh=mesh, split=split, layouts=layouts, memos=memos)
            for v, text in _with_gspmd(m, memos)
        ]
    return d


def _with_gspmd(m: ModuleReport, memos: RunMemos | None) -> Iterator[tuple[Value, str | None]]:
    """The module's values, each with the GSPMD text of its tiled form (`gspmd_text`), asked
    once per distinct tiled form of the module: its values share the parsed objects, and a
    memo lookup hashes and compares the sharding (a module's own objects, alive through
    the loop, so their ids stay theirs)."""
    texts: dict[int, str | None] = {}
    for v in m.values:
        h = v.hlo
        text = texts.get(id(h), _NO_TEXT)
        if text is _NO_TEXT:
            text = texts[id(h)] = gspmd_text(v, memos)
        yield v, text


_NO_TEXT = object()


#: modules whose JSON is kept by identity for a replay, and the largest JSON so kept
MODULE_JSON_KEPT = 1024
MODULE_JSON_BYTES = 16 << 10
#: distinct module heads (name, line, meshes, ...) whose JSON is kept, and the largest so
#: kept: a dump has a few per module of a few hundred bytes, but a head lists its meshes'
#: devices (megabytes for a pod's mesh: encoded each time, not held)
MODULE_HEADS_KEPT = 4096
MODULE_HEAD_BYTES = 4 << 10


def module_json_bytes(
    m: ModuleReport,
    *,
    mesh: Mesh | None,
    split: str,
    layouts: bool,
    memos: RunMemos,
) -> bytes:
    """`json.dumps(module_json(...))` (ASCII) as bytes, remembered per module content in
    the run's memos:
    copies and pass dumps print the same module at the same lines again and again, and its
    JSON is then written once (the key holds the module's column entries, so their
    identities stay theirs; a module with one-off values is written afresh). A replayed
    module, the same object again, is answered by its identity first."""

    # the very module again: a file repeating one read a little before is replayed with
    # the same (read-only) module objects (`Scanned`), 18k of the cold bench's 34k modules
    setting = (mesh, split, layouts)
    same = memos.identity("inspect.module_json_of", MODULE_JSON_KEPT)
    kept = same.get(m)
    if kept is not None and kept[0] == setting:
        return kept[1]
    head = _head_json_text(m, memos)
    if m.has_own_values():  # no content key
        text = _with_values(head, m, mesh, split, layouts, memos)
    else:
        items, ids = m.entries()
        key = (head, ids, tuple(m.lines), m.partitioned, mesh, split, layouts)
        written = memos.content("inspect.module_json")
        hit = written.get(key)
        if hit is None:
            text = _with_values(head, m, mesh, split, layouts, memos)
            hit = written.put(key, len(items) + len(text) // 64, (items, text))
        text = hit[1]
    if len(text) <= MODULE_JSON_BYTES:
        same.put(m, (setting, text))
    return text


def _head_json_text(m: ModuleReport, memos: RunMemos) -> str:
    """`json.dumps(module_json(m, values=False))`, once per distinct head: every pass file
    of a module prints the same name, line, meshes and diagnostics (json.dumps of them was
    about 10 us a module, 0.2 s of `--format json -j1` over the cold bench)."""
    import json

    key = (
        m.name,
        m.line,
        m.section,
        m.dialect,
        m.partitioned,
        m.num_partitions,
        tuple((d.name, d.mesh, d.line, d.column, d.source, d.text) for d in m.meshes),
        tuple((g.severity, g.message, g.line, g.location) for g in m.diagnostics),
    )
    heads = memos.table("inspect.module_head_json", MODULE_HEADS_KEPT)
    text = heads.get(key)
    if text is None:
        text = json.dumps(module_json(m, values=False))
        if len(text) <= MODULE_HEAD_BYTES:
            heads.put(key, text)
    return text


def _with_values(
    head: str, m: ModuleReport, mesh: Mesh | None, split: str, layouts: bool, memos: RunMemos
) -> bytes:
    """The module's JSON: `head` (its JSON without values) with its "values" last."""
    before = f'{head[:-1]}, "values": '
    if layouts:  # each value's dict encoded, then its devices' JSON formatted from its layout
        import json

        parts = []
        for v, text in _with_gspmd(m, memos):
            own = json.dumps(value_json(v, m, text, mesh=mesh, split=split))[:-1]
            parts.append(f'{own}, "devices": {devices_json_text(v, m, mesh, split, memos)}}}')
        return f"{before}[{', '.join(parts)}]}}".encode("ascii")
    return module_values_json(m, memos, before.encode("ascii"), b"}")


def module_values_json(
    m: ModuleReport, memos: RunMemos | None = None, prefix: bytes = b"", suffix: bytes = b""
) -> bytes:
    """`json.dumps` of the module's values' JSON (`value_json` of each, no layouts) as bytes,
    between `prefix` and `suffix` (a module's whole JSON is its head, these and its end,
    made at once: the values' text made a str, joined to the head's and encoded was three
    copies of most of the output), written a value at a time: only a value's name, place
    and shapes are its own; the rest of its text is encoded once per distinct (kind, op)
    and (dtype, notation, sharding, mesh, GSPMD text) of the run (`_json_pieces`). In C
    when built (`ir/fast/_json.c`: 0.55 us a value), else `values_json_text_py` (1.3 us;
    building each value's dict and encoding it took 2.7 us, and a big file of new lines
    has a million values)."""
    if _native_values_json is not None:
        import json

        heads, tails = _json_pieces(memos)
        got = _native_values_json(
            # the columns themselves: `m.values` made a list (and a copy of each shared
            # line's values) only for this
            (m.lines, m.items, m.partitioned, Value),
            lambda v: gspmd_text(v, memos),
            _json_head,
            _json_tail,
            json.encoder.encode_basestring_ascii,
            heads,
            tails,
            prefix,
            suffix,
        )
        if got is not None:
            return got
    return prefix + values_json_text_py(m, memos).encode("ascii") + suffix


#: distinct pieces of values' JSON a run keeps (a few hundred bytes each)
MAX_JSON_PIECES = 1 << 14


def _json_pieces(memos: RunMemos | None) -> tuple[dict, dict]:
    """The values' JSON pieces encoded so far in the run: by (kind, op), and by (dtype,
    notation, sharding, mesh, GSPMD text). A dump's modules are mostly small and share
    their shardings: encoded once per module, the pieces were a third of writing values."""
    if memos is None:
        return {}, {}
    heads = memos.slot("inspect.json_heads", dict)
    tails = memos.slot("inspect.json_tails", dict)
    if len(heads) + len(tails) > MAX_JSON_PIECES:
        heads.clear()
        tails.clear()
    return heads, tails


_native_values_json = native("values_json")


def values_json_text_py(m: ModuleReport, memos: RunMemos | None = None) -> str:
    """`module_values_json`'s values in Python (a str): the reference for the native one."""
    from json.encoder import encode_basestring_ascii as quoted  # what json.dumps uses

    heads, tails = _json_pieces(memos)
    out = []
    for v, g in _with_gspmd(m, memos):
        k = (v.kind, v.op)
        kind_op = heads.get(k)
        if kind_op is None:
            kind_op = heads[k] = _json_head(*k)
        k = (v.dtype, v.notation, v.text, v.mesh_name, g)
        rest = tails.get(k)
        if rest is None:
            rest = tails[k] = _json_tail(*k)
        out.append(
            f'{{"name": {quoted(v.name)}, "line": {v.line}, "column": {v.column}, {kind_op}'
            f'"shape": {_ints(v.shape)}, "local_shape": {_ints(v.local_shape)}{rest}'
        )
    return "[" + ", ".join(out) + "]"


def _json_head(kind: str, op: str | None) -> str:
    """A value's JSON from its kind to its op, and the comma after it."""
    import json

    return f'"kind": {json.dumps(kind)}, "op": {json.dumps(op)}, '


def _json_tail(
    dtype: str | None, notation: str, text: str, mesh: str | None, gspmd: str | None
) -> str:
    """A value's JSON after its shapes: its dtype to its GSPMD text, and the closing brace."""
    import json

    d = {"dtype": dtype, "notation": notation, "sharding": text, "mesh": mesh, "gspmd": gspmd}
    return ", " + json.dumps(d)[1:]


def _ints(xs: tuple[int, ...] | None) -> str:
    """A shape as `json.dumps` writes it."""
    return "null" if xs is None else "[" + ", ".join(map(str, xs)) + "]"


def own_text(v: Value, memos: RunMemos | None = None) -> str:
    """The value's own sharding as written: its text, except for an element of a tuple
    (`{{...}, {replicated}}`) or of a per-value list holding several (`#sdy.sharding_per_value<
    [<@mesh, ...>, <@mesh, ...>]>`), which shows that element alone (printed)."""
    text = v.text
    s = v.sharding
    if s is None:
        return text
    if v.notation == "gspmd":
        if text.startswith("{{") or text.replace(" ", "").startswith("{{"):
            return gspmd_text(v, memos) or text
        return text
    if text.startswith("#sdy.sharding_per_value"):
        # every op's sharding after Shardy's propagation; one of several is rare (258 in
        # the 929 every-pass fixture files): printed each time
        if memos is None:
            count = _per_value_count(text)
        else:
            count = memos.table("inspect.per_value_count").call(_per_value_count, text)
        if count > 1:
            from meshdiag.notation.shardy import print_sdy_sharding

            return print_sdy_sharding(s)
    return text


def _per_value_count(text: str) -> int:
    lb = text.find("[")
    end = match_end(text, lb) if lb >= 0 else -1
    return len(split_top(text, lb + 1, end - 1)) if end > 0 else 1


def gspmd_text(v: Value, memos: RunMemos | None = None) -> str | None:
    """The V2 text of the value's tiled form (None without one, or when it has none)."""
    h = v.hlo
    if h is None:
        return None
    return (
        _print_gspmd(h)
        if memos is None
        else memos.table("inspect.gspmd_text").call(_print_gspmd, h)
    )


def _print_gspmd(h) -> str | None:
    """The V2 text of a tiled sharding."""
    from meshdiag.notation.gspmd import print_gspmd

    try:
        return print_gspmd(h)
    except MeshdiagError:
        return None


def value_mesh(v: Value, m: ModuleReport, mesh: Mesh | None) -> Mesh | None:
    """The mesh a value's devices come from: its own Shardy mesh, else the global one."""
    s = v.sharding
    own = getattr(s, "mesh", None)
    if own is not None:
        return own
    if v.mesh_name:
        for d in m.meshes:
            if d.name == v.mesh_name and d.mesh is not None:
                return d.mesh
    return mesh


def num_devices(v: Value, m: ModuleReport, mesh: Mesh | None) -> int | None:
    """Every device of the value's mesh, else `num_partitions`; None when neither is known
    (the layout then takes the tile assignment's devices)."""
    vm = value_mesh(v, m, mesh)
    if vm is not None and not vm.is_maximal:
        return vm.size
    if m.num_partitions:
        return m.num_partitions
    return None


def value_layout(v: Value, n: int | None, split: str, memos: RunMemos | None = None):
    """The per-device Layout of `v` (None without a global shape or tiled form) over `n`
    devices (its module's, `num_devices`: the callers key pictures by it); the run's `memos`
    keep what its sharding's layouts share, not the layout itself (`layout`'s `keep`)."""
    h = v.hlo
    if h is None or v.shape is None:
        return None
    from meshdiag.layouts.engine import layout

    try:
        return layout(
            h, v.shape, split=split, num_devices=layout_devices(h, n), memos=memos, keep=False
        )
    except MeshdiagError:
        return None


def layout_devices(h: HloSharding, n: int | None) -> int | None:
    """The device count a value's layout is made over: its module's `n`, or None (every
    device the sharding names) when the sharding names more devices than the module has."""
    named = h.num_devices
    return None if named is not None and n is not None and named > n else n


def value_json(
    v: Value,
    m: ModuleReport,
    gspmd: str | None,
    *,
    mesh: Mesh | None = None,
    split: str = "xla",
    layouts: bool = False,
    memos: RunMemos | None = None,
) -> dict:
    """A value's JSON; `gspmd`: the GSPMD text of its tiled form (`gspmd_text`). With
    `layouts`, its devices' slices, laid out with the run's `memos` (which keep what a
    sharding's layouts share)."""
    d = {
        "name": v.name,
        "line": v.line,
        "column": v.column,
        "kind": v.kind,
        "op": v.op,
        "shape": list(v.shape) if v.shape is not None else None,
        "local_shape": list(v.local_shape) if v.local_shape is not None else None,
        "dtype": v.dtype,
        "notation": v.notation,
        "sharding": v.text,
        "mesh": v.mesh_name,
        "gspmd": gspmd,
    }
    if layouts:
        lay = checked_layout(v, num_devices(v, m, mesh), split, memos)
        d["devices"] = [s.to_json() for s in lay.devices()] if lay is not None else None
    return d


#: a value's "devices" JSON is kept per distinct layout when it has at most this many
#: characters (a few dozen devices), and at most this many of them (16 MB at most)
DEVICES_JSON_MAX_CHARS = 4096
DEVICES_JSON_KEPT = 4096


def devices_json_text(
    v: Value, m: ModuleReport, mesh: Mesh | None, split: str, memos: RunMemos
) -> str:
    """The JSON of the value's "devices" (`checked_layout`'s, formatted from its arrays),
    kept in the run's `memos` per (tiled form, shape, device count, split), everything its
    layout is made from: an every-pass dump lays the same few values out in pass after
    pass. (A kept text lists few devices, checked by `checked_layout` when made: under the
    run's limit of listed devices.)"""
    h = v.hlo
    if h is None or v.shape is None:
        return "null"  # (no layout: `value_layout`)
    n = num_devices(v, m, mesh)
    key = (h, v.shape, n, split)
    known = memos.table("inspect.devices_json", DEVICES_JSON_KEPT)
    text = known.get(key)
    if text is None:
        lay = checked_layout(v, n, split, memos)
        text = "null" if lay is None else f"[{lay.devices_json_text()}]"
        if len(text) <= DEVICES_JSON_MAX_CHARS:
            known.put(key, text)
    return text


def checked_layout(v: Value, n: int | None, split: str, memos: RunMemos | None) -> Layout | None:
    """The value's layout over its module's `n` devices (`value_layout`, `num_devices`)
    for its JSON's "devices", refused (LimitError) when it would list more devices than a
    value may."""
    from meshdiag.limits import check_listed_devices

    lay = value_layout(v, n, split, memos)
    if lay is not None:
        check_listed_devices(lay.num_devices, f"{v.name} (line {v.line}:{v.column})")
    return lay
