"""The device mesh: ordered named axes over a row-major array of device ids.

A mesh with axes (a0..ak) of sizes (s0..sk) places the device `device_ids[ravel(c)]` at
coordinate c, first axis most major (Shardy's and JAX's convention). `device_ids=None` means
iota (0..N-1). A mesh with no axes and one device id is Shardy's maximal mesh.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import TYPE_CHECKING

from meshdiag.errors import MeshdiagError
from meshdiag.limits import check_device_count

if TYPE_CHECKING:
    import numpy as np


def cached_hash(self) -> int:
    """`__hash__` for the model's frozen dataclasses, computed once per object: meshes and
    shardings key every per-distinct-value memo of a run, and hashing one hashes its axes,
    tile assignment and names. Equal objects hash equal (the compared fields only)."""
    h = self.__dict__.get("_hash")
    if h is None:
        h = hash(tuple(getattr(self, f.name) for f in fields(self) if f.compare))
        object.__setattr__(self, "_hash", h)
    return h


def state_without_hash(self) -> dict:
    """Pickled state without the cached hash: string hashes differ between processes."""
    state = self.__dict__.copy()
    state.pop("_hash", None)
    return state


@dataclass(frozen=True)
class Mesh:
    axes: tuple[tuple[str, int], ...]
    device_ids: tuple[int, ...] | None = None
    #: symbol name in IR (`@mesh`), not part of the mesh's identity
    name: str | None = field(default=None, compare=False)

    __hash__ = cached_hash
    __getstate__ = state_without_hash

    def __post_init__(self) -> None:
        names = [a for a, _ in self.axes]
        for a, s in self.axes:
            if not isinstance(s, int) or s < 1:
                raise MeshdiagError(f"mesh axis {a!r} has size {s}; sizes must be positive")
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise MeshdiagError(f"mesh axis {dup!r} appears more than once")
        n = math.prod(s for _, s in self.axes)
        check_device_count(n if self.axes else len(self.device_ids or (0,)))
        if self.device_ids is not None:
            ids = self.device_ids
            if self.axes and len(ids) != n:
                raise MeshdiagError(
                    f"mesh device_ids has {len(ids)} entries but the axes hold {n} devices"
                )
            if not self.axes and len(ids) != 1:
                raise MeshdiagError("a mesh without axes takes exactly one device id (maximal)")
            if self.axes and tuple(range(n)) == tuple(ids):
                object.__setattr__(self, "device_ids", None)  # Shardy drops iota device_ids

    # -- shape (computed once: checks ask for every module of a dump) ---------------------
    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(a for a, _ in self.axes)

    @cached_property
    def shape(self) -> tuple[int, ...]:
        return tuple(s for _, s in self.axes)

    @cached_property
    def size(self) -> int:
        """Number of devices."""
        if not self.axes:
            return len(self.device_ids) if self.device_ids else 1
        return math.prod(self.shape)

    @property
    def is_maximal(self) -> bool:
        return not self.axes and self.device_ids is not None

    @property
    def is_empty(self) -> bool:
        return not self.axes and self.device_ids is None

    def axis_size(self, name: str) -> int:
        for a, s in self.axes:
            if a == name:
                return s
        raise KeyError(name)

    def axis_index(self, name: str) -> int:
        return self.names.index(name)

    def has_axis(self, name: str) -> bool:
        return name in self.names

    @cached_property
    def ids(self) -> tuple[int, ...]:
        """Device id at each row-major position."""
        if self.device_ids is not None:
            return self.device_ids
        return tuple(range(self.size))

    def id_list(self) -> list[int]:
        """`ids` as a new list, without keeping a tuple of every device of a mesh that
        lists none (JSON of thousands of meshes of thousands of devices)."""
        return list(self.device_ids) if self.device_ids is not None else list(range(self.size))

    def devices_array(self) -> np.ndarray:
        """Device ids as an array of the mesh's shape."""
        import numpy as np

        return np.asarray(self.ids, dtype=np.int64).reshape(self.shape or ())

    def without_size1_axes(self) -> Mesh:
        return self._without_size1

    @cached_property
    def _without_size1(self) -> Mesh:
        if all(s != 1 for _, s in self.axes):
            return self
        return Mesh(tuple((a, s) for a, s in self.axes if s != 1), self.device_ids, self.name)

    # -- text ----------------------------------------------------------------------------
    def short(self) -> str:
        """`batch=2,model=4` (plus `device_ids=[...]` when not iota)."""
        if self.is_maximal:
            return f"maximal(device={self.device_ids[0]})"  # type: ignore[index]
        text = ",".join(f"{a}={s}" for a, s in self.axes) or "<empty>"
        if self.device_ids is not None:
            text += f" device_ids=[{','.join(map(str, self.device_ids))}]"
        return text

    def shape_text(self) -> str:
        return "x".join(map(str, self.shape)) or "0-D"

    def __str__(self) -> str:
        return self.short()


def mesh_from_shape(shape: tuple[int, ...] | list[int], names: list[str] | None = None) -> Mesh:
    names = names or [f"axis_{i}" for i in range(len(shape))]
    return Mesh(tuple(zip(names, shape, strict=True)))
