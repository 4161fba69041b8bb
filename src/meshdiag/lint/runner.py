"""Run the checks over files: one function per file (`lint_file`), fanned out over worker
processes, merged in the same order a serial run gives.

Per file: scan the IR (streaming) or read a mesh config → run the enabled module checks
(`meshdiag.pipeline.inspect.run_checks`, so lint and inspect report the same findings) →
drop per-file-ignored codes → drop comment-suppressed findings (reading only the lines around
findings). The baseline and the exit threshold are applied by the caller over the whole run.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import stat
import sys
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from meshdiag.checks.context import CheckContext
from meshdiag.errors import MeshdiagError
from meshdiag.fileio import describe_os_error
from meshdiag.ir.model import FileReport
from meshdiag.ir.parts import FilePart, Parts, file_parts
from meshdiag.ir.scan import partitioned_by_name, read_ahead, read_small_file
from meshdiag.lint.config import CONFIG_NAMES, LintSettings
from meshdiag.lint.meshfile import MESH_FILE_CODES, MESH_SUFFIXES, as_module, read_mesh_file
from meshdiag.lint.select import ignored_for
from meshdiag.lint.suppress import apply_comments
from meshdiag.model.findings import Finding
from meshdiag.pipeline.inspect import (
    joined_findings,
    logical_global_mesh,
    run_checks,
    scan_checked,
    scan_checked_part,
)

if TYPE_CHECKING:
    from meshdiag.comms.scan import CollectiveSniff

#: what the scanner reads to tell a binary file (`ir.scan.SNIFF`)
SNIFF = 8192

#: directories never descended into (version control, environments, caches)
SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", ".venv", "venv", "__pycache__", "node_modules", ".tox", ".nox"}
)
#: files a directory walk leaves out: never IR (the scanner skips binaries itself too)
NOT_IR = (
    ".py",
    ".pyi",
    ".md",
    ".rst",
    ".yaml",
    ".yml",
    ".cfg",
    ".ini",
    ".lock",
    ".sh",
    ".c",
    ".cc",
    ".cpp",
    ".h",
    ".hpp",
    ".rs",
    ".html",
    ".svg",
    ".dot",
    ".pdf",
    ".png",
    ".jpg",
    ".pb",
    ".o",
    ".ll",  # LLVM IR an XLA dump writes next to its HLO
    ".so",
    ".a",
    ".bin",
    ".npy",
    ".npz",
    ".pyc",
    ".whl",
    ".zip",
    ".tar",
)


#: what findings and reports call a dump read from stdin (as `inspect` does)
STDIN = "<stdin>"


def display_path(path: str, cwd: str | None = None) -> str:
    """`path` relative to the working directory when it is below it, else as given;
    `<stdin>` for `-`."""
    if path == "-":
        return STDIN
    normal = os.sep == "/" and path[:1] != "" and not (_DOTS & set(path[1:].split("/")))
    if normal and path[0] != "/":
        return path  # already relative and normal: the walk's paths below a relative root
    cwd = cwd or os.getcwd()
    # os.path.abspath, cwd read once (a walk's paths below an absolute root are normal)
    absolute = path if normal else os.path.normpath(os.path.join(cwd, path))
    if absolute == cwd:
        return "."
    prefix = cwd.rstrip(os.sep) + os.sep
    if absolute.startswith(prefix):
        return absolute[len(prefix) :]  # os.path.relpath of a normalised path below cwd
    return path


_DOTS = frozenset({"", ".", ".."})


def _lintable(name: str) -> bool:
    """Files a directory walk picks: what `inspect` reads (any text file), minus sources and
    documents that are never IR, and project config files."""
    lower = name.lower()
    base = lower[:-3] if lower.endswith(".gz") else lower
    return not base.endswith(NOT_IR) and name not in CONFIG_NAMES


def walk_files(paths: Sequence[str], settings: LintSettings) -> Iterator[str]:
    """Files to lint, as the walk finds them: named files as they are, directories walked in
    sorted order (like `inspect`'s walk, pruning VCS and environment directories, leaving
    out FIFOs, sockets and devices), anything matching an `exclude` glob dropped. A path
    that does not exist is an error before any file.

    Finding nothing that could be read is an error once the walk is over (a gate that
    checked nothing must not pass), which says which directory could not be read; a tree
    whose every file is excluded by the user's globs is not (that was asked for)."""
    seen: set[str] = set()
    unreadable: list[tuple[str, str]] = []
    counts = {"files": 0, "excluded": 0}

    def excluded(p: str) -> bool:
        return any(g.matches(p) for g in settings.exclude)

    def new(p: str, key: str | None = None) -> bool:
        """Whether `p` is a file to lint not found before (counted)."""
        key = key or os.path.realpath(p)
        if key in seen:
            return False
        if excluded(p):
            counts["excluded"] += 1
            return False
        seen.add(key)
        counts["files"] += 1
        return True

    def walk(top: str, real_top: str) -> Iterator[str]:
        """`top`'s files in sorted order, then its subdirectories' (like os.walk, which
        does not descend into symlinked directories), from one scandir per directory: the
        entries say what is a directory, a regular file or a symlink without a syscall per
        file. A directory's real path is its parent's plus its name (symlinked directories
        are not entered). Iterative: a tree thousands of levels deep needs no recursion."""
        stack = [(top, real_top)]
        while stack:
            root, real_root = stack.pop()
            try:
                with os.scandir(root) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError as e:
                unreadable.append((root, describe_os_error(e)))
                continue
            real_prefix = real_root if real_root.endswith(os.sep) else real_root + os.sep
            subdirs = []
            for e in entries:
                try:
                    is_dir = e.is_dir()
                    is_file = not is_dir and e.is_file()  # FIFOs, sockets, devices: no
                except OSError:
                    is_dir = is_file = False
                if is_dir:
                    if e.is_symlink() or e.name in SKIP_DIRS:
                        continue
                    if excluded(e.path):
                        counts["excluded"] += 1
                    else:
                        subdirs.append((e.path, real_prefix + e.name))
                elif is_file and _lintable(e.name):
                    # a plain file's real path is its directory's plus its name
                    if new(e.path, None if e.is_symlink() else real_prefix + e.name):
                        yield e.path
            stack.extend(reversed(subdirs))

    dirs = [_is_dir(p) for p in paths]  # every path checked before the first file
    for p, is_dir in zip(paths, dirs, strict=True):
        if p == "-":  # a dump on stdin
            if new(p, p):
                yield p
        elif is_dir:
            yield from walk(p, os.path.realpath(p))
        elif new(p):
            yield p  # named files are read whatever they are (a FIFO is read once)
    if not counts["files"] and not counts["excluded"]:
        raise MeshdiagError(_nothing_to_lint(paths, unreadable))


