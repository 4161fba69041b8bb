"""named → tiled export vs the real systems: JAX's NamedSharding, JAX lowering (Shardy on/off),
XLA's V3 → V2 conversion, and the torch_xla 2x4 table."""

import random
import re

import jax
import numpy as np
import pytest
from jax._src.lib import xla_client as xc
from jax.sharding import Mesh as JaxMesh
from jax.sharding import NamedSharding as JaxNamed
from jax.sharding import PartitionSpec as P

from meshdiag.errors import MeshdiagError
from meshdiag.model.mesh import Mesh
from meshdiag.model.named_to_tiled import named_to_hlo, ordered_axis_refs, subgroup
from meshdiag.model.sharding import AxisRef, DimSharding, NamedSharding
from meshdiag.model.tiles import TileAssignment
from meshdiag.notation.gspmd import parse_gspmd, print_gspmd
from meshdiag.notation.gspmd_v3 import parse_v3_leaf, print_v3
from meshdiag.notation.pspec import parse_pspec, pspec_to_named
from meshdiag.notation.shardy import parse_mesh_attr, parse_sdy_sharding

DEVICES = jax.devices()
_TYPE = {"replicated": 0, "manual": 4, "unreduced": 6}


def _facts(h):
    """(dims, devices, replicate_on_last, subgroup type names) of a meshdiag HloSharding."""
    if not h.is_tiled:
        return h.kind
    return (
        list(h.tile.dims),
        list(h.tile.devices()),
        h.replicate_on_last,
        [_TYPE[t] for t in h.subgroup_types],
    )


def _xla_facts(x):
    if x.is_replicated():
        return "replicated"
    if x.is_manual():
        return "manual"
    if x.is_maximal():
        return "maximal"
    return (
        list(x.tile_assignment_dimensions()),
        list(x.tile_assignment_devices()),
        x.replicate_on_last_tile_dim(),
        [int(t.value) for t in x.subgroup_types()],
    )


def _random_case(rng: random.Random):
    sizes = []
    n = 1
    for _ in range(rng.randint(1, 4)):
        s = rng.choice([1, 2, 2, 3, 4, 2])
        if n * s > 64:
            break
        sizes.append(s)
        n *= s
    names = [f"m{i}" for i in range(len(sizes))]
    rank = rng.randint(0, 4)
    free = names[:]
    rng.shuffle(free)
    spec = []
    for _ in range(rank):
        k = rng.choice([0, 0, 1, 1, 2])
        take, free = free[:k], free[k:]
        if not take:
            spec.append(None)
        elif len(take) == 1 and rng.random() < 0.7:
            spec.append(take[0])
        else:
            spec.append(tuple(take))
    return sizes, names, spec


def _spec_text(spec) -> str:
    return "P(" + ", ".join(repr(e) for e in spec) + ")"


def test_random_pspecs_match_jax_named_sharding():
    rng = random.Random(20240601)
    checked = 0
    for _ in range(340):
        sizes, names, spec = _random_case(rng)
        n = int(np.prod(sizes))
        jm = JaxMesh(np.array(DEVICES[:n]).reshape(sizes), names)
        want = JaxNamed(jm, P(*spec))._to_xla_hlo_sharding(len(spec))
        mesh = Mesh(tuple(zip(names, sizes, strict=True)))
        got = named_to_hlo(pspec_to_named(parse_pspec(_spec_text(spec)), mesh))
        assert _facts(got) == _xla_facts(want), (sizes, spec)
        assert print_gspmd(got) == str(want), (sizes, spec)
        checked += 1
    assert checked >= 300


