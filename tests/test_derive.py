"""derive.py against XLA/JAX: get_axis_sizes, the import's common refinement, plain specs.

XLA's StableHLO → Shardy import itself cannot be run from Python with this jaxlib: its passes
are not registered in jaxlib's MLIR bindings, and PJRT falls back to GSPMD whenever a module
still carries `mhlo.sharding`. So module meshes are checked against `get_axis_sizes()` per
sharding plus the documented refinement rule, and imports against JAX's own shardings.
"""

from __future__ import annotations

import itertools
import math
import random
import subprocess
import sys

import jax
import numpy as np
import pytest
from jax._src.lib import xla_client as xc
from jax.sharding import Mesh as JMesh
from jax.sharding import NamedSharding as JNamed
from jax.sharding import PartitionSpec as P

from meshdiag.errors import MeshdiagError
from meshdiag.model.derive import (
    DerivedMesh,
    NotFactorisable,
    analyze_tile_assignment,
    common_factor_sequence,
    derive_mesh,
    hlo_to_named,
    import_sharding,
    iota_form_of,
    meshes_fitting,
    named_positions,
    plain_spec,
    plain_specs_with_same_tiling,
)
from meshdiag.model.mesh import Mesh
from meshdiag.model.sharding import AxisRef, HloSharding
from meshdiag.model.tiles import TileAssignment

_TYPES = {
    xc.OpSharding.Type.MANUAL: "manual",
    xc.OpSharding.Type.REPLICATED: "replicated",
    xc.OpSharding.Type.UNREDUCED: "unreduced",
}


def from_xla(h) -> HloSharding:
    """Our model built from XLA's accessors (its proto keeps the iota form)."""
    if h.is_replicated():
        return HloSharding.replicated()
    if h.is_maximal():
        return HloSharding.maximal(h.tile_assignment_devices()[0])
    if h.is_manual():
        return HloSharding("manual")
    p = h.to_proto()
    dims = list(p.tile_assignment_dimensions)
    if len(p.iota_reshape_dims):
        tile = TileAssignment.iota(dims, list(p.iota_reshape_dims), list(p.iota_transpose_perm))
    else:
        tile = TileAssignment.from_devices(dims, list(p.tile_assignment_devices))
    return HloSharding.tiled(
        tile,
        replicate_on_last=bool(p.replicate_on_last_tile_dim),
        subgroup_types=tuple(_TYPES[t] for t in p.last_tile_dims),
    )


def parse(text: str) -> HloSharding:
    return from_xla(xc.HloSharding.from_string(text))


def xla_array(h) -> np.ndarray:
    return np.asarray(h.tile_assignment_devices()).reshape(h.tile_assignment_dimensions())


def canon(dims, devices, replicate_last: bool) -> tuple[tuple[int, ...], bytes]:
    """Device assignment up to replica-group order (independent of derive.py)."""
    arr = np.asarray(devices, dtype=np.int64).reshape(dims)
    if replicate_last:
        arr = np.sort(arr, axis=-1)
    return tuple(arr.shape), arr.tobytes()


def _factor(rng: random.Random, n: int, k: int) -> list[int]:
    """n as k ordered factors (1s allowed)."""
    out = [1] * k
    p, m = 2, n
    while m > 1:
        while m % p == 0:
            out[rng.randrange(k)] *= p
            m //= p
        p += 1
    return out


def random_iota(rng: random.Random) -> tuple[str, HloSharding]:
    n = rng.choice([2, 4, 6, 8, 12, 16, 24, 30, 32, 36, 48, 60, 64])
    reshape = _factor(rng, n, rng.randint(1, 4))
    perm = list(range(len(reshape)))
    rng.shuffle(perm)
    mode = rng.choice(["none", "none", "rep", "dims"])
    subs: tuple[str, ...] = ()
    if mode == "dims":
        subs = tuple(rng.sample(["manual", "replicated", "unreduced"], rng.randint(1, 2)))
    nsub = {"none": 0, "rep": 1, "dims": len(subs)}[mode]
    dims = _factor(rng, n, rng.randint(1, 3) + nsub)
    text = f"{{devices=[{','.join(map(str, dims))}]<=[{','.join(map(str, reshape))}]"
    if len(reshape) > 1:
        text += f"T({','.join(map(str, perm))})"
    if mode == "rep":
        text += " last_tile_dim_replicate"
    elif mode == "dims":
        text += f" last_tile_dims={{{', '.join(subs)}}}"
    text += "}"
    model = HloSharding.tiled(
        TileAssignment.iota(dims, reshape, perm),
        replicate_on_last=mode == "rep",
        subgroup_types=subs,
    )
    return text, model


