"""What the IR scanner finds in a dump: files → modules → meshes, values, diagnostics.

Plain data: the scanner (`ir/scan.py`) fills it, checks read it, renderers print it.
Lines and columns are 1-based and point into the original file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from ..findings import Finding
    from ..mesh import Mesh
    from ..sharding import HloSharding, NamedSharding

Notation = Literal["sdy", "gspmd"]


@dataclass
class MeshDecl:
    name: str  # symbol name without '@' ("mesh")
    mesh: Mesh | None  # None when its text did not parse (an MD001 finding says why)
    line: int
    column: int
    text: str  # the mesh attribute as written (`<["x"=2]>`)
    #: where it came from: an `sdy.mesh` op, the `xla.sdy.meshes` module attribute, ...
    source: Literal["sdy.mesh", "xla.sdy.meshes", "inline"] = "sdy.mesh"


@dataclass
class Value:
    """One sharded value: a function argument or result, an op result, a constraint, ..."""

    name: str  # %arg0, %0, %0#1, result#0, %param.1
    line: int
    column: int  # of the sharding annotation
    text: str  # the sharding as written, MLIR escapes decoded
    notation: Notation
    #: role: arg, result, op, constraint, reshard, manual_in, manual_out, custom_call
    kind: str = "op"
    op: str | None = None  # e.g. "stablehlo.custom_call @Sharding", "sdy.reshard"
    shape: tuple[int, ...] | None = None  # global shape, when known
    local_shape: tuple[int, ...] | None = None  # per-device shape (partitioned / manual)
    dtype: str | None = None
    mesh_name: str | None = None  # Shardy mesh symbol it refers to
    #: parsed forms (None when the text did not parse)
    sharding: HloSharding | NamedSharding | None = None
    hlo: HloSharding | None = None  # tiled form, for layouts and checks


@dataclass
class Diagnostic:
    """A compiler diagnostic printed in the dump (`error: Mesh is not valid`)."""

    severity: str  # error, warning, note, remark
    message: str
    line: int
    column: int = 1
    location: str | None = None  # `file:line:col` the diagnostic itself names


@dataclass
class ModuleReport:
    name: str | None  # `@ReplicateShardedData.6`'s name without '@'; HloModule name
    line: int  # line of the `module` / `HloModule` header
    dialect: Literal["mlir", "hlo"] = "mlir"
    #: pass-dump section title (`IR Dump Before AnalyzeMeshPass (analyze-mesh)`), if any
    section: str | None = None
    #: shapes in the module are per-device (after SPMD partitioning)
    partitioned: bool = False
    num_partitions: int | None = None
    meshes: list[MeshDecl] = field(default_factory=list)
    values: list[Value] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)


@dataclass
class FileReport:
    path: str
    modules: list[ModuleReport] = field(default_factory=list)
    #: MD001 findings from reading/parsing this file
    findings: list[Finding] = field(default_factory=list)
