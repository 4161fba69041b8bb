"""meshdiag: diagnose device-mesh sharding.

Library entry points (imported lazily so `import meshdiag` stays cheap):

    meshdiag.parse_sharding(text, mesh=None)  -> HloSharding | NamedSharding
    meshdiag.parse_mesh(text)                 -> Mesh
    meshdiag.layout(sharding, shape, mesh=None, split="xla") -> Layout
    meshdiag.diff_shardings(a, b, mesh=None, shape=None)  -> ShardingDiff

    from meshdiag.reshard import reshard   # (a submodule of that name, so not re-exported)
    reshard(from, to, shape=S, mesh=M, dtype="f32")        -> ReshardCost
"""

from __future__ import annotations

__version__ = "0.1.0"

_LAZY = {
    "Mesh": ("meshdiag.mesh", "Mesh"),
    "HloSharding": ("meshdiag.sharding", "HloSharding"),
    "NamedSharding": ("meshdiag.sharding", "NamedSharding"),
    "TileAssignment": ("meshdiag.tiles", "TileAssignment"),
    "MeshdiagError": ("meshdiag.errors", "MeshdiagError"),
    "ParseError": ("meshdiag.errors", "ParseError"),
    "parse_mesh": ("meshdiag.formats.meshtext", "parse_mesh"),
    "parse_sharding": ("meshdiag.formats.detect", "parse_sharding"),
    "layout": ("meshdiag.layout_engine", "layout"),
    "diff_shardings": ("meshdiag.sharding_diff", "diff_shardings"),
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'meshdiag' has no attribute {name!r}")


__all__ = sorted(_LAZY) + ["__version__"]
