"""Step 2, allocate: the destination's spec on every device before the copy.

`fresh`: each device's spec is the shard it will receive (no buffer where it receives none);
`uniform:SHAPE`: TTNN's `allocate_tensor_on_mesh`, the same spec on every device;
`per-device:FILE`: one spec (or none) per device id, from a .json or .toml file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from meshdiag.errors import MeshdiagError
from meshdiag.fileio import read_text
from meshdiag.model.copy import Ranges, Shape
from meshdiag.notation.ttnn import Dest, parse_dest, parse_per_device_specs
from meshdiag.simulate.regions import extent, shape_text

if TYPE_CHECKING:
    from meshdiag.model.mesh import Mesh


def load_dest(text: str | Dest) -> Dest:
    """`fresh` / `uniform:SHAPE` / `per-device:FILE` (reads FILE: .json or .toml)."""
    dest = parse_dest(text) if isinstance(text, str) else text
    if dest.kind == "per-device" and dest.shapes is None:
        path = dest.path or ""
        fmt = "toml" if path.lower().endswith(".toml") else "json"
        content = read_text(path, "per-device specs", limit=16 << 20)
        dest = Dest(
            "per-device",
            shapes=parse_per_device_specs(content, fmt, path),
            path=path,
            text=dest.text,
        )
    return dest


def allocate(
    mesh: Mesh, shape: Shape, dest: Dest, regions: list[Ranges | None]
) -> list[Shape | None]:
    """The allocated spec per mesh position (None: no buffer), given what each receives."""
    n = mesh.size
    rank = len(shape)
    if dest.kind == "fresh":
        return [None if r is None else extent(r) for r in regions]
    if dest.kind == "uniform":
        assert dest.shape is not None
        if len(dest.shape) != rank:
            raise MeshdiagError(
                f"destination spec {shape_text(dest.shape)} has rank {len(dest.shape)}, "
                f"but the tensor {shape_text(shape)} has rank {rank}"
            )
        return [dest.shape] * n
    shapes = dest.shapes or ()
    if len(shapes) != n:
        raise MeshdiagError(
            f"per-device specs {dest.path!r} list {len(shapes)} devices; the mesh has {n}"
        )
    for i, s in enumerate(shapes):
        if s is not None and len(s) != rank:
            raise MeshdiagError(
                f"per-device specs {dest.path!r}: device {i}'s spec {shape_text(s)} has rank "
                f"{len(s)}, the tensor {rank}"
            )
    # the file is indexed by device id; return per mesh position
    return [shapes[d] for d in mesh.ids]
