"""Shardy attributes: the verbatim corpus of shardy_ttmlir.md §1.3/§1.4/§6 round-trips, the
negatives fail with a column, the verifier reports Shardy's facts, and generated shardings
round-trip through print/parse."""

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meshdiag.errors import MeshdiagError, ParseError
from meshdiag.model.mesh import Mesh
from meshdiag.model.sharding import AxisRef, DimSharding, NamedSharding
from meshdiag.notation.shardy import (
    find_sdy_sharding_end,
    parse_mesh_attr,
    parse_mesh_attr_at,
    parse_sdy_sharding,
    parse_sharding_per_value,
    print_mesh_attr,
    print_sdy_sharding,
    print_sharding_per_value,
    verify_mesh,
    verify_named,
)

# (input, printed) — §1.3, Shardy drops explicit iota device_ids
MESHES = [
    ("<[]>", None),
    ("<[], device_ids=[0]>", None),
    ("<[], device_ids=[3]>", None),
    ('<["a"=1]>', None),
    ('<["a"=1], device_ids=[0]>', '<["a"=1]>'),
    ('<["a"=2], device_ids=[1, 0]>', None),
    ('<["a"=2, "b"=1]>', None),
    ('<["a"=2, "b"=1], device_ids=[1, 0]>', None),
    ('<["a"=2, "b"=2], device_ids=[0, 1, 2, 3]>', '<["a"=2, "b"=2]>'),
    ('<["a"=2, "c"=2, "b"=4, "d"=2]>', None),
    ('<["x"=2, "y"=2], device_ids=[3, 2, 1, 0]>', None),
    ('<["_axis_0"=4, "_axis_1"=2]>', None),
]


@pytest.mark.parametrize("text,printed", MESHES)
def test_mesh_round_trip(text, printed):
    m = parse_mesh_attr(text)
    assert print_mesh_attr(m) == (printed or text)
    assert parse_mesh_attr("#sdy.mesh" + text) == m
    assert verify_mesh(m) == []


def test_mesh_attr_kinds():
    assert parse_mesh_attr("<[]>").is_empty
    assert parse_mesh_attr("<[], device_ids=[3]>").is_maximal
    assert not parse_mesh_attr('<["a"=1]>').is_maximal
    # tokens may be spaced; a trailing attr-dict is left to the caller
    line = 'sdy.mesh @mesh = < [ "a" = 2 ] > {stablehlo.mesh = {}}'
    m, end = parse_mesh_attr_at(line, line.index("<"))
    assert m.axes == (("a", 2),) and line[end:].startswith(" {stablehlo")


# §1.4 verbatim attributes: (attribute text, canonical print when it differs)
SHARDINGS = [
    ('#sdy.sharding_per_value<[<@foo, [], replicated={"b"}>]>', None),
    ('#sdy.sharding_per_value<[<@foo, [{"a"}, {}]>]>', None),
    ('#sdy.sharding_per_value<[<@foo, [{}, {}], replicated={"a", "b"}>]>', None),
    ('#sdy.sharding_per_value<[<@foo, [{}, {}], unreduced={"a", "b"}>]>', None),
    ('#sdy.sharding_per_value<[<@foo, [{}, {}], unreduced=max{"a"}>]>', None),
    ('#sdy.sharding_per_value<[<@foo, [{}, {}], replicated={"a"}, unreduced={"b"}>]>', None),
    (
        '#sdy.sharding_per_value<[<@foo, [{}, {}], unreduced={"b"}, replicated={"a"}>]>',
        '#sdy.sharding_per_value<[<@foo, [{}, {}], replicated={"a"}, unreduced={"b"}>]>',
    ),
    ('#sdy.sharding_per_value<[<mesh<["x"=2, "y"=2]>, [{"x"}, {}]>]>', None),
    (
        '#sdy.sharding_per_value<[<mesh<["a"=2, "b"=4]>, [{"a"}, {}]>, <@foo, [{"a"}, {}]>]>',
        None,
    ),
    ('#sdy.sharding_per_value<[<mesh<["x"=2], device_ids=[1, 0]>, [{"x"}, {}]>]>', None),
    ('#sdy.sharding_per_value<[<@foo, [{"a", ?}, {?}]>]>', None),
    ('#sdy.sharding_per_value<[<@foo, [{"a", "b", ?}, {}]>]>', None),
    ('#sdy.sharding_per_value<[<@foo, [{"a"}, {"b":(2)2}]>]>', None),
    ('#sdy.sharding_per_value<[<@foo, [{"a"}, {}], replicated={"b":(2)2}>]>', None),
    ('#sdy.sharding_per_value<[<@bar, [{"a":(1)2, "b", "a":(2)2}, {}]>]>', None),
    ('#sdy.sharding_per_value<[<@bar, [{"a":(2)2, "a":(1)2}, {}]>]>', None),
    ('#sdy.sharding_per_value<[<@foo, [{"a"}, {"b"}p1]>]>', None),
    ("#sdy.sharding_per_value<[]>", None),
    ("#sdy.sharding_per_value<[<@maximal_mesh, []>]>", None),
    ("#sdy.sharding_per_value<[<@mesh, [{}, {}]>]>", None),
]
SINGLE = [
    '#sdy.sharding<@foo, [{"a"}p0, {"b"}]>',
    '#sdy.sharding<@foo, [{}, {"a"}]>',
    '#sdy.sharding<@mesh, [{}, {"_axis_0"}]>',
    '#sdy.sharding<@mesh, [{"batch"}, {}, {}, {}]>',
    '#sdy.sharding<@mesh, [{}, {"_axis_1"}]>',
]
STRIPPED = [  # op custom syntax (§1.5)
    "<@mesh, [{}, {}]>",
    '<@mesh, [{"x"}, {}], unreduced={"y", "z"}>',
    '<@meshA, [{"a", ?}, {?}]>',
    '<@mesh3, [{"y"}, {"x":(1)2}]>',
    '<@mesh, [{"a"}, {}, {}], unreduced={"b", "c", "d", "e"}>',
    '<@mesh, [{"b"}, {}, {}], replicated={"d"}, unreduced={"a", "c", "e", "f"}>',
]


