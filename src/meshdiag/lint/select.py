"""Rule selection like ruff: `--select/--extend-select/--ignore` with codes, prefixes or `ALL`,
and `--per-file-ignores` globs.

Selection is resolved layer by layer (config file first, then the command line). A layer that
has `select` replaces the set carried from the layer before; `extend-select` adds and `ignore`
removes. Inside one layer the most specific selector wins (`ignore = ["MD1"]` +
`select = ["MD101"]` keeps MD101), and on a tie `ignore` wins — ruff's rule.

A rule in `always` (MD001: input that cannot be read) stays on when a `select` leaves it
out, as ruff reports syntax errors whatever is selected: a selection of a few rules would
otherwise pass a file whose values they never saw. Only an `ignore` that names it (or a
prefix of it) turns it off, and a later layer that selects it turns it on again.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from meshdiag.errors import MeshdiagError

_SELECTOR_RE = re.compile(r"^(ALL|[A-Z]{1,3}[0-9]{0,3})$")


@dataclass(frozen=True)
class SelectionLayer:
    """One source of selectors (a config file or the command line)."""

    select: tuple[str, ...] | None = None  # None: not given, keep what earlier layers chose
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    origin: str = "command line"


def normalize_selector(text: str, origin: str = "command line") -> str:
    sel = text.strip().upper()
    if not _SELECTOR_RE.match(sel):
        raise MeshdiagError(
            f"invalid rule selector {text.strip()!r} in {origin}; "
            "expected a code (MD103), a prefix (MD1) or ALL"
        )
    return sel


def split_selectors(values: Iterable[str] | None) -> tuple[str, ...] | None:
    """`["MD1,MD2", "MD3"]` → `("MD1", "MD2", "MD3")` (repeatable, comma-separated options)."""
    if values is None:
        return None
    out = []
    for v in values:
        out.extend(p for p in (s.strip() for s in v.split(",")) if p)
    return tuple(out)


def _specificity(selector: str, code: str) -> int:
    """How specifically `selector` names `code`: -1 no match, 0 `ALL`, else prefix length."""
    if selector == "ALL":
        return 0
    return len(selector) if code.startswith(selector) else -1


def expand(selectors: Iterable[str], codes: Iterable[str], origin: str = "command line") -> set:
    """The codes a list of selectors names; a selector that names no known rule is an error."""
    codes = list(codes)
    out: set[str] = set()
    for raw in selectors:
        sel = normalize_selector(raw, origin)
        hit = {c for c in codes if _specificity(sel, c) >= 0}
        if not hit:
            raise MeshdiagError(f"unknown rule selector {sel!r} in {origin}: no rule matches it")
        out |= hit
    return out


def resolve_selection(
    codes: Iterable[str], layers: Sequence[SelectionLayer], always: Iterable[str] = ()
) -> frozenset[str]:
    """The enabled codes after applying `layers` in order over the default (every rule);
    `always`: codes only an `ignore` turns off (see the module docstring)."""
    codes = sorted(codes)
    enabled = set(codes)
    kept = set(always) & enabled  # the `always` codes no ignore has turned off
    for layer in layers:
        select = [normalize_selector(s, layer.origin) for s in (layer.select or ())]
        extend = [normalize_selector(s, layer.origin) for s in layer.extend_select]
        ignore = [normalize_selector(s, layer.origin) for s in layer.ignore]
        for sel in (*select, *extend, *ignore):  # reject selectors that match nothing
            expand([sel], codes, layer.origin)
        new = set()
        for code in codes:
            on = max((_specificity(s, code) for s in (*select, *extend)), default=-1)
            off = max((_specificity(s, code) for s in ignore), default=-1)
            if off >= 0 and off >= on:
                kept.discard(code)
                continue
            if on >= 0 and code in always:
                kept.add(code)
            if on >= 0 or (layer.select is None and code in enabled):
                new.add(code)
        enabled = new
    return frozenset(enabled | kept)


# -- globs ---------------------------------------------------------------------------------


def glob_regex(pattern: str) -> re.Pattern:
    """Translate a path glob: `*` and `?` stay inside one path segment, `**` crosses
    segments (`**/` may match nothing), `[...]` is a character class, `{a,b}` alternation."""
    i, n, out = 0, len(pattern), []
    depth = 0
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "]") else i + 1)
            if j < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : j].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = j
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    if depth:
        raise MeshdiagError(f"unbalanced '{{' in glob {pattern!r}")
    return re.compile("".join(out) + r"\Z")


@dataclass(frozen=True)
class PathGlob:
    """A glob anchored at `base` (the config file's directory, or the working directory)."""

    pattern: str
    base: str  # absolute directory

    def matches(self, path: str) -> bool:
        """True when the glob matches `path` or one of its parent directories. A pattern
        without '/' also matches a bare file or directory name at any depth, like ruff's."""
        from pathlib import PurePosixPath  # (here: 3 ms of every lint's start-up)

        pat = self.pattern.replace("\\", "/").removeprefix("./")
        rx = glob_regex(pat.rstrip("/") or pat)
        absolute = os.path.abspath(path)
        candidates = [PurePosixPath(absolute.replace(os.sep, "/"))]
        rel = os.path.relpath(absolute, self.base)
        if not rel.startswith(".."):
            candidates.insert(0, PurePosixPath(rel.replace(os.sep, "/")))
        for cand in candidates:
            for p in (cand, *cand.parents):
                s = str(p)
                if s in (".", "/"):
                    continue
                if rx.match(s) or ("/" not in pat and rx.match(p.name)):
                    return True
        return False


@dataclass(frozen=True)
class PerFileIgnore:
    glob: PathGlob
    codes: frozenset[str]


def parse_per_file_ignores(
    values: Iterable[str], codes: Iterable[str], base: str
) -> list[PerFileIgnore]:
    """`--per-file-ignores "dumps/legacy/*:MD103,MD104,other/*:MD1"` (repeatable)."""
    codes = list(codes)
    out: list[PerFileIgnore] = []
    pattern: str | None = None
    sels: list[str] = []

    def flush() -> None:
        if pattern is not None:
            if not sels:
                raise MeshdiagError(f"--per-file-ignores {pattern!r} names no rule codes")
            out.append(
                PerFileIgnore(
                    PathGlob(pattern, base), frozenset(expand(sels, codes, "--per-file-ignores"))
                )
            )

    for value in values:
        for part in (p.strip() for p in _split_outside_braces(value)):
            if not part:
                continue
            if ":" in part:  # starts a new PATTERN:CODE entry
                flush()
                pattern, _, first = part.rpartition(":")
                if not pattern:
                    raise MeshdiagError(f"--per-file-ignores entry {part!r} has no glob")
                sels = [first] if first.strip() else []
            elif pattern is None:
                raise MeshdiagError(
                    f"--per-file-ignores entry {part!r} must look like 'GLOB:CODE[,CODE...]'"
                )
            else:
                sels.append(part)
    flush()
    return out


def _split_outside_braces(text: str) -> list[str]:
    """Split on commas that are not inside a `{a,b}` glob alternation."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "{":
            depth += 1
        elif c == "}" and depth:
            depth -= 1
        elif c == "," and not depth:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def table_per_file_ignores(
    table: dict[str, list[str]], codes: Iterable[str], base: str, origin: str
) -> list[PerFileIgnore]:
    """The `[per-file-ignores]` table of a config file (glob → list of selectors)."""
    codes = list(codes)
    return [
        PerFileIgnore(PathGlob(glob, base), frozenset(expand(sels, codes, origin)))
        for glob, sels in table.items()
    ]


def ignored_for(path: str, rules: Sequence[PerFileIgnore]) -> frozenset[str]:
    """Codes switched off for `path` by per-file ignores."""
    out: set[str] = set()
    for r in rules:
        if r.glob.matches(path):
            out |= r.codes
    return frozenset(out)