def test_permuted_device_order_maps_positions_to_ids():
    """JAX numbers devices by their position in `mesh.devices.flat`; a meshdiag mesh with
    `device_ids = [d.id for d in mesh.devices.flat]` must give those positions mapped to ids
    (and XLA's sorted replica groups, built here with XLA's own Subgroup)."""
    rng = random.Random(7)
    for _ in range(60):
        sizes, names, spec = _random_case(rng)
        n = int(np.prod(sizes))
        order = list(range(n))
        rng.shuffle(order)
        jm = JaxMesh(np.array([DEVICES[i] for i in order]).reshape(sizes), names)
        want = JaxNamed(jm, P(*spec))._to_xla_hlo_sharding(len(spec))
        flat_ids = [d.id for d in jm.devices.flat]
        mesh = Mesh(tuple(zip(names, sizes, strict=True)), tuple(flat_ids))
        got = named_to_hlo(pspec_to_named(tuple(_norm(e) for e in spec), mesh))
        if want.is_replicated():
            assert got.kind == "replicated"
            continue
        mapped = np.array([flat_ids[p] for p in want.tile_assignment_devices()]).reshape(
            want.tile_assignment_dimensions()
        )
        types = list(want.subgroup_types()) or (
            [xc.OpSharding.Type.REPLICATED] if want.replicate_on_last_tile_dim() else []
        )
        expect = xc.HloSharding.subgroup_with_device_ordering(mapped, types)
        assert _facts(got) == _xla_facts(expect), (sizes, spec, order)
        assert print_gspmd(got, form="v1") == str(expect)


def _norm(e):
    if e is None:
        return None
    return (e,) if isinstance(e, str) else tuple(e)


# torch_xla V2 path on a 2x4 ('batch','model') mesh (reference §3.3)
TORCH_XLA_2x4 = [
    ("(None,'model')", "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"),
    ("('batch',None)", "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"),
    ("(None,'batch')", "{devices=[1,2,4]<=[8] last_tile_dim_replicate}"),
    ("('model',None)", "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}"),
    ("('batch','model')", "{devices=[2,4]<=[8]}"),
    ("('model','batch')", "{devices=[4,2]<=[2,4]T(1,0)}"),
    ("(('batch','model'),)", "{devices=[8]<=[8]}"),
    ("(('model','batch'),)", "{devices=[8]<=[2,4]T(1,0)}"),
    ("(None,None)", "{replicated}"),
]


@pytest.mark.parametrize("spec,expected", TORCH_XLA_2x4)
def test_torch_xla_2x4_table(spec, expected):
    mesh = Mesh((("batch", 2), ("model", 4)))
    got = named_to_hlo(pspec_to_named(parse_pspec(spec), mesh))
    assert print_gspmd(got) == expected
    assert str(xc.HloSharding.from_string(expected)) == expected  # XLA agrees on the text


LOWER_CASES = [
    ((2, 4), ("batch", "model"), P(None, "model"), (8, 8)),
    ((2, 4), ("batch", "model"), P("model", "batch"), (8, 8)),
    ((2, 4), ("batch", "model"), P(("batch", "model")), (16,)),
    ((2, 4), ("batch", "model"), P(), (4, 4)),
    ((8,), ("x",), P(None, "x"), (4, 16)),
    ((2, 2, 2), ("a", "b", "c"), P("c", None, "a"), (4, 4, 4)),
    ((2, 2, 2), ("a", "b", "c"), P(("c", "a"), "b"), (8, 4)),
    ((2, 4, 2), ("x", "y", "z"), P("y"), (8,)),
    ((4, 2, 2), ("x", "y", "z"), P(None, ("z", "x")), (2, 16)),
    ((2, 2, 4), ("dp", "fsdp", "tp"), P("fsdp", "tp", None, "dp"), (4, 8, 2, 2)),
    ((1, 8), ("one", "x"), P("one", "x"), (2, 8)),
    ((4, 4), ("r", "c"), P("c", "r"), (8, 8)),
]


def _lowered(shape_mesh, names, spec, shape, shardy: bool) -> str:
    jm = JaxMesh(np.array(DEVICES[: int(np.prod(shape_mesh))]).reshape(shape_mesh), names)
    prev = jax.config.jax_use_shardy_partitioner
    jax.config.update("jax_use_shardy_partitioner", shardy)
    try:
        f = jax.jit(lambda x: x + 1, in_shardings=JaxNamed(jm, spec))
        return f.lower(jax.ShapeDtypeStruct(shape, np.float32)).as_text()
    finally:
        jax.config.update("jax_use_shardy_partitioner", prev)