def _is_dir(p: str) -> bool:
    """Whether a named path is a directory; MeshdiagError when it cannot be read at all."""
    if p == "-":
        return False
    try:
        return stat.S_ISDIR(os.stat(p).st_mode)
    except OSError as e:
        if e.errno == errno.ENOENT and not os.path.lexists(p):
            raise MeshdiagError(f"{p}: no such file or directory") from None
        if e.errno == errno.ENOENT:
            raise MeshdiagError(f"{p}: broken symbolic link") from None
        raise MeshdiagError(f"{p}: {describe_os_error(e)}") from None


def _nothing_to_lint(paths: Sequence[str], unreadable: list) -> str:
    if unreadable:
        path, why = unreadable[0]
        more = f" (and {len(unreadable) - 1} more)" if len(unreadable) > 1 else ""
        return f"nothing to lint: cannot read directory {path}: {why}{more}"
    return f"nothing to lint: no dump or mesh files in {', '.join(paths)}"


# -- one file --------------------------------------------------------------------------------


def _checks(codes: Iterable[str], kind: str = "module") -> dict:
    """The checks of `codes` over a scanned module (or over its measured collectives, for
    `kind="collectives"`); codes without such a check, like MD001, have none."""
    from meshdiag.checks.registry import collective_checks, module_checks

    registered = module_checks() if kind == "module" else collective_checks()
    return {c: registered[c] for c in codes if c in registered}


