"""Assemble a FileReport from the scanner's events: modules, sections, meshes, values.

The line handlers (`mlir.py`, `hlo.py`) call the methods here; nothing here reads text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from meshdiag.ir.annot import MeshKey, Parsed
from meshdiag.ir.model import Diagnostic, FileReport, MeshDecl, ModuleReport, Notation, Value
from meshdiag.ir.scancache import ScanCache
from meshdiag.model.findings import PARSE_ERROR, Finding
from meshdiag.model.sharding import HloSharding, NamedSharding


@dataclass
class ManualRegion:
    """An open `sdy.manual_computation` body: values inside have per-device shapes."""

    indent: int
    manual_axes: tuple[str, ...]
    #: out_shardings values waiting for the result types on the closing line
    outs: list[Value] = field(default_factory=list)
    ins: list[Value] = field(default_factory=list)


def make_value(
    name: str,
    line: int,
    column: int,
    text: str,
    notation: Notation,
    parsed: Parsed,
    kind: str = "op",
    op: str | None = None,
    shape: tuple[int, ...] | None = None,
    dtype: str | None = None,
) -> Value:
    """A Value as read from its line, before the builder's state (manual regions) applies.

    A `{manual}` value's type is what each device holds (`@SPMDFullToShardShape`'s result,
    a shard_map body's values): its shape is a `local_shape`, there is no global tensor."""
    s = parsed.sharding
    local_shape = mesh_name = None
    # by class, not `getattr(s, name, None)`: a missing attribute raises inside getattr, and
    # this runs for every value a big file's new lines hold
    cls = s.__class__
    if cls is NamedSharding:
        mesh_name = s.mesh_ref  # type: ignore[union-attr]
    elif cls is HloSharding:
        if s.kind == "manual":  # type: ignore[union-attr]
            local_shape, shape = shape, None
    if not mesh_name and text.lstrip("#").startswith(("sdy.sharding<@", "<@")):
        mesh_name = text.split("@", 1)[1].split(",", 1)[0].strip()
    # positional, in the order of Value's fields (tests/test_scan_columns.py holds it):
    # keywords took 0.63 µs a value, positions 0.23 µs
    return Value(
        name,
        line,
        column,
        text,
        notation,
        kind,
        op,
        shape,
        local_shape,
        dtype,
        mesh_name,
        s,
        parsed.hlo,
    )