@pytest.mark.parametrize("text,printed", SHARDINGS)
def test_sharding_per_value_round_trip(text, printed):
    values = parse_sharding_per_value(text)
    assert print_sharding_per_value(values) == (printed or text)


@pytest.mark.parametrize("text", SINGLE)
def test_single_sharding_round_trip(text):
    s = parse_sdy_sharding(text)
    assert s.mesh is None and s.mesh_ref
    assert print_sdy_sharding(s) == text


@pytest.mark.parametrize("text", STRIPPED)
def test_stripped_round_trip(text):
    assert print_sdy_sharding(parse_sdy_sharding(text), stripped=True) == text


def test_mesh_resolution_and_fields():
    mesh = parse_mesh_attr('<["a"=2, "b"=4]>')
    s = parse_sdy_sharding('#sdy.sharding<@m, [{"a", ?}, {"b":(2)2}p3]>', {"m": mesh})
    assert s.mesh == mesh and s.mesh_ref == "m"
    assert s.dims[0] == DimSharding((AxisRef("a"),), is_open=True)
    assert s.dims[1] == DimSharding((AxisRef("b", 2, 2),), priority=3)
    unresolved = parse_sdy_sharding("#sdy.sharding<@other, [{}]>", {"m": mesh})
    assert unresolved.mesh is None and unresolved.mesh_ref == "other"
    # MLIR escapes in axis names, and whitespace between tokens, are understood
    s = parse_sdy_sharding('<mesh<["a\\22b"=2]>, [ { "a\\22b" , ? } ] >')
    assert s.dims[0].axes[0].name == 'a"b'
    assert print_sdy_sharding(s, stripped=True) == '<mesh<["a\\22b"=2]>, [{"a\\22b", ?}]>'


def test_find_end_cuts_an_attribute_out_of_a_line():
    line = (
        "func.func @main(%arg0: tensor<32x32xf32> {sdy.sharding = #sdy.sharding<@mesh, "
        '[{}, {"_axis_0"}]>, ttcore.argument_type = #ttcore.argument_type<input>}) -> ('
    )
    start = line.index("#sdy.sharding")
    end = find_sdy_sharding_end(line, start)
    assert line[start:end] == '#sdy.sharding<@mesh, [{}, {"_axis_0"}]>'
    tricky = '#sdy.sharding<mesh<["<>"=2]>, [{"<>"}]> rest'
    assert tricky[: find_sdy_sharding_end(tricky, 0)] == tricky[:-5]
    with pytest.raises(ParseError):
        find_sdy_sharding_end('#sdy.sharding<@mesh, [{"a"}]', 0)