_NONE: frozenset[str] = frozenset()


def _selection(
    settings: LintSettings, rules_path: str
) -> tuple[list[str], dict, dict, frozenset[str]]:
    """(enabled codes sorted, their module checks, their collective checks, the enabled
    set) for the file whose per-file ignores match `rules_path`, made once per distinct
    set of ignores, not once per file."""
    off = ignored_for(rules_path, settings.per_file_ignores) if settings.per_file_ignores else _NONE
    chosen = settings.memos.table("lint.selection", 64)
    hit = chosen.get(off)
    if hit is None:
        codes = sorted(c for c in settings.codes if c not in off)
        hit = chosen.put(
            off, (codes, _checks(codes), _checks(codes, "collectives"), frozenset(codes))
        )
    return hit


def lint_file(path: str, settings: LintSettings, data: bytes | None = None) -> list[Finding]:
    """Every enabled, unsuppressed finding for one file, sorted. Needs nothing but the path
    and the settings, so it runs in worker processes. `data`: the bytes of a small regular
    file, read ahead (`ir.scan.read_ahead`), or None.

    A file that can only be read once — `-` (stdin, called `--stdin-filename` if given), a
    named FIFO, a `<(process substitution)` — is copied to a temporary file first (in
    bounded chunks), so suppression comments can be read back without reading it again."""
    if data is not None:  # read as a small regular file
        return _lint_file(path, settings, display_path(path), data=data)
    if path == "-":
        name = settings.stdin_filename
        return _lint_once(sys.stdin.buffer, settings, name or STDIN, name or "-")
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = stat.S_IFREG  # the scan reports why it cannot be read
    shown = display_path(path)
    if stat.S_ISREG(mode):
        return _lint_file(path, settings, shown)
    if not stat.S_ISFIFO(mode):
        raise MeshdiagError(f"{shown}: is a device or socket, not a dump file")
    try:
        with open(path, "rb") as stream:
            return _lint_once(stream, settings, shown, path)
    except OSError as e:
        raise MeshdiagError(f"cannot read {shown}: {describe_os_error(e)}") from None


def _lint_once(stream, settings: LintSettings, shown: str, name: str) -> list[Finding]:
    """`lint_file` of a stream read once into a temporary file; `name` is what per-file
    ignores and the mesh-file test see."""
    import shutil
    import tempfile

    suffix = os.path.splitext(name)[1] if name.endswith(MESH_SUFFIXES) else ".txt"
    with tempfile.NamedTemporaryFile(prefix="meshdiag-stdin-", suffix=suffix) as tmp:
        head = stream.read(SNIFF)
        tmp.write(head)
        if b"\0" not in head:  # binary input is skipped by the scan: no need for the rest
            shutil.copyfileobj(stream, tmp, 1 << 20)
        tmp.flush()
        return _lint_file(tmp.name, settings, shown, rules_path=name)