def xla_aborts(text: str) -> bool:
    """Whether XLA's get_axis_sizes CHECK-fails on `text` (it aborts the process)."""
    code = (
        "import sys\nfrom jax._src.lib import xla_client as xc\n"
        "print(xc.HloSharding.from_string(sys.argv[1]).get_axis_sizes())"
    )
    run = subprocess.run([sys.executable, "-c", code, text], capture_output=True, timeout=120)
    return run.returncode != 0 and "Check failed" in run.stderr.decode(errors="replace")


# -- (1) analyze_tile_assignment == get_axis_sizes ------------------------------------------

TABLE = [  # shardy_ttmlir.md §2.4, plus the tile_assignment.h example
    ("{devices=[1,4,2]<=[8] last_tile_dim_replicate}", [4, 2]),
    ("{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}", [2, 4]),
    ("{devices=[2,4]<=[8]}", [2, 4]),
    ("{devices=[4,2]<=[2,4]T(1,0)}", [2, 4]),
    ("{devices=[8,1]<=[8]}", [8]),
    ("{devices=[1,1,4,8]<=[8,4]T(1,0)}", [8, 4]),
    ("{devices=[6,35]<=[7,10,3]T(2,1,0)}", [7, 2, 5, 3]),
]


@pytest.mark.parametrize(("text", "sizes"), TABLE)
def test_table_axis_sizes(text: str, sizes: list[int]) -> None:
    assert xc.HloSharding.from_string(text).get_axis_sizes() == sizes
    assert analyze_tile_assignment(parse(text)) == sizes