# §6 negatives that must not parse: (text, column where the error points)
MESH_PARSE_NEGATIVES = [
    ('<["a"=2, "b"=0]>', 14),
    ('<["a"=2, "b"=2, "a"=4]>', 17),
    ("<[], device_ids=[1, 0]>", 6),
    ('<["a"=2, "b"=2], device_ids=[0, 2, 1, 3, 4, 5]>', 18),
    ('<["a"=2], device_ids=[0]>', 11),
]
SHARDING_PARSE_NEGATIVES = [
    ('#sdy.sharding_per_value<[<@foo, [{"a"}, {"b"}phigh]>]>', "p<number>', got: phigh"),
    ('#sdy.sharding<@foo, [{"a"}p01, {"b"}]>', "leading zeros, got: p01"),
    ('#sdy.sharding<@foo, [{"a"}p9999999999999999999]>', "integer priority"),
    ('#sdy.sharding_per_value<[<@foo, [{}, {}], replicated{"a", "b"}>]>', "'='"),
    ('#sdy.sharding_per_value<[<@foo, [{}, {}], unreduced=["a", "b"]>]>', "'{'"),
    ('#sdy.sharding_per_value<[<@foo, [{}, {}], replicated={"a", b}>]>', "string"),
    ("#sdy.sharding_per_value<[<@foo, [{}, {}],>]>", "valid named axis list after comma"),
    (
        '#sdy.sharding_per_value<[<@foo, [{}, {}], replicated={"a"}, replicated={"b"}>]>',
        "valid named axis list after comma",
    ),
    ('#sdy.sharding<@foo, [{?, "a"}]>', "'}' after '?'"),
    ('#sdy.sharding<@foo, [{"a", ?, "b"}]>', "'}' after '?'"),
    ("#sdy.sharding<foo, [{}]>", "MeshAttr or FlatSymbolRefAttr"),
    ("#sdy.sharding<@foo, [{a}]>", "string"),
]


@pytest.mark.parametrize("text,column", MESH_PARSE_NEGATIVES)
def test_mesh_parse_negatives(text, column):
    with pytest.raises(ParseError) as e:
        parse_mesh_attr(text)
    assert e.value.column == column, str(e.value)


@pytest.mark.parametrize("text,message", SHARDING_PARSE_NEGATIVES)
def test_sharding_parse_negatives(text, message):
    parse = parse_sharding_per_value if "per_value" in text else parse_sdy_sharding
    with pytest.raises(ParseError) as e:
        parse(text)
    assert message in str(e.value)
    assert 1 <= e.value.column <= len(text) + 1
    assert f"column {e.value.column}" in str(e.value)


# meshes that parse but Shardy's verifier rejects (§3.1 messages)
@pytest.mark.parametrize(
    "text,message",
    [
        ("<[], device_ids=[-1]>", "device id must be non-negative, got: -1"),
        (
            '<["a"=2], device_ids=[1, 1]>',
            "sorted device ids must be iota(product(axes)), got: 1, 1",
        ),
        (
            '<["a"=2], device_ids=[2, 1]>',
            "sorted device ids must be iota(product(axes)), got: 1, 2",
        ),
    ],
)
def test_mesh_verifier_negatives(text, message):
    assert verify_mesh(text) == [message]
    assert verify_mesh("sdy.mesh @m = " + text) == [message]
    assert message in verify_mesh(parse_mesh_attr(text))[0]


def test_verify_mesh_reports_parse_errors():
    (msg,) = verify_mesh('<["a"=2, "b"=0]>')
    assert "axis size must be at least 1, got: 0" in msg


A8B2 = Mesh((("a", 8), ("b", 2)))


@pytest.mark.parametrize(
    "dims,message",
    [
        ('[{}, {"a":(-1)2}]', 'sub-axis pre-size must be at least 1: "a":(-1)2'),
        ('[{}, {"a":(2)1}]', 'sub-axis sizes must be greater than 1: "a":(2)1'),
        (
            '[{}, {"a":(3)2}]',
            'sub-axis next pre-size 6 doesn\'t divide the size of the full axis 8: "a":(3)2',
        ),
        (
            '[{}, {"a":(4)4}]',
            'sub-axis next pre-size 16 doesn\'t divide the size of the full axis 8: "a":(4)4',
        ),
        ('[{}, {"a":(1)8}]', 'sub-axis size is equal to the full axis size: "a":(1)8'),
        ('[{"a"}, {}p3]', "dim 1 is empty and closed but has a priority"),
        ('[{"c"}, {}]', 'unknown axis name: "c"'),
        ('[{"a"}, {"a"}]', 'duplicate axis ref: "a"'),
        ('[{"a"}, {}], replicated={"a"}', 'duplicate axis ref: "a"'),
        ('[{"a":(1)2}, {"a"}]', 'both sub-axis and full-axis are used for axis name: "a"'),
        ('[{"a":(1)4}, {"a":(2)2}]', 'overlapping sub-axes: "a":(1)4, "a":(2)2'),
        ('[{}, {}], replicated={"b", "a"}', "replicated axes are not ordered w.r.t. mesh"),
        ('[{}, {}], unreduced={"b", "a"}', "unreduced axes are not ordered w.r.t. mesh"),
    ],
)
def test_verifier_messages(dims, message):
    s = parse_sdy_sharding(f"<@m, {dims}>", {"m": A8B2})
    assert message in verify_named(s, A8B2)