def _lint_file(
    path: str,
    settings: LintSettings,
    shown: str,
    rules_path: str | None = None,
    data: bytes | None = None,
) -> list[Finding]:
    """`lint_file` of the file at `path`, reported as `shown`; per-file ignores match
    `rules_path` (default: `path`). `data`: its bytes when read already."""

    rules_path = path if rules_path is None else rules_path
    name = path if rules_path == "-" else rules_path  # what the file is called
    codes, checks, collective, enabled = _selection(settings, rules_path)
    where = (settings.mesh, settings.target, settings.split)
    findings: list[Finding]
    key = None  # what the findings depend on, for a small dump file (see below)
    if name.endswith(MESH_SUFFIXES):  # configs, never IR
        mf = read_mesh_file(path, shown) if os.path.basename(name) not in CONFIG_NAMES else None
        if mf is None:
            return []
        if mf.mesh is None:
            from meshdiag.checks.registry import get_rule

            findings = [
                get_rule("MD001").finding(mf.error, path=shown, line=mf.line, column=mf.column)
            ]
        else:
            report = FileReport(shown, modules=[as_module(mf)])
            mesh_codes = [c for c in codes if c in MESH_FILE_CODES]
            findings = run_checks(report, *where, checks=_checks(mesh_codes), memos=settings.memos)
    else:
        if data is None:  # a small file is read once, for both scans
            data = read_small_file(path)
        if data is not None:
            # every-pass dumps repeat a file read a little before (see `scan_checked`): the
            # same bytes, name hint, rules and device assignment give the same findings
            logical = logical_global_mesh(path, settings.mesh, settings.memos)
            key = (data, partitioned_by_name(path), codes, settings, logical)
            hit = settings.memos.recent("lint.recent_files").get(data, key)
            if hit is not None:
                before, found = hit
                return [
                    f if f.path != before else dataclasses.replace(f, path=shown) for f in found
                ]
        # the same checks, the same way, as `meshdiag inspect` (only the enabled ones),
        # each module judged as it ends: a big file is never held whole, nor read twice
        # (its search for collectives sees what the scan reads)
        sniff = _sniff(collective, data)
        findings = scan_checked(
            path,
            *where,
            checks=checks,
            memos=settings.memos,
            data=data,
            replay=False,
            on_block=sniff,
        )[2]
        unreadable = {f.line for f in findings if f.code == "MD001"}
        findings += _collective_findings(
            path, shown, settings, collective, data, unreadable, sniffed=sniff
        )
    findings = _reported(findings, enabled, shown, path)
    if key is not None:
        settings.memos.recent("lint.recent_files").put(key[0], key, (shown, findings))
    return findings


_UNKNOWN = object()  # not worked out yet (a memo's answer may be None)


def _sniff(checks: dict, data: bytes | None) -> CollectiveSniff | None:
    """What a big file's sharding scan shows its buffers to (`comms.scan.CollectiveSniff`),
    when collective `checks` are enabled; None for a file read already (`data`)."""
    if not checks or data is not None:
        return None
    from meshdiag.comms.scan import CollectiveSniff

    return CollectiveSniff()


def _collective_findings(
    path: str,
    shown: str,
    settings: LintSettings,
    checks: dict,
    data: bytes | None = None,
    unreadable: Collection[int] = (),
    part: FilePart | None = None,
    sniffed: CollectiveSniff | None = None,
) -> list[Finding]:
    """The enabled collective `checks` (MD201-MD203) over the file's collectives, the same
    way `meshdiag comms` runs them; nothing (no second read) when none is enabled, or when
    the file's bytes (`data`, when read already; a big file's, as its sharding scan read
    them, `sniffed`, else read again in chunks) name no collective. `unreadable`: the lines
    of the sharding scan's MD001s (a problem both scans find is reported once; with any, the
    scan did not see every line: its `sniffed` does not count). `part`: only that part of
    the file (`ir.parts`)."""
    if not checks:
        return []
    # imported here, not at the top: a lint of files that name no collective never loads the
    # measuring and the checks; one module per statement (a statement costs about 0.7 µs a
    # call, and this runs for every file)
    from meshdiag.comms import scan as comms_scan

    if data is not None and not comms_scan.may_hold_collectives(data):
        return []  # nothing to measure, and nothing the collective scan alone could find
    if data is None and sniffed is not None and not unreadable:  # asked of what was read
        if not sniffed.maybe:
            return []
    elif data is None:  # a big file, or a part of one: asked in chunks
        start, stop = (part.start, part.stop) if part is not None else (0, None)
        if not comms_scan.file_may_hold_collectives(path, start, stop):
            return []
    from meshdiag.pipeline import comms_checks

    ctx = CheckContext(
        shown,
        mesh=settings.mesh,
        target=settings.target,
        split=settings.split,
        collective_budget=settings.collective_budget,
        remat_min_bytes=settings.remat_min_bytes,
        memos=settings.memos,
    )
    memo = comms_scan.run_memo(settings.memos)  # the run's (this process's)
    if data is not None:
        # the settings are the run's (its memos are theirs): what the checks read differs
        # only with the checks (per-file ignores), so it is worked out once per set of them
        table = settings.memos.table("lint.judged", 64)
        judged = table.get(tuple(checks), _UNKNOWN)
        if judged is _UNKNOWN:
            judged = table.put(tuple(checks), comms_checks.judged_before_scan(checks, ctx))
        if judged is not None and comms_scan.reads_clean(data, memo, judged):
            # the checks may judge none of its collectives (by default only MD202 judges,
            # only all-gathers of at least remat-min-bytes), and its scan would find no
            # problem: nothing to report
            return []
    if part is not None:
        scanned = comms_scan.scan_part(path, part.start, part.stop, part.line, memo)
    elif data is None:
        scanned = comms_scan.scan_path(path, memo)
    else:
        scanned = comms_scan.scan_bytes(path, data, memo, remember=False)
    _, found = comms_checks.run_collective_checks(
        scanned, ctx, checks, unreadable, judged_only=True
    )
    return found


