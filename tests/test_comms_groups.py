"""Replica groups in XLA's three spellings, checked against XLA itself (jaxlib's HloSharding:
the iota of a replica group list is the iota of a tile assignment; a mesh-form group over
axes S is a replicate subgroup of the V3 sharding that shards the other axes), and axis
attribution as the inverse of axis groups."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jax._src.lib import xla_client as xc

from meshdiag.comms.axes import attribute, refs_text
from meshdiag.comms.groups import (
    Groups,
    axis_factors,
    axis_groups,
    mesh_groups,
    parse_id_lists,
    parse_pairs,
    parse_replica_groups,
    read_id_lists,
)
from meshdiag.errors import MeshdiagError, ParseError
from meshdiag.inputs.mesh_input import parse_mesh
from meshdiag.model.mesh import Mesh
from meshdiag.model.sharding import AxisRef


def as_sets(rows) -> set[frozenset[int]]:
    return {frozenset(int(x) for x in r) for r in rows}


# -- list form ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "groups"),
    [
        ("{{0,1},{2,3}}", ((0, 1), (2, 3))),
        ("{{0,1}, {1,2}}", ((0, 1), (1, 2))),  # spaces, as hand-written tests print them
        ("{{0,1,2,3,4,5,6,7}}", ((0, 1, 2, 3, 4, 5, 6, 7),)),
        ("{}", None),  # one group of every device
    ],
)
def test_list_form(text, groups):
    g = parse_replica_groups(text)
    assert g.form == "list" and g.groups == groups


@pytest.mark.parametrize("bad", ["{{0,1},{2,", "{{0,a}}", "{0,1}", "{{0,1}}x", "[2,4]<=[3]"])
def test_malformed_groups_raise_parse_errors(bad):
    with pytest.raises(ParseError):
        parse_replica_groups(bad)


def test_pairs():
    assert parse_pairs("{{0,1},{1,2},{3,3}}") == ((0, 1), (1, 2), (3, 3))
    with pytest.raises(ParseError):
        parse_pairs("{{0,1,2}}")


# -- iota form: XLA's tile-assignment iota ------------------------------------------------------


def _random_iota(rng: random.Random) -> tuple[str, int, int]:
    n = rng.choice([2, 4, 6, 8, 12, 16, 24, 32, 64])
    factors = _factorise(n, rng)
    perm = list(range(len(factors)))
    rng.shuffle(perm)
    g = rng.choice([d for d in range(1, n + 1) if n % d == 0])
    reshape = ",".join(map(str, factors))
    t = f"T({','.join(map(str, perm))})" if len(factors) > 1 else ""
    return f"[{g},{n // g}]<=[{reshape}]{t}", g, n // g


def _factorise(n: int, rng: random.Random) -> list[int]:
    out = []
    while n > 1:
        d = rng.choice([d for d in range(2, n + 1) if n % d == 0])
        out.append(d)
        n //= d
    return out or [1]


def test_iota_form_matches_xla():
    rng = random.Random(7)
    seen = 0
    for _ in range(300):
        text, g, s = _random_iota(rng)
        ours = parse_replica_groups(text)
        xla = xc.HloSharding.from_string("{devices=" + text + "}")
        devices = xla.tile_assignment_devices()
        expected = tuple(tuple(devices[i * s : (i + 1) * s]) for i in range(g))
        assert ours.form == "iota" and ours.groups == expected, text
        seen += "T(" in text
    assert seen > 100


@pytest.mark.parametrize(
    ("text", "groups"),
    [  # numpy: arange(8).reshape(reshape).transpose(perm).reshape(G, S)
        ("[2,4]<=[4,2]T(1,0)", ((0, 2, 4, 6), (1, 3, 5, 7))),
        ("[4,2]<=[2,2,2]T(1,0,2)", ((0, 1), (4, 5), (2, 3), (6, 7))),
        ("[4,2]<=[2,4]T(1,0)", ((0, 4), (1, 5), (2, 6), (3, 7))),
        ("[2,4]<=[8]", ((0, 1, 2, 3), (4, 5, 6, 7))),
    ],
)
def test_iota_examples(text, groups):
    assert parse_replica_groups(text).groups == groups


# -- mesh form ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "groups"),
    [
        ("mesh['axis_0'=2,'axis_1'=4] {'axis_1'}", {(0, 1, 2, 3), (4, 5, 6, 7)}),
        ("mesh['axis_0'=2,'axis_1'=4] {'axis_0'}", {(0, 4), (1, 5), (2, 6), (3, 7)}),
        # jaxlib 0.10.2's all-reduce of a contraction over 'model' (see the fixtures)
        (
            "mesh['axis_0'=1,'axis_1'=4,'axis_2'=2], device_ids=([2,4]T(1,0)) {'axis_1'}",
            {(0, 1, 2, 3), (4, 5, 6, 7)},
        ),
        ("mesh[a=2,b=4] {a}", {(0, 4), (1, 5), (2, 6), (3, 7)}),  # bare names
        ("@mesh<a=2,b=4> {b}", {(0, 1, 2, 3), (4, 5, 6, 7)}),  # the @mesh<...> spelling
        ("@mesh<a=2,b=4>, device_ids=(7,6,5,4,3,2,1,0) {a}", {(3, 7), (2, 6), (1, 5), (0, 4)}),
        ("mesh['x'=8] {'x':(2)2}", {(0, 2), (1, 3), (4, 6), (5, 7)}),
        ("mesh['x'=8] {}", {(i,) for i in range(8)}),
    ],
)
def test_mesh_form(text, groups):
    g = parse_replica_groups(text)
    assert g.form == "mesh"
    assert {tuple(sorted(r)) for r in g.groups} == groups


@pytest.mark.parametrize(
    ("sub", "iota"),
    [  # XLA's mapping of sub-axes of a mesh a=8 to iota replica groups
        ("a:(1)2", "[4,2]<=[2,4]T(1,0)"),
        ("a:(1)4", "[2,4]<=[4,2]T(1,0)"),
        ("a:(2)2", "[4,2]<=[2,2,2]T(0,2,1)"),
        ("a:(2)4", "[2,4]<=[8]"),
        ("a:(4)2", "[4,2]<=[8]"),
        ("a", "[1,8]<=[8]"),
    ],
)
def test_mesh_form_sub_axes_equal_their_iota(sub, iota):
    mesh_form = parse_replica_groups(f"mesh[a=8] {{{sub}}}")
    assert mesh_form.groups == parse_replica_groups(iota).groups


@pytest.mark.parametrize("bad", ["mesh['a'=2] {'b'}", "mesh['a'=4] {'a':(3)2}", "mesh['a'=2 {a}"])
def test_mesh_form_errors(bad):
    with pytest.raises(ParseError):
        parse_replica_groups(bad)


def _random_mesh(rng: random.Random) -> Mesh:
    n = rng.choice([8, 16, 24])
    sizes = _factorise(n, rng)
    rng.shuffle(sizes)
    ids = list(range(n))
    if rng.random() < 0.5:
        rng.shuffle(ids)
    return Mesh(tuple((f"a{i}", s) for i, s in enumerate(sizes)), tuple(ids))


def _random_refs(mesh: Mesh, rng: random.Random) -> tuple[AxisRef, ...]:
    refs = []
    for name, size in mesh.axes:
        r = rng.random()
        if r < 0.35:
            refs.append(AxisRef(name))
        elif r < 0.6:
            subs = [
                (pre, k)
                for pre in range(1, size + 1)
                for k in range(2, size)
                if size % (pre * k) == 0
            ]
            if subs:
                refs.append(AxisRef(name, *rng.choice(subs)))
    return tuple(refs)


def _v3_ref(r: AxisRef) -> str:
    return f"'{r.name}'" + (f":({r.pre}){r.size}" if r.is_sub else "")


def test_axis_groups_match_xla_replicate_subgroups():
    """Groups over S = the devices of one tile of the V3 sharding that shards a rank-1
    tensor over every other factor (XLA's v3_to_v2_sharding), for random meshes with
    permuted device ids and random (sub-)axes."""
    rng = random.Random(3)
    checked = 0
    for _ in range(150):
        mesh = _random_mesh(rng)
        refs = _random_refs(mesh, rng)
        factors = axis_factors(mesh, refs)
        chosen_names = {(r.name, r.pre, r.size) for r in refs}
        others = []
        for name, pre, size in factors:
            full = mesh.axis_size(name)
            in_refs = any(
                n == name and (p is None or (p <= pre and pre * size <= p * s))
                for n, p, s in chosen_names
            )
            if not in_refs:
                others.append(AxisRef(name) if size == full else AxisRef(name, pre, size))
        # XLA refuses (aborts on) an iota device list written out: only a permutation
        ids = f", device_ids=({','.join(map(str, mesh.ids))})" if mesh.device_ids else ""
        axes = ",".join(f"'{a}'={s}" for a, s in mesh.axes)
        dim = "{" + ", ".join(map(_v3_ref, others)) + "}"
        v2 = xc.HloSharding.from_string(f"{{mesh[{axes}]{ids}, [{dim}]}}").v3_to_v2_sharding()
        devices = v2.tile_assignment_devices()
        n = math.prod(r.size if r.is_sub else mesh.axis_size(r.name) for r in refs)
        if not others:  # a replicated sharding: one group of every device
            expected = {frozenset(mesh.ids)}
        elif not refs:
            expected = {frozenset([d]) for d in devices}
        else:
            expected = {frozenset(devices[i : i + n]) for i in range(0, len(devices), n)}
        assert as_sets(axis_groups(mesh, refs)) == expected, (mesh, refs)
        # and the printed mesh form parses to the same groups
        text = f"mesh[{axes}]{ids} {{{','.join(map(_v3_ref, refs))}}}"
        assert as_sets(parse_replica_groups(text).groups) == expected
        checked += any(r.is_sub for r in refs)
    assert checked > 20


def test_mesh_groups_in_python_equal_the_numpy_groups():
    """`mesh_groups` (Python for a mesh of at most 1,024 devices) gives the rows of
    `axis_groups` in their order, with and without device ids, and past the bound."""
    rng = random.Random(5)
    for k in range(300):
        mesh = _random_mesh(rng)
        if k % 3 == 0:
            mesh = Mesh(mesh.axes)  # no device ids: the iota order
        refs = _random_refs(mesh, rng)
        assert mesh_groups(mesh, refs) == Groups.of_array(axis_groups(mesh, refs)), (mesh, refs)
    big = Mesh((("x", 16), ("y", 128)))
    for refs in [(AxisRef("y"),), (AxisRef("x"), AxisRef("y", 2, 4)), ()]:
        assert mesh_groups(big, refs) == Groups.of_array(axis_groups(big, refs))
    with pytest.raises(MeshdiagError, match="named twice"):
        mesh_groups(big, (AxisRef("x"), AxisRef("x")))


# -- attribution ----------------------------------------------------------------------------


def test_attribution_inverts_axis_groups():
    rng = random.Random(11)
    for _ in range(200):
        mesh = _random_mesh(rng)
        refs = _random_refs(mesh, rng)
        groups = tuple(tuple(int(x) for x in r) for r in axis_groups(mesh, refs))
        got = attribute(groups, mesh)
        assert got is not None, (mesh, refs)
        assert as_sets(axis_groups(mesh, got)) == as_sets(groups), (mesh, refs, got)


@pytest.mark.parametrize(
    ("groups", "axes"),
    [
        (((0, 1, 2, 3), (4, 5, 6, 7)), "model"),
        (((0, 4), (1, 5), (2, 6), (3, 7)), "batch"),
        (((0, 2), (1, 3), (4, 6), (5, 7)), "model:(1)2"),
        (((0, 1), (2, 3), (4, 5), (6, 7)), "model:(2)2"),
        (((0, 1, 2, 3, 4, 5, 6, 7),), "batch,model"),
        (((0, 2, 4, 6), (1, 3, 5, 7)), "batch,model:(1)2"),
        (tuple((i,) for i in range(8)), "-"),
    ],
)
def test_attribution_on_batch_model(groups, axes):
    got = attribute(groups, parse_mesh("batch=2,model=4"))
    assert got is not None and refs_text(got) == axes


@pytest.mark.parametrize(
    "groups",
    [
        ((0, 3), (1, 2), (4, 7), (5, 6)),  # jax axis_index_groups=[[0,3],[1,2]] on model
        ((0, 5), (1, 4), (2, 7), (3, 6)),
        ((0, 1), (2, 3)),  # not every device
        ((0, 1, 2), (3, 4, 5, 6, 7)),  # uneven
        ((0, 1), (1, 2), (3, 4), (5, 6)),  # a device twice
    ],
)
def test_groups_no_axes_give(groups):
    assert attribute(groups, parse_mesh("batch=2,model=4")) is None


# -- the printed-form fast path ------------------------------------------------------------


@given(
    st.lists(st.lists(st.integers(0, 10**10), min_size=0, max_size=5), max_size=6),
    st.sampled_from(["", " "]),
)
def test_id_lists_read_by_splitting_equal_the_cursor_reading(groups, space):
    """Whatever the spelling (spaces, empty groups, ids too long for the fast path), the
    split reading gives what the cursor reads, or the same error."""
    text = "{" + f",{space}".join("{" + ",".join(map(str, g)) + "}" for g in groups) + "}"

    def read(fn):
        try:
            return fn(text, "a device id")
        except (ParseError, MeshdiagError) as e:
            return type(e), str(e)

    assert read(parse_id_lists) == read(read_id_lists)


def test_id_lists_over_the_device_limit_are_refused_alike(monkeypatch):
    from meshdiag import limits

    monkeypatch.setattr(limits, "MAX_DEVICES", 3)
    with pytest.raises(MeshdiagError, match="replica groups has 4 devices"):
        parse_id_lists("{{0,1},{2,3}}", "a device id")


# -- groups kept flat --------------------------------------------------------------------------


@given(st.lists(st.lists(st.integers(0, 2**40), max_size=5), max_size=8))
def test_flat_groups_read_as_the_tuple_of_tuples(rows):
    """`Groups` (one array of ids) reads as the tuple of tuples it was made from: length,
    every index and slice, iteration, equality both ways, hash and pickling; rows of one
    length or of several, empty rows and none."""
    import pickle

    from meshdiag.comms.groups import Groups, id_count

    want = tuple(tuple(r) for r in rows)
    g = Groups(rows)
    assert len(g) == len(want) and tuple(g) == want and list(iter(g)) == list(want)
    assert g == want and want == g and bool(g) == bool(want)
    for i in range(-len(want), len(want)):
        assert g[i] == want[i]
    for s in (slice(None), slice(1, None), slice(None, -1), slice(None, None, 2)):
        assert g[s] == want[s]
    with pytest.raises(IndexError):
        g[len(want)]
    assert g.num_ids == id_count(want) == id_count(g) == sum(map(len, want))
    again = Groups(list(want))
    assert again == g and hash(again) == hash(g)
    assert pickle.loads(pickle.dumps(g)) == g
    if want[::-1] != want:
        assert Groups(want[::-1]) != g
    if len({len(r) for r in want}) == 1:  # rows of one length: an array of them too
        import numpy as np

        arr = np.array(want, dtype=np.int64).reshape(len(want), len(want[0]))
        assert Groups.of_array(arr) == g and tuple(Groups.of_array(arr)) == want


def test_groups_from_arrays_equal_those_from_lists():
    """The iota and mesh forms' rows (from arrays, `Groups.of_array`) equal the lists XLA
    prints."""
    for iota, listed in (
        ("[2,4]<=[4,2]T(1,0)", "{{0,2,4,6},{1,3,5,7}}"),
        ("[4,2]<=[8]", "{{0,1},{2,3},{4,5},{6,7}}"),
        ("[1,8]<=[8]", "{{0,1,2,3,4,5,6,7}}"),
    ):
        a, b = parse_replica_groups(iota).groups, parse_replica_groups(listed).groups
        assert a == b and hash(a) == hash(b) and tuple(a) == tuple(b)


@given(
    st.lists(st.lists(st.integers(0, 10**10), max_size=4), max_size=5),
    st.sampled_from(["", " "]),
    st.sampled_from(["", ", use_global_device_ids=true", "}, x={{1}}"]),
)
def test_the_end_of_printed_groups_is_where_the_braces_close(groups, space, after):
    """`replica_groups_end` of a list, found by the printed form's pattern where it
    matches, is where the bracket walk finds it."""
    from meshdiag.comms.groups import replica_groups_end
    from meshdiag.ir.text import brace_end

    value = "{" + f",{space}".join("{" + ",".join(map(str, g)) + "}" for g in groups) + "}"
    line = "x = all-reduce(%p), replica_groups=" + value + after
    pos = line.index("replica_groups=") + len("replica_groups=")
    assert replica_groups_end(line, pos) == brace_end(line, pos) == pos + len(value)
