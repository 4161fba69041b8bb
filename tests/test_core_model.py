"""Core model: meshes, tile assignments (iota canonicalisation), split rules."""

import numpy as np
import pytest

from meshdiag.errors import LimitError, MeshdiagError
from meshdiag.model.mesh import Mesh
from meshdiag.model.splits import split_dim
from meshdiag.model.targets import preset_mesh as preset
from meshdiag.model.tiles import TileAssignment, canonicalize_iota


@pytest.mark.parametrize(
    "reshape,perm,expected",
    [  # the examples in XLA's CanonicalizeIotaDims comment
        ((3, 4, 5), (0, 1, 2), ((60,), (0,))),
        ((3, 4, 5), (1, 2, 0), ((3, 20), (1, 0))),
        ((3, 4, 5), (2, 0, 1), ((12, 5), (1, 0))),
        ((1, 3, 1, 4, 1, 5), (4, 3, 2, 5, 1, 0), ((3, 20), (1, 0))),
    ],
)
def test_canonicalize_iota(reshape, perm, expected):
    assert canonicalize_iota(reshape, perm) == expected


def test_iota_array_matches_numpy_definition():
    t = TileAssignment.iota((4, 4, 1), (4, 2, 2), (1, 0, 2))
    assert t.devices() == (0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15)
    t = TileAssignment.iota((3, 4), (2, 2, 3), (2, 1, 0))
    assert t.array().tolist() == [[0, 6, 3, 9], [1, 7, 4, 10], [2, 8, 5, 11]]


def test_equality_across_forms():
    iota = TileAssignment.iota((1, 4, 2), (2, 4), (1, 0))
    explicit = TileAssignment.from_devices((1, 4, 2), (0, 4, 1, 5, 2, 6, 3, 7))
    assert iota == explicit and hash(iota) == hash(explicit)
    assert iota != TileAssignment.iota((1, 4, 2))


def test_tile_assignment_limits_refuse_before_allocating():
    with pytest.raises(LimitError):
        TileAssignment.iota((1_000_000_000,))
    with pytest.raises(MeshdiagError):
        TileAssignment.from_devices((2, 2), (0, 1, 2))


def test_mesh_basics():
    m = Mesh((("batch", 2), ("model", 4)))
    assert m.size == 8 and m.shape == (2, 4)
    assert m.devices_array().tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert Mesh((("a", 2),), (0, 1)).device_ids is None  # iota ids are dropped, like Shardy
    assert preset("t3k").shape == (2, 4) and preset("galaxy").shape == (8, 4)
    with pytest.raises(MeshdiagError):
        Mesh((("a", 2), ("a", 2)))
    with pytest.raises(LimitError):
        Mesh((("a", 1 << 30),))


@pytest.mark.parametrize(
    "n,k,rule,sizes,present",
    [
        (5, 4, "xla", [2, 2, 1, 0], [1, 1, 1, 1]),
        (7, 8, "chunk", [1] * 7 + [0], [1] * 7 + [0]),
        (13, 6, "chunk", [3, 3, 3, 3, 1, 0], [1, 1, 1, 1, 1, 0]),
        (9, 4, "array-split", [3, 2, 2, 2], [1, 1, 1, 1]),
        (48, 8, "even", [6] * 8, [1] * 8),
    ],
)
def test_split_dim(n, k, rule, sizes, present):
    s = split_dim(n, k, rule)
    assert (s.stops - s.starts).tolist() == sizes
    assert s.present.astype(int).tolist() == present
    if rule == "array-split":
        assert [len(p) for p in np.array_split(np.arange(n), k)] == sizes


def test_split_even_refuses_uneven():
    with pytest.raises(MeshdiagError, match="not divisible"):
        split_dim(7, 8, "even")


def test_a_sharding_is_checked_when_built() -> None:
    import pytest

    from meshdiag.errors import MeshdiagError
    from meshdiag.model.sharding import HloSharding
    from meshdiag.model.tiles import TileAssignment

    tile = TileAssignment.iota((2, 2))
    for make in (
        lambda: HloSharding("tiled"),
        lambda: HloSharding("replicated", tile=tile),
        lambda: HloSharding.tiled(tile, replicate_on_last=True, subgroup_types=("manual",)),
        lambda: HloSharding.tiled(tile, subgroup_types=("manual", "replicated", "manual")),
        lambda: HloSharding.tiled(tile, subgroup_types=("sideways",)),
        lambda: HloSharding.maximal(-1),
        lambda: HloSharding("replicated", elements=(HloSharding.replicated(),)),
    ):
        with pytest.raises(MeshdiagError):
            make()
    assert HloSharding.tiled(tile, replicate_on_last=True).data_rank == 1


def test_a_mesh_lists_its_ids_without_keeping_them():
    """`id_list` is `ids` as a list, and an iota mesh asked for it keeps no tuple of its
    devices (the JSON of thousands of meshes asks it of each)."""
    iota = Mesh((("x", 4), ("y", 2)))
    assert iota.id_list() == list(range(8)) and "ids" not in iota.__dict__
    assert iota.id_list() == list(iota.ids)
    listed = Mesh((("x", 2),), (1, 0))
    assert listed.id_list() == [1, 0] == list(listed.ids)