# -- a big file in parts (`ir.parts`) --------------------------------------------------------

#: a part's findings, before the whole file's are put together: the scan's MD001s, the
#: module checks' and the collective checks'
PartFindings = tuple[list[Finding], list[Finding], list[Finding]]


def lint_part(part: FilePart, settings: LintSettings) -> PartFindings:
    """`lint_file`'s work on one part of a big file, in a worker: the findings of its
    modules, for `join_parts` to filter, suppress and sort with the other parts'."""
    path = part.path
    _, checks, collective, _ = _selection(settings, path)
    where = (settings.mesh, settings.target, settings.split)
    sniff = _sniff(collective, None)
    _, scanned, checked = scan_checked_part(
        part, *where, checks, None, settings.memos, on_block=sniff
    )
    unreadable = {f.line for f in (*scanned, *checked) if f.code == "MD001"}
    found = _collective_findings(
        path, display_path(path), settings, collective, None, unreadable, part, sniff
    )
    return scanned, checked, found


def join_parts(path: str, parts: list[PartFindings], settings: LintSettings) -> list[Finding]:
    """A big file's findings from its parts' (`lint_part`, in order), as `lint_file` gives
    them for the whole file: enabled ones, unsuppressed, sorted."""
    shown = display_path(path)
    enabled = _selection(settings, path)[3]
    findings = joined_findings([(scanned, checked) for scanned, checked, _ in parts])
    findings.extend(f for _, _, found in parts for f in found)
    return _reported(findings, enabled, shown, path)


def _reported(findings: list[Finding], enabled, shown: str, path: str) -> list[Finding]:
    """A file's findings as `lint` reports them: the `enabled` codes only, at `shown`,
    without those a comment in the file at `path` suppresses, sorted."""
    findings = [
        f if f.path == shown else dataclasses.replace(f, path=shown)
        for f in findings
        if f.code in enabled
    ]
    findings, _ = apply_comments(findings, path)
    findings.sort(key=Finding.sort_key)
    return findings


# -- many files ------------------------------------------------------------------------------

_SETTINGS: LintSettings | None = None
_LINT_FILE = None  # the parent's `lint_file`, as it was when the pool started
_NAMED: frozenset[str] | None = None  # the paths the user named (`lint_files`)


def _init_worker(settings: LintSettings, fn=None, named: frozenset[str] | None = None) -> None:
    global _SETTINGS, _LINT_FILE, _NAMED
    _SETTINGS = settings
    _LINT_FILE = fn
    _NAMED = named


def _work(paths: list[str]) -> list[tuple]:
    """Runs in a worker: per file of a batch, ("ok", its findings), or (what went wrong,
    one line saying it, the file) — never a traceback across the process boundary; the
    batch stops at its first error (the run stops there)."""
    if paths and paths[0].__class__ is FilePart:  # one part of a big file: ("part", ...)
        part = paths[0]
        return [_outcome(part.path, "part", _part_of, part)]
    out: list[tuple] = []
    for path, data in read_ahead(paths, _NAMED):
        out.append(_outcome(path, "ok", _LINT_FILE or lint_file, path, _SETTINGS, data))
        if out[-1][0] != "ok":
            break
    return out


def _part_of(part: FilePart) -> tuple:
    return part, lint_part(part, _SETTINGS)  # type: ignore[arg-type]