@pytest.mark.parametrize("case", LOWER_CASES, ids=lambda c: f"{c[1]}-{c[2]}")
def test_shardy_export_matches_jax_lowering(case):
    shape_mesh, names, spec, shape = case
    gspmd_text = _lowered(shape_mesh, names, spec, shape, shardy=False)
    sdy_text = _lowered(shape_mesh, names, spec, shape, shardy=True)
    want = parse_gspmd(re.search(r'mhlo\.sharding = "([^"]*)"', gspmd_text).group(1))
    mesh_line = re.search(r"sdy\.mesh @(\w+) = (<.*?>)(?: \{|$)", sdy_text, re.M)
    meshes = {mesh_line.group(1): parse_mesh_attr(mesh_line.group(2))}
    sharding = re.search(r"sdy\.sharding = (#sdy\.sharding<.*?>)[,}]", sdy_text).group(1)
    got = named_to_hlo(parse_sdy_sharding(sharding, meshes))
    assert got == want, (print_gspmd(got), print_gspmd(want))
    assert print_gspmd(got) == print_gspmd(want)


V3_CASES = [
    "{mesh['a'=2,'b'=4], [{'a'}, {'b'}]}",
    "{mesh['x'=8,'y'=4], [{'y'}, {'x':(2)2}]}",
    "{mesh['a'=2,'b'=2,'c'=2,'d'=2], [], manual={'a', 'b'}}",
    "{mesh['x'=8,'y'=4], replicated}",
    "{maximal_mesh[device_id=0]}",
    "{mesh['a'=2,'b'=4,'c'=4,'d'=2], device_ids=([4,16]T(1,0)), [{'a'}]}",
    "{mesh['x'=2,'y'=2], device_ids=(3,2,1,0), [{'x'}, {}]}",
    "{mesh['x'=2,'y'=2], device_ids=(3,2,1,0), [{'x'}, {'y'}]}",
    "{mesh[], replicated}",
    "{mesh['a'=2,'b'=4,'c'=3,'d'=8], [{'a'}], replicated={'c'}, unreduced={'d':(4)2}, "
    "manual={'b':(2)2}}",
    "{mesh['a'=2,'b'=4,'c'=3,'d'=8], [{'b', 'a'}, {'c', 'd', ?}]}",
    "{mesh['a.b'=2,'<axis> def'=4,'z/w'=2], [{'a.b'}, {'<axis> def':(2)2, 'z/w'}]}",
    "{mesh['x'=2,'y'=2], [{'y'}, {}], manual={'x'}}",
    "{mesh['x'=2,'y'=2], [{}, {}], unreduced={'x'}}",
    "{mesh['x'=2,'y'=2], [{'x'}, {}], unreduced={'y'}}",
    "{mesh['x'=2,'y'=2], [{}, {}], unreduced={'x', 'y'}}",
    "{mesh['x'=2,'y'=2], [{}, {}], manual={'x', 'y'}}",
    "{mesh['x'=1,'y'=4], [{'x'}, {}]}",
    "{mesh['x'=8], [{'x':(2)2}], replicated={'x':(1)2}}",
    "{mesh['x'=2,'y'=4], [{'y':(2)2}, {}]}",
    "{mesh['x'=2,'y'=2], [{?}, {'y', ?}]}",
    "{mesh['x'=2,'y'=2], []}",
    "{mesh['x'=2], device_ids=(1,0), [{}]}",
]


@pytest.mark.parametrize("text", V3_CASES)
def test_v3_matches_xla_v3_to_v2(text):
    xla = xc.HloSharding.from_string(text)
    h, end = parse_v3_leaf(text, 0)
    assert end == len(text)
    assert print_gspmd(h) == str(xla.v3_to_v2_sharding())
    assert print_v3(h.named) == str(xla)
    # the GSPMD parser dispatches V3 leaves here, tuples included
    tup = parse_gspmd("{" + text + ", {replicated}}")
    assert print_gspmd(tup.elements[0]) == print_gspmd(h)