def test_verifier_more_facts():
    a16 = Mesh((("a", 16),))
    s = parse_sdy_sharding('<@m, [{}, {"a":(2)2, "a":(4)4}]>', {"m": a16})
    assert verify_named(s, a16) == ['two consecutive sub-axes can be merged: "a":(2)2, "a":(4)4']
    mesh = Mesh((("a", 8), ("b", 4)))
    s = parse_sdy_sharding('<@m, [{"a":(2)4}, {"b":(2)2}], replicated={"a":(1)4}>', {"m": mesh})
    assert 'overlapping sub-axes: "a":(1)4, "a":(2)4' in verify_named(s, mesh)
    cab = Mesh((("c", 2), ("a", 2), ("b", 2)))
    s = parse_sdy_sharding('<@m, [{}, {}], replicated={"a", "b", "c"}>', {"m": cab})
    assert verify_named(s, cab) == ["replicated axes are not ordered w.r.t. mesh"]
    s = parse_sdy_sharding('<@m, [{"a"}, {}]>', {"m": A8B2})
    assert verify_named(s, A8B2, rank=1) == ["sharding doesn't match tensor rank: 2 != 1"]
    assert verify_named(s, A8B2, rank=2) == []
    maximal = Mesh((), (3,))
    assert "maximal sharding" in verify_named(NamedSharding(maximal, (DimSharding(),)), maximal)[0]
    assert verify_named(NamedSharding(maximal, ()), maximal) == []


# -- generated round trips and mutation fuzz ---------------------------------------------

_names = st.text(
    alphabet=st.characters(min_codepoint=32, max_codepoint=0x2FF, blacklist_categories=("Cs",)),
    min_size=1,
    max_size=6,
)


@st.composite
def named_shardings(draw):
    names = draw(st.lists(_names, min_size=0, max_size=4, unique=True))
    sizes = [draw(st.sampled_from([1, 2, 4, 8])) for _ in names]
    mesh = Mesh(tuple(zip(names, sizes, strict=True)))

    def ref():
        name = draw(st.sampled_from(names))
        if draw(st.booleans()):
            return AxisRef(name)
        return AxisRef(name, draw(st.integers(1, 8)), draw(st.integers(1, 8)))

    dims = []
    for _ in range(draw(st.integers(0, 4))):
        axes = tuple(ref() for _ in range(draw(st.integers(0, 3)))) if names else ()
        dims.append(DimSharding(axes, draw(st.booleans()), draw(st.none() | st.integers(0, 10**6))))
    repl = tuple(ref() for _ in range(draw(st.integers(0, 2)))) if names else ()
    unred = tuple(ref() for _ in range(draw(st.integers(0, 2)))) if names else ()
    op = draw(st.sampled_from([None, "max", "min"])) if unred else None
    inline = draw(st.booleans())
    return NamedSharding(
        mesh if inline else None,
        tuple(dims),
        None if inline else draw(st.sampled_from(["mesh", "m_1", "foo.bar"])),
        repl,
        unred,
        op,
    )


@settings(max_examples=200, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(named_shardings(), st.booleans())
def test_generated_round_trip(s, stripped):
    text = print_sdy_sharding(s, stripped=stripped)
    assert parse_sdy_sharding(text) == s
    assert find_sdy_sharding_end(text + " loc(#loc)", 0) == len(text)


_SEED = (
    '#sdy.sharding<mesh<["a"=2, "b"=4], device_ids=[7, 6, 5, 4, 3, 2, 1, 0]>, '
    '[{"a", ?}, {"b":(2)2}p1, {?}], replicated={"b":(1)2}, unreduced=max{"c"}>'
)


@settings(max_examples=300, derandomize=True)
@given(st.integers(0, len(_SEED) - 1), st.integers(0, 6), st.text(max_size=3))
def test_mutated_text_raises_only_meshdiag_errors(pos, cut, insert):
    text = _SEED[:pos] + insert + _SEED[pos + cut :]
    for parse in (parse_sdy_sharding, parse_mesh_attr, parse_sharding_per_value):
        try:
            parse(text)
        except MeshdiagError:
            pass
    try:
        s = parse_sdy_sharding(text)
    except MeshdiagError:
        return
    verify_named(s, s.mesh) if s.mesh else None


def test_printing_matches_shardy_spacing():
    s = parse_sdy_sharding('<@m,[{"a",?},{?},{}p2],unreduced=min{"x"},replicated={"y"}>')
    assert (
        print_sdy_sharding(s)
        == '#sdy.sharding<@m, [{"a", ?}, {?}, {}p2], replicated={"y"}, unreduced=min{"x"}>'
    )
    assert re.fullmatch(r"<\[\]>", print_mesh_attr(Mesh(())))
