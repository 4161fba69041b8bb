"""The mesh a file or a mapping declares: its pydantic model, and the Mesh built from it.

A mesh table is one of
- `axes = {batch = 2, model = 4}` or `axes = [["batch", 2], ["model", 4]]`,
- torch_xla's `mesh_shape = [2, 4]` with optional `axis_names`,
- `shape = [2, 4]` with optional `names`,
each with optional `device_ids` (a permutation of 0..N-1). A mesh file holds it as a
`[mesh]` table (other top-level keys are the file's own business), as its top level, or as
`mesh = "batch=2,model=4"` (any mesh text); a `pyproject.toml` holds it under
`[tool.meshdiag]`, validated as the lint config. Types and keys are checked by the model;
sizes, device ids and limits by `formats.meshtext.mesh_from_axes`, whose errors are located
at the key they concern.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, StrictInt, StrictStr, model_validator

from meshdiag.errors import LimitError, MeshdiagError
from meshdiag.inputs.problems import Source, key_path
from meshdiag.limits import MAX_RANK


def _positive(size: int) -> int:
    if size < 1:
        raise ValueError(f"mesh axis sizes must be positive, got {size}")
    return size


Size = Annotated[StrictInt, AfterValidator(_positive)]
#: axis names are strings; a list form `[[0, 2]]` names its axis "0", as before
Name = StrictStr | StrictInt


class MeshTable(BaseModel):
    """One mesh: exactly one of `axes`, `mesh_shape`, `shape`."""

    model_config = ConfigDict(extra="forbid")

    axes: dict[str, Size] | list[tuple[Name, Size]] | None = None
    mesh_shape: list[Size] | None = None  # torch_xla's Mesh
    axis_names: list[Name] | None = None
    shape: list[Size] | None = None
    names: list[Name] | None = None
    device_ids: list[StrictInt] | None = None

    @model_validator(mode="after")
    def _one_form(self) -> MeshTable:
        given = [k for k in ("axes", "mesh_shape", "shape") if getattr(self, k) is not None]
        if not given:
            raise ValueError("no 'axes' (e.g. axes = {batch = 2, model = 4})")
        if len(given) > 1:
            raise ValueError(f"give one of 'axes', 'mesh_shape', 'shape', not {given}")
        if self.axis_names is not None and self.mesh_shape is None:
            raise ValueError("'axis_names' goes with 'mesh_shape'")
        if self.names is not None and self.shape is None:
            raise ValueError("'names' goes with 'shape'")
        if self.mesh_shape is not None and self.axis_names is not None:
            if len(self.axis_names) != len(self.mesh_shape):
                raise ValueError("axis_names must name every mesh_shape entry")
        if self.shape is not None and self.names is not None:
            if len(self.names) != len(self.shape):
                raise ValueError("names must name every shape entry")
        return self

    def axis_list(self) -> list[tuple[str, int]]:
        if self.axes is not None:
            items = self.axes.items() if isinstance(self.axes, dict) else self.axes
            return [(str(n), s) for n, s in items]
        sizes = self.mesh_shape if self.mesh_shape is not None else self.shape or []
        names = self.axis_names if self.mesh_shape is not None else self.names
        if not names:
            names = [f"axis_{i}" for i in range(len(sizes))]
        return [(str(n), s) for n, s in zip(names, sizes, strict=True)]

    def form(self) -> str:
        if self.axes is not None:
            return "axes"
        return "mesh_shape" if self.mesh_shape is not None else "shape"


class MeshFileDoc(BaseModel):
    """A file holding a `[mesh]` table or `mesh = "..."`; its other keys are not ours."""

    model_config = ConfigDict(extra="allow")

    mesh: StrictStr | MeshTable


def build_mesh(table: MeshTable, source: Source, loc: tuple[str, ...], what: str):
    """The Mesh of a validated table; size, device-id and limit errors located at their key."""
    from meshdiag.notation.meshtext import mesh_from_axes

    axes = table.axis_list()
    try:
        if len(axes) <= MAX_RANK:
            names = [a for a, _ in axes]
            if len(set(names)) != len(names):
                dup = next(a for a in names if names.count(a) > 1)
                raise MeshdiagError(f"mesh axis {dup!r} appears more than once")
        return mesh_from_axes(axes, table.device_ids, what=what)
    except MeshdiagError as e:
        key = "device_ids" if "device_ids" in str(e) else table.form()
        where = key_path(source.prefix + loc + (key,))
        raise source.located(
            loc + (key,), f"{where!r}: {e}", limit=isinstance(e, LimitError)
        ) from None