def test_common_factor_sequence() -> None:
    assert common_factor_sequence([6, 1, 4], [2, 6, 2]) == [2, 3, 2, 2]
    assert common_factor_sequence([4, 8], [8, 4]) == [4, 2, 4]
    assert common_factor_sequence([2, 3], [3, 2]) is None
    assert common_factor_sequence([1], [1, 1]) == []
    # symmetric, and the refinement is the chain of all prefix products
    rng = random.Random(5)
    for _ in range(200):
        n = rng.choice([8, 12, 16, 36, 64])
        a, b = _factor(rng, n, rng.randint(1, 4)), _factor(rng, n, rng.randint(1, 4))
        got = common_factor_sequence(a, b)
        assert got == common_factor_sequence(b, a)
        cuts = sorted(
            {math.prod(a[:i]) for i in range(len(a) + 1)}
            | {math.prod(b[:i]) for i in range(len(b) + 1)}
        )
        chain = all(y % x == 0 and y > x for x, y in zip(cuts, cuts[1:], strict=False))
        if not chain:
            assert got is None
        else:
            assert got == [y // x for x, y in zip(cuts, cuts[1:], strict=False)]


def test_random_iota_axis_sizes_match_xla() -> None:
    rng = random.Random(20240607)
    compared = 0
    unfactorisable: list[str] = []
    while compared < 320:
        text, model = random_iota(rng)
        try:
            h = xc.HloSharding.from_string(text)
        except Exception:  # noqa: BLE001 - XLA rejects some random combinations
            continue
        mine = analyze_tile_assignment(model)
        assert analyze_tile_assignment(from_xla(h)) == mine, text
        if h.is_replicated() or h.is_manual() or h.is_unreduced() or h.is_maximal():
            assert mine is None, text
            continue
        if mine is None:
            unfactorisable.append(text)
            continue
        assert h.get_axis_sizes() == mine, text
        compared += 1
    # what we call unfactorisable XLA really CHECK-fails on (a sample: each aborts a process)
    assert unfactorisable
    for text in unfactorisable[:3] + ["{devices=[2,3]<=[2,3]T(1,0)}"]:
        assert xla_aborts(text), text
    assert analyze_tile_assignment(parse("{devices=[2,3]<=[2,3]T(1,0)}")) is None


def test_explicit_lists_like_xla() -> None:
    # XLA analyses a V1 list only when it is exactly 0..N-1
    assert analyze_tile_assignment(parse("{devices=[1,2,1,2]0,1,2,3}")) == [2, 2]
    assert xc.HloSharding.from_string("{devices=[1,2,1,2]0,1,2,3}").get_axis_sizes() == [2, 2]
    transposed = parse("{devices=[2,2]0,2,1,3}")
    assert analyze_tile_assignment(transposed) is None
    assert xla_aborts("{devices=[2,2]0,2,1,3}")
    with pytest.raises(NotFactorisable, match="explicit device lists"):
        derive_mesh([transposed])
    # lenient: through its iota form
    assert derive_mesh([transposed], lenient=True).mesh.shape == (2, 2)


def test_iota_form_of_recovers_random_iotas() -> None:
    rng = random.Random(7)
    for _ in range(300):
        _, model = random_iota(rng)
        tile = model.tile
        explicit = TileAssignment.from_devices(tile.dims, tile.devices())
        found = iota_form_of(explicit)
        assert found is not None and found.is_iota
        assert (found.reshape, found.perm) == (tile.reshape, tile.perm)
    # non-iota lists have none
    assert iota_form_of(TileAssignment.from_devices([2, 2], [1, 0, 3, 2])) is None
    assert iota_form_of(TileAssignment.from_devices([4], [0, 1, 3, 2])) is None
    assert iota_form_of(TileAssignment.from_devices([3], [0, 2, 1])) is None
    big = TileAssignment.iota([64, 1024], [32, 64, 32], [2, 0, 1])
    found = iota_form_of(TileAssignment.from_devices(big.dims, big.devices()))
    assert found is not None and (found.reshape, found.perm) == (big.reshape, big.perm)


def test_iota_form_of_short_lists_equals_the_numpy_twin() -> None:
    # a listed tile of at most LISTED_IOTA_DEVICES is read in plain Python (no numpy import
    # for a directory summary); it must answer as the array reading does, iota or not
    from meshdiag.model.tiles import _iota_form_of_list, iota_form_of_array

    rng = random.Random(11)
    for k in range(600):
        _, model = random_iota(rng)
        tile = model.tile
        devices = list(tile.devices())
        if k % 3 == 1:  # swap two devices: mostly not an iota any more
            i, j = rng.randrange(len(devices)), rng.randrange(len(devices))
            devices[i], devices[j] = devices[j], devices[i]
        elif k % 3 == 2:
            rng.shuffle(devices)
        listed = tuple(devices)
        ours = _iota_form_of_list(tile.dims, listed)
        theirs = iota_form_of_array(np.asarray(listed, dtype=np.int64).reshape(tile.dims))
        assert ours == theirs, (tile.dims, listed)
        if ours is not None:
            assert ours.devices() == listed
    for dims, listed in [((1,), (0,)), ((1,), (3,)), ((2,), (1, 0)), ((4,), (0, 0, 0, 0))]:
        theirs = iota_form_of_array(np.asarray(listed, dtype=np.int64).reshape(dims))
        assert _iota_form_of_list(dims, listed) == theirs


# -- (2) module meshes --------------------------------------------------------------------


def _refine_by_rule(meshes: list[list[int]]) -> list[int] | None:
    """The documented rule, independently: the chain of every local mesh's prefix products."""
    cuts: set[int] = set()
    for m in meshes:
        cuts |= {math.prod(m[:i]) for i in range(len(m) + 1)}
    pts = sorted(cuts)
    if any(y % x for x, y in zip(pts, pts[1:], strict=False)):
        return None
    return [y // x for x, y in zip(pts, pts[1:], strict=False)]


def _lowered_shardings(fn, *args) -> list[str]:
    jax.config.update("jax_use_shardy_partitioner", False)
    try:
        text = jax.jit(fn).lower(*args).as_text()
    finally:
        jax.config.update("jax_use_shardy_partitioner", True)
    import re

    return re.findall(r'mhlo\.sharding = "(\{[^"]*\})"', text)


def _check_module(strings: list[str]) -> DerivedMesh:
    hs = [xc.HloSharding.from_string(t) for t in strings]
    models = [from_xla(h) for h in hs]
    derived = derive_mesh(models)
    tiled = [h for h in hs if h.is_tiled() and not h.is_manual()]
    expected = _refine_by_rule([h.get_axis_sizes() for h in tiled])
    assert derived is not None
    assert [s for _, s in derived.mesh.axes] == expected
    assert derived.mesh.names == tuple(f"_axis_{i}" for i in range(len(expected)))
    # every import on the derived mesh keeps the sharding's device assignment
    for h, m in zip(hs, models, strict=True):
        if not (h.is_tiled() and not h.is_manual()):
            continue
        ns = import_sharding(m, derived.mesh)
        got, kinds = named_positions(derived.mesh, [d.axes for d in ns.dims])
        want = canon(
            h.tile_assignment_dimensions(),
            h.tile_assignment_devices(),
            h.replicate_on_last_tile_dim(),
        )
        assert canon(got.shape, got.reshape(-1), kinds[-1:] == ("replicated",)) == want
    return derived


def test_module_meshes_from_lowered_jax() -> None:
    devs = np.array(jax.devices()[:8])
    m24 = JMesh(devs.reshape(2, 4), ("batch", "model"))
    m222 = JMesh(devs.reshape(2, 2, 2), ("a", "b", "c"))
    x = jax.ShapeDtypeStruct((8, 16), np.float32)

    def module(mesh, in_specs, mid_spec):
        def f(*xs):
            y = sum(xs)
            return jax.lax.with_sharding_constraint(y * 2, JNamed(mesh, mid_spec))

        args = [jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=JNamed(mesh, s)) for s in in_specs]
        return _lowered_shardings(f, *args)

    cases = [
        (m24, [P(None, "model")], P("batch", None)),
        (m24, [P("model", "batch"), P(None, "batch")], P(("batch", "model"), None)),
        (m24, [P("batch", "model")], P(None, ("model", "batch"))),
        (m222, [P("c", "a"), P("b", None)], P(None, ("a", "c"))),
        (m222, [P(("b", "a"), None)], P("c", None)),
    ]
    for mesh, specs, mid in cases:
        strings = module(mesh, specs, mid)
        assert len(strings) >= 2
        _check_module(strings)
    # the seed module: one sharding decides the mesh
    seed = _check_module(["{devices=[1,4,2]<=[8] last_tile_dim_replicate}", "{replicated}"])
    assert seed.mesh.shape == (4, 2) and seed.sources == (0,)


def test_derive_mesh_kinds_and_errors() -> None:
    tup = HloSharding.tuple_of(
        [parse("{devices=[2,1,2]<=[4] last_tile_dim_replicate}"), parse("{maximal device=3}")]
    )
    d = derive_mesh(
        [
            parse("{replicated}"),
            tup,
            parse("{maximal device=1}"),
            parse("{devices=[4]<=[2,2]T(1,0)}"),
        ]
    )
    assert d.mesh.shape == (2, 2) and d.sources == (1, 3) and d.maximal == (1, 3)
    assert derive_mesh([parse("{replicated}"), parse("{manual}")]) is None
    only_max = derive_mesh([parse("{maximal device=2}")])
    assert only_max.mesh.axes == () and only_max.maximal == (2,)
    with pytest.raises(NotFactorisable, match="#1"):
        derive_mesh([parse("{devices=[2]<=[2]}"), parse("{devices=[2,3]<=[2,3]T(1,0)}")])
    with pytest.raises(NotFactorisable, match="common factorisation"):
        derive_mesh([parse("{devices=[2,3]<=[6]}"), parse("{devices=[3,2]<=[6]}")])
    assert issubclass(NotFactorisable, MeshdiagError)


def test_import_sub_axes_and_subgroups() -> None:
    a = parse("{devices=[8]<=[8]}")
    b = parse("{devices=[4,2]<=[2,4]T(1,0)}")  # local mesh [2,4]
    d = derive_mesh([a, b])
    assert d.mesh.shape == (2, 4)
    ns = import_sharding(a, d.mesh)
    assert ns.dims[0].axes == (AxisRef("_axis_0"), AxisRef("_axis_1"))
    c = parse("{devices=[4,2]<=[8]}")
    d2 = derive_mesh([c, parse("{devices=[2,4]<=[8]}")])
    assert d2.mesh.shape == (2, 2, 2)
    # on the coarser [4,2] mesh of c alone, [2,4]<=[8] needs a sub-axis of _axis_0
    only_c = derive_mesh([c]).mesh
    ns = import_sharding(parse("{devices=[2,4]<=[8]}"), only_c)
    assert ns.dims[0].axes == (AxisRef("_axis_0", 1, 2),)
    assert ns.dims[1].axes == (AxisRef("_axis_0", 2, 2), AxisRef("_axis_1"))
    # last_tile_dim_replicate stays implicit; last_tile_dims gives explicit lists
    seed = parse("{devices=[1,4,2]<=[8] last_tile_dim_replicate}")
    assert import_sharding(seed, derive_mesh([seed]).mesh).replicated == ()
    red = parse("{devices=[2,2]<=[4] last_tile_dims={unreduced}}")
    ns = import_sharding(red, derive_mesh([red]).mesh)
    assert ns.unreduced == (AxisRef("_axis_1"),) and ns.dims[0].axes == (AxisRef("_axis_0"),)
    mx = import_sharding(parse("{maximal device=5}"), only_c)
    assert mx.mesh.is_maximal and mx.mesh_ref == "maximal_mesh_5" and mx.dims == ()
    with pytest.raises(NotFactorisable):
        import_sharding(parse("{devices=[2,3]<=[2,3]T(1,0)}"), Mesh((("x", 6),)))


# -- (3) plain specs on random meshes against JAX --------------------------------------------


def _jax_spec(ns) -> P:
    parts = []
    for d in ns.dims:
        names = [r.name for r in d.axes]
        parts.append(None if not names else names[0] if len(names) == 1 else tuple(names))
    return P(*parts)


def _hlo_ids(jmesh: JMesh, spec: P, ndim: int, ids: list[int]):
    """JAX's HloSharding for spec, device numbers turned into mesh device ids."""
    h = JNamed(jmesh, spec)._to_xla_hlo_sharding(ndim)
    if h.is_replicated():
        return None
    devs = [ids[k] for k in h.tile_assignment_devices()]
    return h, devs


def _random_spec(rng: random.Random, names: list[str], ndim: int) -> P:
    pool = names[:]
    rng.shuffle(pool)
    parts: list = [None] * ndim
    for name in pool:
        if rng.random() < 0.3:
            continue
        d = rng.randrange(ndim)
        parts[d] = (
            name
            if parts[d] is None
            else (*(parts[d] if isinstance(parts[d], tuple) else (parts[d],)), name)
        )
    return P(*parts)


def _all_specs(names: list[str], ndim: int):
    for assign in itertools.product(range(ndim + 1), repeat=len(names)):
        used = [i for i, a in enumerate(assign) if a < ndim]
        for order in itertools.permutations(used):
            parts: list = [[] for _ in range(ndim)]
            for i in order:
                parts[assign[i]].append(names[i])
            yield P(*[None if not p else p[0] if len(p) == 1 else tuple(p) for p in parts])


def _plain_exists(jmesh, names, ndim, ids, target) -> bool:
    seen = set()
    for spec in _all_specs(names, ndim):
        got = _hlo_ids(jmesh, spec, ndim, ids)
        if got is None:
            continue
        h, devs = got
        key = canon(h.tile_assignment_dimensions(), devs, h.replicate_on_last_tile_dim())
        if key in seen:
            continue
        seen.add(key)
        if key == target:
            return True
    return False


def test_plain_spec_recovers_jax_specs() -> None:
    rng = random.Random(99)
    all_devs = jax.devices()
    done = none_checked = 0
    while done < 320:
        n = rng.choice([2, 4, 6, 8, 12, 16, 24, 32, 64])
        shape = [s for s in _factor(rng, n, rng.randint(1, 4))]
        names = [f"m{i}" for i in range(len(shape))]
        ids = list(range(n))
        if rng.random() < 0.5:
            rng.shuffle(ids)
        jmesh = JMesh(np.array([all_devs[i] for i in ids]).reshape(shape), names)
        mesh = Mesh(tuple(zip(names, shape, strict=True)), tuple(ids))
        ndim = rng.randint(1, 3)
        spec = _random_spec(rng, names, ndim)
        got = _hlo_ids(jmesh, spec, ndim, ids)
        if got is None:
            continue
        h, devs = got
        model = HloSharding.tiled(
            TileAssignment.from_devices(h.tile_assignment_dimensions(), devs),
            replicate_on_last=h.replicate_on_last_tile_dim(),
        )
        ps = plain_spec(model, mesh)
        assert ps is not None, (mesh.short(), spec)
        assert JNamed(jmesh, _jax_spec(ps)).is_equivalent_to(JNamed(jmesh, spec), ndim), (spec, ps)
        assert hlo_to_named(model, mesh) is not None
        same = plain_specs_with_same_tiling(model, mesh)
        assert any(
            JNamed(jmesh, _jax_spec(c)).is_equivalent_to(JNamed(jmesh, spec), ndim) for c in same
        )
        # the same tiling in plain iota device order: None exactly when no plain spec fits
        if none_checked < 120 and len(shape) <= 4:
            iota = HloSharding.tiled(
                TileAssignment.iota(h.tile_assignment_dimensions()),
                replicate_on_last=h.replicate_on_last_tile_dim(),
            )
            target = canon(h.tile_assignment_dimensions(), range(n), h.replicate_on_last_tile_dim())
            exists = _plain_exists(jmesh, names, ndim, ids, target)
            assert (plain_spec(iota, mesh) is not None) == exists, (mesh.short(), h)
            none_checked += 1
        done += 1


# -- (4) the seed ---------------------------------------------------------------------------

SEED = "{devices=[1,4,2]<=[8] last_tile_dim_replicate}"
GOOD = "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"


def test_seed() -> None:
    seed = parse(SEED)
    d = derive_mesh([seed])
    assert d.mesh.axes == (("_axis_0", 4), ("_axis_1", 2)) and d.mesh.device_ids is None
    ns = import_sharding(seed, d.mesh)
    assert [d.axes for d in ns.dims] == [(), (AxisRef("_axis_0"),)] and ns.replicated == ()

    global_mesh = Mesh((("batch", 2), ("model", 4)))
    named = hlo_to_named(seed, global_mesh)
    assert [d.axes for d in named.dims] == [(), (AxisRef("batch"), AxisRef("model", 1, 2))]
    assert plain_spec(seed, global_mesh) is None
    cands = plain_specs_with_same_tiling(seed, global_mesh)
    assert [d.axes for d in cands[0].dims] == [(), (AxisRef("model"),)]

    good = parse(GOOD)
    assert [d.axes for d in plain_spec(good, global_mesh).dims] == [(), (AxisRef("model"),)]
    assert derive_mesh([good]).mesh.shape == (2, 4)

    fits = [m.shape for m in meshes_fitting(seed)]
    assert (4, 2) in fits and (2, 4) not in fits and (8,) not in fits
    assert fits == [(4, 2), (2, 2, 2)]
    assert (2, 4) in [m.shape for m in meshes_fitting(good)]
    # every listed mesh really takes a plain spec giving the seed's assignment (JAX check)
    for shape in fits:
        jm = JMesh(
            np.array(jax.devices()[:8]).reshape(shape), [f"axis_{i}" for i in range(len(shape))]
        )
        ps = plain_spec(seed, Mesh(tuple((f"axis_{i}", s) for i, s in enumerate(shape))))
        h = JNamed(jm, _jax_spec(ps))._to_xla_hlo_sharding(2)
        assert canon(h.tile_assignment_dimensions(), h.tile_assignment_devices(), True) == canon(
            [1, 4, 2], range(8), True
        )


def test_permuted_mesh_device_ids() -> None:
    # device at mesh position p is ids[p]: (None, 'model') on a mesh with reversed ids
    ids = tuple(reversed(range(8)))
    mesh = Mesh((("batch", 2), ("model", 4)), ids)
    arr = np.asarray(ids).reshape(2, 4).T.reshape(1, 4, 2)
    s = HloSharding.tiled(TileAssignment.from_array(arr), replicate_on_last=True)
    assert [d.axes for d in plain_spec(s, mesh).dims] == [(), (AxisRef("model"),)]
    assert plain_spec(s, Mesh((("batch", 2), ("model", 4)))) is None
    assert hlo_to_named(parse("{devices=[2]<=[2]}"), Mesh((("x", 4),))) is None  # device count


def test_meshes_fitting_is_complete() -> None:
    """Against brute force over every ordered factorisation (plain_spec is JAX-checked above)."""
    from meshdiag.model.derive import _ordered_factorisations

    rng = random.Random(3)
    for _ in range(60):
        n = rng.choice([4, 8, 12, 16, 24])
        reshape = _factor(rng, n, rng.randint(1, 3))
        perm = list(range(len(reshape)))
        rng.shuffle(perm)
        dims = _factor(rng, n, rng.randint(2, 3))
        s = HloSharding.tiled(
            TileAssignment.iota(dims, reshape, perm), replicate_on_last=rng.random() < 0.5
        )
        brute = sorted(
            (
                sh
                for sh in _ordered_factorisations(n)
                if plain_spec(s, Mesh(tuple((f"axis_{i}", x) for i, x in enumerate(sh))))
                is not None
            ),
            key=lambda sh: (len(sh), sh),
        )
        assert [m.shape for m in meshes_fitting(s, max_results=1000)] == brute, (
            dims,
            reshape,
            perm,
        )
