"""The shape of the code: the layer contract (import-linter, declared in pyproject.toml), no
import cycles, and no process-wide memo — every memo lives in a run's `memo.RunMemos`."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "meshdiag"

#: module-level state that is not a memo, and why (anything else module-level and mutable is)
ALLOWED_STATE = {
    # a worker process's settings, function and named paths, set once by the pool's
    # initializer
    ("meshdiag.lint.runner", "_SETTINGS"),
    ("meshdiag.lint.runner", "_LINT_FILE"),
    ("meshdiag.lint.runner", "_NAMED"),
    ("meshdiag.cli.commands.inspect_worker", "_STATE"),
    # the one spool writer of a worker process (ordered output across processes)
    ("meshdiag.pipeline.spool", "_WRITER"),
    # whether a worker process is inside a task, and whether it was asked to stop (SIGTERM
    # ends a task only inside one: never while the worker sends a result)
    ("meshdiag.pipeline.tasks", "_WORKER"),
    # the native walker's Python twin: the candidate spans of the one block it is walking
    # (the C walker keeps them in locals), replaced at the next block
    ("meshdiag.ir.lines", "_walk"),
}


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


def _imports(mod: str, is_pkg: bool, tree: ast.AST, known) -> set[str]:
    """Every meshdiag module `mod` imports, anywhere in it (functions and TYPE_CHECKING
    blocks included)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            names = [prefix] + [f"{prefix}.{a.name}" for a in node.names]
        else:
            continue
        out.update(n for n in names if n in known and n != mod)
    return out


def test_layers_hold() -> None:
    """import-linter's contract (pyproject.toml [tool.importlinter]): data flows one way."""
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert exe, "import-linter is a test dependency (pip install -e '.[test]')"
    r = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "1 kept, 0 broken" in r.stdout


def test_no_import_cycles() -> None:
    known = _modules()
    graph: dict[str, set[str]] = defaultdict(set)
    for mod, (path, is_pkg) in known.items():
        tree = ast.parse(path.read_text())
        # a package's __init__ is imported with each of its modules: edges into a package
        # count only when the package itself is imported from outside it
        graph[mod] = {
            t
            for t in _imports(mod, is_pkg, tree, known)
            if not (known[t][1] and mod.startswith(t + "."))
        }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(known):
        if v not in index:
            visit(v)
    assert cycles == []


def _module_state(mod: str, tree: ast.Module) -> list[str]:
    """Problems: memo decorators anywhere, `global` rebinding, and module-level names bound
    to an empty mutable container (a module-level dict/list that starts empty is there to be
    filled at run time)."""
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in node.decorator_list:
                target = d.func if isinstance(d, ast.Call) else d
                name = (
                    target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
                )
                if name in ("lru_cache", "cache"):
                    problems.append(f"{mod}.{node.name}: @{name} (a process-wide memo)")
        if isinstance(node, ast.Global):
            for name in node.names:
                if (mod, name) not in ALLOWED_STATE:
                    problems.append(f"{mod}: `global {name}` (module state set at run time)")
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            empty = (
                isinstance(value, (ast.Dict, ast.List, ast.Set))
                and not getattr(value, "keys", getattr(value, "elts", None))
            ) or (
                isinstance(value, ast.Call)
                and getattr(value.func, "id", getattr(value.func, "attr", ""))
                in (
                    "dict",
                    "list",
                    "set",
                    "OrderedDict",
                    "defaultdict",
                    "ContentMemo",
                    "WeakValueDictionary",
                )
                and not value.args
            )
            for t in targets:
                if empty and isinstance(t, ast.Name) and (mod, t.id) not in ALLOWED_STATE:
                    problems.append(f"{mod}.{t.id}: module-level mutable container")
    return problems


def test_no_process_wide_memos() -> None:
    problems = []
    for mod, (path, _) in sorted(_modules().items()):
        problems += _module_state(mod, ast.parse(path.read_text()))
    assert problems == []


def test_the_state_check_sees_what_it_must() -> None:
    """The checker itself, on the shapes of the memos it replaced."""
    src = (
        "import functools\n_MEMO: dict[int, object] = {}\n_SEEN = dict()\nTABLE = {'a': 1}\n"
        "@functools.lru_cache(maxsize=8)\ndef f(x): return x\n"
        "def g():\n    global _LAST\n    _LAST = 1\n"
    )
    found = _module_state("m", ast.parse(src))
    assert found == [
        "m.f: @lru_cache (a process-wide memo)",
        "m: `global _LAST` (module state set at run time)",
        "m._MEMO: module-level mutable container",
        "m._SEEN: module-level mutable container",
    ]


def test_the_readme_code_map_is_the_tree() -> None:
    """Every package and top-level module is in the README's code map, and every file the
    map names exists."""
    import re

    text = (ROOT / "README.md").read_text()
    block = text.split("## Code map", 1)[1].split("```", 2)[1]
    packages = {
        p.parent.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.rglob("__init__.py")
        if p.parent != PACKAGE
    }
    named_dirs = set(re.findall(r"([\w]+)/", block))
    assert {p.rsplit("/", 1)[-1] for p in packages} <= named_dirs, "packages missing from the map"
    top = {p.name for p in PACKAGE.glob("*.py")} - {"__init__.py", "__main__.py"}
    named_files = set(re.findall(r"([\w]+\.(?:py|c|toml))\b", block))
    assert top <= named_files, "top-level modules missing from the map"
    existing = {p.name for p in PACKAGE.rglob("*") if p.is_file()}
    assert named_files <= existing, named_files - existing
    # every module is named, except in the packages the map describes as one module per
    # rule, command, JSON contract or lint output format
    collections = ("checks/md", "cli/commands/", "contracts/", "report/lint/")
    unnamed = sorted(
        rel
        for p in PACKAGE.rglob("*.py")
        if p.name not in {"__init__.py", "__main__.py"}
        and not (rel := p.relative_to(PACKAGE).as_posix()).startswith(collections)
        and p.name not in named_files
    )
    assert not unnamed, f"modules missing from the README's code map: {unnamed}"