def _outcome(path: str, kind: str, work, *args) -> tuple:
    """(kind, `work(*args)`), or (what went wrong, one line saying it, `path`)."""
    try:
        return (kind, work(*args))
    except MeshdiagError as e:
        return ("error", str(e), path)
    except Exception as e:  # a bug in a check or the scanner
        return ("internal", f"{type(e).__name__}: {e}", path)


def _raise(path: str, kind: str, message: str) -> None:
    if kind == "error":
        raise MeshdiagError(f"{display_path(path)}: {message}")
    raise MeshdiagError(
        f"internal error while linting {display_path(path)}: {message} "
        "(rerun with --jobs 1 and MESHDIAG_DEBUG=1 for the traceback)"
    )


def lint_files(
    files: Iterable[str],
    settings: LintSettings,
    jobs: int | None = None,
    named: frozenset[str] | None = None,
):
    """Findings for all files (sorted by path, line, column, code), serial or parallel.

    `files` may be a walk going on: they go to the workers in batches of about equal bytes
    as they come (`ir.batches.stream`, as `inspect` hands them out), so the workers start
    while the walk and the sizing go on; a run with too few bytes to pay for the workers
    is linted in this process. `named`: the paths the user named, when `files` is their
    walk (`walk_files`): the others are read without a stat first (`ir.scan.read_ahead`)."""
    from meshdiag.ir.batches import stream
    from meshdiag.pipeline.inspect import default_jobs

    jobs = default_jobs() if jobs is None else jobs
    if jobs < 1:
        raise MeshdiagError(f"--jobs must be at least 1, got {jobs}")
    batches, parallel = stream(files, jobs, _split)
    findings: list[Finding] = []
    if parallel:
        findings = _parallel(batches, settings, jobs, named)
    else:
        for batch in batches:  # in-process: errors propagate with their own message
            for path, data in read_ahead(batch, named):
                findings.extend(lint_file(path, settings, data))
    findings.sort(key=Finding.sort_key)
    return findings


def _split(path: str, size: int, jobs: int) -> Parts | None:
    """A big dump file's parts for the workers (`ir.parts`); mesh config files are read
    whole."""
    return None if path.endswith(MESH_SUFFIXES) else file_parts(path, size, jobs)


def _parallel(
    batches: Iterator[list[str]],
    settings: LintSettings,
    jobs: int,
    named: frozenset[str] | None = None,
) -> list[Finding]:
    import multiprocessing

    from meshdiag.cleanup import signals_deferred
    from meshdiag.pipeline.inspect import map_files, mp_context

    # fork only while this process is single-threaded (forking JAX's thread pools can
    # deadlock a worker), else forkserver/spawn. Workers run the `lint_file` this module
    # has now; one that cannot be pickled (replaced by a local function) reaches them only
    # by fork.
    fn = lint_file
    mp = mp_context() if _picklable(fn) else multiprocessing.get_context("fork")
    findings: list[Finding] = []
    results = map_files(
        _work,
        batches,
        jobs,
        _init_worker,
        (settings, fn, named),
        context=mp,
        died="a lint worker process died (out of memory or killed); rerun with --jobs 1",
        parallel=True,
        chunksize=1,
    )
    parts: list[PartFindings] = []  # of the big file being read in parts
    try:
        for outcomes in results:
            for outcome in outcomes:
                if outcome[0] == "part":
                    part, found = outcome[1]
                    parts.append(found)
                    if part.last:
                        findings.extend(join_parts(part.path, parts, settings))
                        parts = []
                    continue
                if outcome[0] != "ok":
                    _raise(outcome[2], outcome[0], outcome[1])
                findings.extend(outcome[1])
    finally:
        # a block of its own, not only the pool's: entered on the way out of a Ctrl-C, it
        # knows the next one is the user's second (see `cleanup`)
        with signals_deferred():
            results.close()  # stops the pool, cancelling what has not started
    return findings


def _picklable(fn) -> bool:
    import pickle

    try:
        pickle.dumps(fn)
    except (pickle.PicklingError, AttributeError, TypeError):
        return False
    return True
