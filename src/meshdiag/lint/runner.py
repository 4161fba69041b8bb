"""Run the checks over files: one function per file (`lint_file`), fanned out over worker
processes, merged in the same order a serial run gives.

Per file: scan the IR (streaming) or read a mesh config → run the enabled module checks
(`meshdiag.inspect.run_checks`, so lint and inspect report the same findings) →
drop per-file-ignored codes → drop comment-suppressed findings (reading only the lines around
findings). The baseline and the exit threshold are applied by the caller over the whole run.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Sequence
from functools import lru_cache

from ..errors import MeshdiagError
from ..findings import Finding
from .config import CONFIG_NAMES, LintSettings
from .meshfile import MESH_FILE_CODES, MESH_SUFFIXES, as_module, read_mesh_file
from .select import ignored_for
from .suppress import apply_comments

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
    if os.sep == "/" and path[:1] not in ("/", "") and not (_DOTS & set(path.split("/"))):
        return path  # already relative and normal: the walk's paths below a relative root
    cwd = cwd or os.getcwd()
    absolute = os.path.normpath(os.path.join(cwd, path))  # os.path.abspath, cwd read once
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


def discover(paths: Sequence[str], settings: LintSettings) -> list[str]:
    """Files to lint: named files as they are, directories walked in sorted order (like
    `inspect`'s walk, pruning VCS and environment directories), anything matching an
    `exclude` glob dropped."""
    out: list[str] = []
    seen: set[str] = set()

    def excluded(p: str) -> bool:
        return any(g.matches(p) for g in settings.exclude)

    def add(p: str, key: str | None = None) -> None:
        key = key or os.path.realpath(p)
        if key not in seen and not excluded(p):
            seen.add(key)
            out.append(p)

    def walk(root: str, real_root: str) -> None:
        """`root`'s files in sorted order, then its subdirectories' (like os.walk, which
        does not descend into symlinked directories), from one scandir per directory: the
        entries say what is a directory or a symlink without a syscall per file.
        `real_root` is root's real path (a subdirectory's is its parent's plus its name:
        symlinked directories are not entered)."""
        try:
            with os.scandir(root) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return  # unreadable directory: os.walk skips it too
        real_prefix = real_root if real_root.endswith(os.sep) else real_root + os.sep
        subdirs = []
        for e in entries:
            try:
                is_dir = e.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                if not e.is_symlink() and e.name not in SKIP_DIRS and not excluded(e.path):
                    subdirs.append((e.path, real_prefix + e.name))
            elif _lintable(e.name):
                # a plain file's real path is its directory's plus its name
                add(e.path, None if e.is_symlink() else real_prefix + e.name)
        for d, real_d in subdirs:
            walk(d, real_d)

    for p in paths:
        if p == "-":  # a dump on stdin
            add(p, p)
        elif os.path.isdir(p):
            walk(p, os.path.realpath(p))
        elif os.path.exists(p):
            add(p)
        else:
            raise MeshdiagError(f"{p}: no such file or directory")
    return out


# -- one file --------------------------------------------------------------------------------


_REGISTERED: dict | None = None


def _checks(codes: Iterable[str]) -> dict:
    """The module checks of `codes` (codes without a module check, like MD001, have none)."""
    global _REGISTERED
    if _REGISTERED is None:  # once per process: loading the registry walks the package
        from ..checks.registry import module_checks

        _REGISTERED = module_checks()
    return {c: _REGISTERED[c] for c in codes if c in _REGISTERED}


_NONE: frozenset[str] = frozenset()


@lru_cache(maxsize=64)
def _selection(all_codes, off: frozenset[str]) -> tuple[list[str], dict, frozenset[str]]:
    """(enabled codes sorted, their module checks, the enabled set) once per distinct set of
    per-file ignores, not once per file."""
    codes = sorted(c for c in all_codes if c not in off)
    return codes, _checks(codes), frozenset(codes)


def lint_file(path: str, settings: LintSettings) -> list[Finding]:
    """Every enabled, unsuppressed finding for one file, sorted. Needs nothing but the path
    and the settings, so it runs in worker processes. `-` is a dump on stdin: copied to a
    temporary file first (in bounded chunks), so suppression comments can be read back."""
    if path != "-":
        return _lint_file(path, settings, display_path(path))
    import shutil
    import sys
    import tempfile

    with tempfile.NamedTemporaryFile(prefix="meshdiag-stdin-", suffix=".txt") as tmp:
        shutil.copyfileobj(sys.stdin.buffer, tmp, 1 << 20)
        tmp.flush()
        return _lint_file(tmp.name, settings, STDIN, rules_path="-")


def _lint_file(
    path: str, settings: LintSettings, shown: str, rules_path: str | None = None
) -> list[Finding]:
    """`lint_file` of the file at `path`, reported as `shown`; per-file ignores match
    `rules_path` (default: `path`)."""
    from ..inspect import run_checks
    from ..ir.model import FileReport

    rules_path = path if rules_path is None else rules_path
    off = ignored_for(rules_path, settings.per_file_ignores) if settings.per_file_ignores else _NONE
    codes, checks, enabled = _selection(settings.codes, off)
    where = (settings.mesh, settings.target, settings.split)
    findings: list[Finding]
    if path.endswith(MESH_SUFFIXES):  # configs, never IR
        mf = read_mesh_file(path) if os.path.basename(path) not in CONFIG_NAMES else None
        if mf is None:
            return []
        if mf.mesh is None:
            from ..checks.registry import get_rule

            findings = [
                get_rule("MD001").finding(mf.error, path=shown, line=mf.line, column=mf.column)
            ]
        else:
            report = FileReport(shown, modules=[as_module(mf)])
            mesh_codes = [c for c in codes if c in MESH_FILE_CODES]
            findings = run_checks(report, *where, checks=_checks(mesh_codes))
    else:
        from ..inspect import scan_checked

        # the same checks, the same way, as `meshdiag inspect` (only the enabled ones),
        # each module judged as it ends: a big file is never held whole
        findings = scan_checked(path, *where, checks=checks)[2]
    findings = [
        f if f.path == shown else dataclasses.replace(f, path=shown)
        for f in findings
        if f.code in enabled
    ]
    findings, _ = apply_comments(findings, path)
    return sorted(findings, key=Finding.sort_key)


# -- many files ------------------------------------------------------------------------------

_SETTINGS: LintSettings | None = None
_LINT_FILE = None  # the parent's `lint_file`, as it was when the pool started


def _init_worker(settings: LintSettings, fn=None) -> None:
    global _SETTINGS, _LINT_FILE
    _SETTINGS = settings
    _LINT_FILE = fn


def _work(path: str) -> tuple[str, list[Finding] | str]:
    """Runs in a worker: findings, or one line saying what went wrong (never a traceback
    across the process boundary)."""
    try:
        return "ok", (_LINT_FILE or lint_file)(path, _SETTINGS)
    except MeshdiagError as e:
        return "error", str(e)
    except Exception as e:  # a bug in a check or the scanner
        return "internal", f"{type(e).__name__}: {e}"


def _raise(path: str, kind: str, message: str) -> None:
    if kind == "error":
        raise MeshdiagError(f"{display_path(path)}: {message}")
    raise MeshdiagError(
        f"internal error while linting {display_path(path)}: {message} "
        "(rerun with --jobs 1 and MESHDIAG_DEBUG=1 for the traceback)"
    )


def lint_files(files: Sequence[str], settings: LintSettings, jobs: int | None = None):
    """Findings for all files (sorted by path, line, column, code), serial or parallel."""
    from ..inspect import default_jobs

    jobs = default_jobs() if jobs is None else jobs
    if jobs < 1:
        raise MeshdiagError(f"--jobs must be at least 1, got {jobs}")
    jobs = min(jobs, len(files))
    findings: list[Finding] = []
    if jobs <= 1:
        for path in files:  # in-process: errors propagate with their own message
            findings.extend(lint_file(path, settings))
    else:
        findings = _parallel(files, settings, jobs)
    findings.sort(key=Finding.sort_key)
    return findings


def _parallel(files: Sequence[str], settings: LintSettings, jobs: int) -> list[Finding]:
    import multiprocessing

    from ..inspect import map_files, mp_context

    # fork only while this process is single-threaded (forking JAX's thread pools can
    # deadlock a worker), else forkserver/spawn. Workers run the `lint_file` this module
    # has now; one that cannot be pickled (replaced by a local function) reaches them only
    # by fork.
    fn = lint_file
    mp = mp_context() if _picklable(fn) else multiprocessing.get_context("fork")
    # biggest files first so one large dump does not finish last on a single core
    order = sorted(files, key=_size, reverse=True)
    findings: list[Finding] = []
    results = map_files(
        _work,
        order,
        jobs,
        _init_worker,
        (settings, fn),
        min_files=2,
        context=mp,
        died="a lint worker process died (out of memory or killed); rerun with --jobs 1",
    )
    try:
        for path, (kind, value) in zip(order, results, strict=True):
            if kind != "ok":
                _raise(path, kind, value)
            findings.extend(value)
    finally:
        results.close()  # stops the pool, cancelling what has not started
    return findings


def _picklable(fn) -> bool:
    import pickle

    try:
        pickle.dumps(fn)
    except (pickle.PicklingError, AttributeError, TypeError):
        return False
    return True


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
