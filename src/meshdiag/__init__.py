"""meshdiag: diagnose device-mesh sharding.

Library entry points (imported lazily so `import meshdiag` stays cheap):

    meshdiag.parse_sharding(text, mesh=None)  -> HloSharding | NamedSharding
    meshdiag.parse_mesh(text)                 -> Mesh
    meshdiag.layout(sharding, shape, mesh=None, split="xla") -> Layout
    meshdiag.diff_shardings(a, b, mesh=None, shape=None)  -> ShardingDiff

    from meshdiag.layouts.reshard import reshard   # (a submodule of that name, so not re-exported)
    reshard(from, to, shape=S, mesh=M, dtype="f32")        -> ReshardCost
"""

from __future__ import annotations

__version__ = "0.1.0"

_LAZY = {
    "Mesh": ("meshdiag.model.mesh", "Mesh"),
    "HloSharding": ("meshdiag.model.sharding", "HloSharding"),
    "NamedSharding": ("meshdiag.model.sharding", "NamedSharding"),
    "TileAssignment": ("meshdiag.model.tiles", "TileAssignment"),
    "MeshdiagError": ("meshdiag.errors", "MeshdiagError"),
    "ParseError": ("meshdiag.errors", "ParseError"),
    "parse_mesh": ("meshdiag.inputs.mesh_input", "parse_mesh"),
    "parse_sharding": ("meshdiag.notation.detect", "parse_sharding"),
    "layout": ("meshdiag.layouts.engine", "layout"),
    "diff_shardings": ("meshdiag.layouts.diff", "diff_shardings"),
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'meshdiag' has no attribute {name!r}")


__all__ = sorted(_LAZY) + ["__version__"]