class Builder:
    def __init__(
        self,
        path: str,
        *,
        partitioned_hint: bool = False,
        on_module: Callable[[ModuleReport], None] | None = None,
        cache: ScanCache | None = None,
    ) -> None:
        self.report = FileReport(path)
        #: the run's memo (learned lines, parses, mesh tokens): `scancache.ScanCache`
        self.cache = cache if cache is not None else ScanCache()
        #: where complete modules go instead of `report.modules` (`scan.scan_path`)
        self.on_module = on_module
        self.module: ModuleReport | None = None
        self.last: ModuleReport | None = None  # the module diagnostics attach to
        self.section: str | None = None  # title of the section being read
        self.pending_diags: list[Diagnostic] = []
        self.mesh_key: MeshKey = ()
        self.mesh_token = 0  # self.cache.token(self.mesh_key)
        self.manual: list[ManualRegion] = []
        self.partitioned_hint = partitioned_hint  # from the dump file name
        #: raw bytes of the line being handled (the line memo's key), set by the scanner
        self.raw: bytes | None = None
        #: which new lines the line memo learns in a streamed file (`linememo.Sampling`);
        #: None: every one
        self.sampling = None
        #: shown each buffer of lines before it is scanned (`scan.OnBlock`), or None
        self.on_block: Callable[[bytes], None] | None = None

    # -- structure ---------------------------------------------------------------------
    def start_module(self, name: str | None, line: int, dialect: str = "mlir") -> ModuleReport:
        self._close()
        self._hand_over()
        m = ModuleReport(name=name, line=line, dialect=dialect, section=self.section)  # type: ignore[arg-type]
        if dialect == "hlo" and self.partitioned_hint:
            m.partitioned = True
        if self.on_module is None:
            self.report.modules.append(m)
        self.module = m
        self.last = m
        self.mesh_key = ()
        self.mesh_token = 0
        self.manual = []
        if self.pending_diags:
            m.diagnostics.extend(self.pending_diags)
            self.pending_diags = []
        return m

    def ensure_module(self, line: int) -> ModuleReport:
        """The current module; an anonymous one when values come before any header."""
        if self.module is None:
            return self.start_module(None, line)
        return self.module

    def start_section(self, title: str) -> None:
        self._close()
        self.section = title

    def split(self) -> None:
        """`// -----`: the next module is a separate input."""
        self._close()
        self.section = None

    def _close(self) -> None:
        m = self.module
        if m is not None and m.partitioned:
            # Values added one by one become per-device here; the shared LineValues are
            # converted when read (ModuleReport.rows / values)
            for v in m.items:
                if v.__class__ is Value and v.shape is not None and v.local_shape is None:  # type: ignore[union-attr]
                    v.local_shape, v.shape = v.shape, None  # type: ignore[union-attr]
        self.module = None

    def _hand_over(self) -> None:
        """Give the last module to `on_module`: called when nothing can change it any more
        (a diagnostic after a module's end attaches to it until the next one starts)."""
        if self.on_module is not None and self.last is not None:
            last, self.last = self.last, None
            self.on_module(last)

    def finish(self) -> FileReport:
        self._close()
        self._hand_over()
        if self.pending_diags:  # diagnostics with no module at all: keep them visible
            m = ModuleReport(name=None, line=self.pending_diags[0].line, section=self.section)
            m.diagnostics.extend(self.pending_diags)
            if self.on_module is not None:
                self.on_module(m)
            else:
                self.report.modules.append(m)
        return self.report

    # -- content -----------------------------------------------------------------------
    def diagnostic(self, d: Diagnostic) -> None:
        target = self.module or self.last
        if target is None:
            self.pending_diags.append(d)
        else:
            target.diagnostics.append(d)

    def mesh(self, decl: MeshDecl) -> None:
        m = self.ensure_module(decl.line)
        m.meshes.append(decl)
        if decl.mesh is not None:
            self.mesh_key = tuple((k, v) for k, v in self.mesh_key if k != decl.name) + (
                (decl.name, decl.mesh),
            )
            self.mesh_token = self.cache.token(self.mesh_key)

    def value(
        self,
        name: str,
        line: int,
        column: int,
        text: str,
        notation: Notation,
        parsed: Parsed,
        *,
        kind: str = "op",
        op: str | None = None,
        shape: tuple[int, ...] | None = None,
        dtype: str | None = None,
    ) -> Value:
        m = self.ensure_module(line)
        v = make_value(name, line, column, text, notation, parsed, kind, op, shape, dtype)
        if self.manual and kind not in ("manual_in", "manual_out"):
            v.local_shape, v.shape = v.shape, None
        m.add(v)
        if parsed.error is not None:
            self.problem(parsed.error, line, column + parsed.offset)
        return v

    def problem(self, message: str, line: int | None, column: int | None = None) -> None:
        mod = self.module.name if self.module else None
        self.report.findings.append(
            Finding(
                *PARSE_ERROR,
                "error",
                message,
                path=self.report.path,
                line=line,
                column=column,
                module=mod,
            )
        )

    def note(self, message: str) -> None:
        """An info-level MD001 note about the whole file (skipped on purpose), not an error."""
        self.report.findings.append(
            Finding(*PARSE_ERROR, "info", message, None, path=self.report.path)
        )

    def named(self, text: str, manual_axes: tuple[str, ...] | None = None) -> Parsed:
        """A Shardy sharding text parsed on the module's meshes (inside the enclosing manual
        axes unless `manual_axes` is given), once per run (`ScanCache.named`)."""
        axes = self.manual_axes if manual_axes is None else manual_axes
        return self.cache.named(text, self.mesh_key, axes, self.mesh_token)

    @property
    def manual_axes(self) -> tuple[str, ...]:
        if not self.manual:  # asked for every cached line: the common case is fast
            return ()
        return tuple(a for r in self.manual for a in r.manual_axes)
