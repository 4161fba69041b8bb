"""XLA's HloSharding constructors (`meshdiag.model.normalize`) against jaxlib's parser.

The oracle is `xla_client.HloSharding.from_string(text)`: XLA's parser builds the sharding
with `HloSharding::Subgroup` / `PartialTile`, so `str()` of it is XLA's normal form of the raw
tile + subgroup types that the text spells. Cases are seeded-random tiles (iota with shuffled
reshape/transpose, and explicit permutations) with random subgroup types, maximal included.
"""

from __future__ import annotations

import random

import numpy as np
from jax._src.lib import xla_client as xc

from meshdiag.model.derive import analyze_tile_assignment
from meshdiag.model.normalize import group_subgroup_dims, normal_form, subgroup
from meshdiag.model.sharding import HloSharding
from meshdiag.model.tiles import TileAssignment
from meshdiag.notation.gspmd import print_gspmd

KINDS = ("manual", "replicated", "unreduced", "maximal")


def _case(rng: random.Random) -> tuple[str, HloSharding] | None:
    dims = [rng.choice((1, 1, 2, 2, 3, 4)) for _ in range(rng.randint(1, 4))]
    n = int(np.prod(dims))
    types = tuple(rng.choice(KINDS) for _ in range(rng.randint(0, len(dims))))
    d = ",".join(map(str, dims))
    if rng.random() < 0.5:
        factors, m = [], n
        for p in (2, 3):
            while m % p == 0:
                factors.append(p)
                m //= p
        rng.shuffle(factors)
        reshape: list[int] = []
        for f in factors:
            if reshape and rng.random() < 0.4:
                reshape[-1] *= f
            else:
                reshape.append(f)
        reshape = reshape or [1]
        perm = list(range(len(reshape)))
        rng.shuffle(perm)
        tile = TileAssignment.iota(dims, reshape, perm)
        text = f"[{d}]<=[{','.join(map(str, reshape))}]"
        if len(reshape) > 1:  # XLA wants T(...) exactly when there is more than one dim
            text += f"T({','.join(map(str, perm))})"
    else:
        devices = list(range(n))
        rng.shuffle(devices)
        tile = TileAssignment.from_devices(dims, devices)
        text = f"[{d}]{','.join(map(str, devices))}"
    if n == 1:
        return None  # XLA's parser refuses a one-device explicit list
    if types == ("replicated",) and rng.random() < 0.5:
        return "{devices=" + text + " last_tile_dim_replicate}", HloSharding.tiled(
            tile, replicate_on_last=True
        )
    suffix = f" last_tile_dims={{{', '.join(types)}}}" if types else ""
    return "{devices=" + text + suffix + "}", HloSharding.tiled(tile, subgroup_types=types)


def test_normal_form_is_xlas_on_random_tiles() -> None:
    rng = random.Random(20240611)
    checked = 0
    for _ in range(1500):
        case = _case(rng)
        if case is None:
            continue
        text, raw = case
        want = xc.HloSharding.from_string(text)
        got = normal_form(raw)
        # the printed form: same devices and the same iota-or-explicit choice as XLA
        assert print_gspmd(got) == str(want), text
        assert got == subgroup(raw.tile, raw.subgroup_kinds()), text
        if want.is_tiled() and raw.subgroup_kinds():
            # the array-level regrouping (derive's mesh positions) moves dims as XLA does
            arr, kinds = group_subgroup_dims(raw.tile.array(), raw.subgroup_kinds())
            if kinds and kinds[-1] == "replicated":
                arr = np.sort(arr, axis=-1)
            if got.is_tiled:
                assert kinds == got.subgroup_kinds(), text
                assert arr.shape == got.tile.dims, text
                assert arr.reshape(-1).tolist() == list(want.tile_assignment_devices()), text
        checked += 1
    assert checked > 1000


def test_normal_form_keeps_annotations() -> None:
    tile = TileAssignment.iota((2, 1, 4))
    raw = HloSharding(
        "tiled",
        tile=tile,
        subgroup_types=("manual", "replicated"),
        shard_group=("shard_as", 3),
        metadata=('op_name="a"',),
    )
    out = normal_form(raw)
    assert print_gspmd(out, metadata=True) == (
        '{devices=[2,4]<=[8] last_tile_dim_replicate shard_as 3 metadata={op_name="a"}}'
    )
    tup = normal_form(HloSharding.tuple_of([raw, HloSharding.replicated()]))
    assert tup.elements == (out, HloSharding.replicated())


def test_derive_sorts_replica_groups_behind_other_subgroups_like_xla() -> None:
    # derive's old copy only sorted replica groups when `replicated` was the only subgroup type,
    # so this explicit list stayed 1,0,3,2 (not 0..N-1) and looked unfactorisable; XLA sorts
    # it to 0,1,2,3 and gives axis sizes [2, 2].
    text = "{devices=[2,2]1,0,3,2 last_tile_dims={manual, replicated}}"
    raw = HloSharding.tiled(
        TileAssignment.from_devices((2, 2), (1, 0, 3, 2)), subgroup_types=("manual", "replicated")
    )
    want = xc.HloSharding.from_string(text)
    assert str(want) == "{devices=[2,2]0,1,2,3 last_tile_dims={manual, replicated}}"
    assert analyze_tile_assignment(raw) == list(want.get_axis_sizes()) == [2, 2]


def test_maximal_subgroup_sorts_first_like_xla() -> None:
    # XLA's kOrderedTypes puts maximal before manual; derive's old copy put it last
    raw = HloSharding.tiled(TileAssignment.iota((2, 3)), subgroup_types=("manual", "maximal"))
    want = xc.HloSharding.from_string("{devices=[2,3]<=[6] last_tile_dims={manual, maximal}}")
    assert print_gspmd(normal_form(raw)) == str(want)
    assert normal_form(raw).subgroup_types == ("maximal", "manual")