def test_v3_metadata_is_kept_and_not_printed():
    h, _ = parse_v3_leaf("{mesh['x'=2], [{'x'}], metadata={{op_name=\"a\"}, {op_name=\"b\"}}}", 0)
    assert h.metadata == ('op_name="a"', 'op_name="b"')
    assert print_v3(h.named) == "{mesh['x'=2], [{'x'}]}"


def test_v3_bare_and_double_quoted_names():
    a, _ = parse_v3_leaf("{mesh[a=2,b=4], [{a}, {b}]}", 0)
    b, _ = parse_v3_leaf('{mesh["a"=2,"b"=4], [{"a"}, {"b"}]}', 0)
    assert a == b and print_v3(a.named) == "{mesh['a'=2,'b'=4], [{'a'}, {'b'}]}"


@pytest.mark.parametrize(
    "text",
    [
        "{mesh['x'=2,'y'=2], [{'x', 'x'}, {'y'}]}",
        "{mesh['x'=2,'y'=2], [{'z'}, {'y'}]}",
        "{mesh['x'=2], [{'x'}], replicated={'x'}}",
        "{mesh['x'=2,'y'=2], device_ids=(0,0,1,2), [{'x'}]}",
        "{mesh['x'=2,'y'=2]}",
        "{mesh['x'=0], [{}]}",
        "{mesh['x'=2], device_ids=([3]), [{}]}",
        "{mesh['x'=2], [{'x'}], replicated={'x'}, replicated={'x'}}",
    ],
)
def test_v3_invalid_is_a_parse_error(text):
    # (XLA CHECK-crashes on the first three; meshdiag reports them)
    from meshdiag.errors import ParseError

    with pytest.raises(ParseError) as e:
        parse_v3_leaf(text, 0)
    assert e.value.column >= 1


def test_ordered_axis_refs_example_from_xla():
    mesh = Mesh((("x", 2), ("y", 16), ("z", 4)))
    s = NamedSharding(mesh, (DimSharding((AxisRef("x"),)), DimSharding((AxisRef("y", 2, 2),))))
    assert ordered_axis_refs(s, mesh) == [
        AxisRef("x"),
        AxisRef("y", 1, 2),
        AxisRef("y", 2, 2),
        AxisRef("y", 4, 4),
        AxisRef("z"),
    ]


def test_special_meshes_and_manual_axes():
    empty = NamedSharding(Mesh(()), (DimSharding(),))
    assert named_to_hlo(empty).kind == "replicated"
    maximal = NamedSharding(Mesh((), (3,)), ())
    got = named_to_hlo(maximal)
    assert got.kind == "maximal" and got.device == 3
    mesh = Mesh((("a", 2), ("b", 4)))
    s = NamedSharding(mesh, (DimSharding((AxisRef("b"),)),))
    assert named_to_hlo(s, manual_axes=("a", "b")).kind == "manual"
    h = named_to_hlo(s, manual_axes=("a",))
    assert print_gspmd(h) == "{devices=[4,2]<=[2,4]T(1,0) last_tile_dims={manual}}"
    assert str(xc.HloSharding.from_string(print_gspmd(h))) == print_gspmd(h)


def test_unresolved_mesh_needs_one():
    s = parse_sdy_sharding('#sdy.sharding<@mesh, [{"x"}]>')
    with pytest.raises(MeshdiagError, match="@mesh"):
        named_to_hlo(s)
    assert print_gspmd(named_to_hlo(s, Mesh((("x", 4),)))) == "{devices=[4]<=[4]}"


def test_subgroup_normalisation_like_xla():
    # a size-1 subgroup dim is dropped, several types sorted manual < unreduced < replicated
    t = TileAssignment.iota((2, 2, 1, 2))
    h = subgroup(t, ("replicated", "manual", "unreduced"))
    want = xc.HloSharding.subgroup_with_device_ordering(
        np.arange(8).reshape(2, 2, 1, 2),
        [xc.OpSharding.Type.REPLICATED, xc.OpSharding.Type.MANUAL, xc.OpSharding.Type.UNREDUCED],
    )
    assert _facts(h) == _xla_facts(want)
    assert subgroup(TileAssignment.iota((1, 1, 4)), ("replicated",)).kind == "replicated"
