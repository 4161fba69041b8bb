"""Property tests for every notation: generated values round-trip, hostile text fails cleanly.

What the owners' tests already cover is not repeated here: GSPMD strings against XLA and
mutations of XLA's corpus (test_gspmd.py), generated Shardy shardings and one mutated seed
(test_shardy.py). This file adds, per notation (GSPMD, Shardy sharding / mesh / per-value, V3,
PartitionSpec, mesh text):

* generated *values* (not strings) round-trip: parse(print(x)) == x, and the printed text is
  canonical: print(parse(print(x))) == print(x);
* garbage and mutations of valid printed text (truncation, byte flips, stray brackets and
  quotes, deep nesting, huge integers, unicode) raise nothing but MeshdiagError, and a
  ParseError points inside its text with a one-line message.
"""

from __future__ import annotations

import math

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from meshdiag.errors import MeshdiagError, ParseError
from meshdiag.inputs.mesh_input import parse_mesh
from meshdiag.model.mesh import Mesh
from meshdiag.model.sharding import AxisRef, DimSharding, HloSharding, NamedSharding
from meshdiag.model.tiles import TileAssignment
from meshdiag.notation.detect import parse_sharding
from meshdiag.notation.gspmd import parse_gspmd, print_gspmd
from meshdiag.notation.gspmd_v3 import print_v3
from meshdiag.notation.pspec import named_to_pspec, parse_pspec, pspec_to_named
from meshdiag.notation.shardy import (
    parse_mesh_attr,
    parse_sdy_sharding,
    parse_sharding_per_value,
    print_mesh_attr,
    print_sdy_sharding,
    print_sharding_per_value,
)

FAST = settings(
    max_examples=80,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

# -- value generators ----------------------------------------------------------------------


@st.composite
def factorisation(draw, n: int, max_parts: int = 4) -> list[int]:
    """Sizes (each >= 2) multiplying to n, in a drawn order."""
    parts: list[int] = []
    rest = n
    while rest > 1 and len(parts) < max_parts - 1:
        divs = [d for d in range(2, rest + 1) if rest % d == 0]
        d = draw(st.sampled_from(divs))
        parts.append(d)
        rest //= d
    if rest > 1:
        parts.append(rest)
    return parts


@st.composite
def tile_assignments(draw, min_devices: int = 2) -> TileAssignment:
    n = draw(st.sampled_from([k for k in (2, 3, 4, 6, 8, 12, 16, 24, 32) if k >= min_devices]))
    dims = draw(factorisation(n))
    for _ in range(draw(st.integers(0, 2))):  # size-1 tile dims are legal and kept
        dims.insert(draw(st.integers(0, len(dims))), 1)
    if draw(st.booleans()):
        reshape = draw(factorisation(n))
        perm = draw(st.permutations(range(len(reshape))))
        return TileAssignment.iota(dims, reshape, perm)
    return TileAssignment.from_devices(dims, draw(st.permutations(range(n))))


@st.composite
def gspmd_leaves(draw) -> HloSharding:
    kind = draw(st.sampled_from(["tiled"] * 5 + ["replicated", "maximal", "manual", "unknown"]))
    if kind == "maximal":
        s = HloSharding.maximal(draw(st.integers(0, 1 << 20)))
    elif kind == "tiled":
        tile = draw(tile_assignments())
        mode = draw(st.sampled_from(["plain", "replicate", "manual"]))
        if tile.rank < 2 or tile.dims[-1] < 2 or math.prod(tile.dims[:-1]) < 2:
            mode = "plain"  # XLA normalises a size-1 subgroup or an all-1 data part away
        if mode == "replicate":
            s = HloSharding.tiled(tile, replicate_on_last=True)
        elif mode == "manual":
            s = HloSharding.tiled(tile, subgroup_types=("manual",))
        else:
            s = HloSharding.tiled(tile)
    else:
        s = HloSharding(kind)
    if draw(st.integers(0, 4)) == 0:
        from dataclasses import replace

        group = (draw(st.sampled_from(["shard_as", "shard_like"])), draw(st.integers(0, 99)))
        s = replace(s, shard_group=group)
    return s


gspmd_values = st.one_of(
    gspmd_leaves(),
    st.lists(gspmd_leaves(), min_size=0, max_size=7).map(HloSharding.tuple_of),
)

#: printable names of any script (MLIR escapes the rest); hypothesis shrinks towards 'a'
_any_name = st.text(
    st.characters(blacklist_categories=("Cs",), max_codepoint=0x1FAFF), min_size=1, max_size=6
)
_printable_name = _any_name.filter(str.isprintable)
_ident = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,5}", fullmatch=True)


@st.composite
def meshes(draw, names=_any_name, max_axes: int = 4, ids: bool = True) -> Mesh:
    axis_names = draw(st.lists(names, min_size=1, max_size=max_axes, unique=True))
    sizes = [draw(st.sampled_from([1, 2, 3, 4, 8])) for _ in axis_names]
    n = math.prod(sizes)
    device_ids = tuple(draw(st.permutations(range(n)))) if ids and draw(st.booleans()) else None
    return Mesh(tuple(zip(axis_names, sizes, strict=True)), device_ids)


def _sub_axes(size: int) -> list[tuple[int, int]]:
    """Valid sub-axes (pre, k) of an axis of `size`: pre·k divides it and it is not the whole."""
    return [
        (pre, k)
        for pre in range(1, size + 1)
        for k in range(2, size + 1)
        if size % (pre * k) == 0 and not (pre == 1 and k == size)
    ]


@st.composite
def valid_named(draw, names=_any_name, open_dims: bool = True, priorities: bool = True):
    """A named sharding XLA/Shardy accept on its mesh: each axis used once, ordered lists."""
    mesh = draw(meshes(names))
    pool = list(mesh.axes)
    draw(st.randoms()).shuffle(pool)
    rank = draw(st.integers(1, 4))
    dims: list[list[AxisRef]] = [[] for _ in range(rank)]
    replicated: list[AxisRef] = []
    for name, size in pool:
        where = draw(st.integers(-2, rank - 1))  # -2: unused, -1: replicated
        subs = _sub_axes(size)
        ref = AxisRef(name)
        if subs and where >= 0 and draw(st.booleans()):
            pre, k = draw(st.sampled_from(subs))
            ref = AxisRef(name, pre, k)
        if where >= 0:
            dims[where].append(ref)
        elif where == -1 and size > 1:
            replicated.append(ref)
    order = {n: i for i, n in enumerate(mesh.names)}
    replicated.sort(key=lambda a: order[a.name])
    out = []
    for axes in dims:
        is_open = open_dims and draw(st.booleans())
        prio = draw(st.none() | st.integers(0, 10)) if priorities else None
        out.append(DimSharding(tuple(axes), is_open, prio))
    return NamedSharding(mesh, tuple(out), replicated=tuple(replicated))


# -- round trips -----------------------------------------------------------------------------


@FAST
@given(gspmd_values)
def test_gspmd_values_round_trip(s: HloSharding) -> None:
    # XLA sorts the devices inside each replication / manual group (PartialTile), so a value
    # with subgroups equals its parse only once in that canonical form; plain ones exactly
    exact = all(leaf.num_subgroup_dims == 0 for leaf in s.leaves())
    for form in ("v2", "v1"):
        text = print_gspmd(s, form=form)
        back = parse_gspmd(text)
        if exact:
            assert back == s, text
        canonical = print_gspmd(back, form=form)
        assert parse_gspmd(canonical) == back
        assert print_gspmd(parse_gspmd(canonical), form=form) == canonical
    # V1 and V2 print the same sharding
    assert parse_gspmd(print_gspmd(s, form="v1")) == parse_gspmd(print_gspmd(s))


@FAST
@given(meshes())
def test_shardy_mesh_attr_round_trip(mesh: Mesh) -> None:
    text = print_mesh_attr(mesh)
    back = parse_mesh_attr(text)
    assert back == mesh and back.device_ids == mesh.device_ids
    assert print_mesh_attr(back) == text
    assert parse_mesh_attr("#sdy.mesh" + text) == mesh
    # the --mesh reader takes the same text
    assert parse_mesh(text) == mesh


@FAST
@given(st.lists(valid_named(), min_size=0, max_size=4))
def test_shardy_per_value_round_trip(shardings: list[NamedSharding]) -> None:
    text = print_sharding_per_value(shardings)
    back = parse_sharding_per_value(text)
    assert back == shardings
    assert print_sharding_per_value(back) == text


@FAST
@given(valid_named())
def test_shardy_inline_mesh_round_trip_is_canonical(s: NamedSharding) -> None:
    text = print_sdy_sharding(s)
    back = parse_sdy_sharding(text)
    assert back == s
    assert print_sdy_sharding(back) == text
    assert parse_sharding(text) == s  # detection picks Shardy


@FAST
@given(valid_named(), st.booleans(), st.booleans())
def test_sharding_pasted_from_a_dump_string(s: NamedSharding, mlir: bool, quoted: bool) -> None:
    """The text as a dump's string attribute holds it (MLIR `\\22`/`\\5C`, HLO `\\"`/`\\\\`),
    with or without the quotes around it, reads as the sharding itself."""
    text = print_sdy_sharding(s)
    if mlir:
        inner = text.replace("\\", "\\5C").replace('"', "\\22")
    else:
        inner = text.replace("\\", "\\\\").replace('"', '\\"')
    pasted = f'"{inner}"' if quoted else inner
    assert parse_sharding(pasted) == s


# V3 quotes names verbatim between single quotes (as XLA prints them), so names are plain
_v3_names = st.text(
    st.characters(whitelist_categories=("L", "N"), max_codepoint=0x2FFF) | st.sampled_from("_-."),
    min_size=1,
    max_size=6,
)


@FAST
@given(valid_named(_v3_names, priorities=False))
def test_v3_round_trip(s: NamedSharding) -> None:
    text = print_v3(s)
    parsed = parse_gspmd(text)
    assert parsed.named == s, text
    assert print_v3(parsed.named) == text
    # the tiled form it reads as is a real GSPMD sharding that round-trips itself
    assert parse_gspmd(print_gspmd(parsed)) == parsed


@FAST
@given(meshes(_printable_name, ids=False), st.data())
def test_pspec_round_trip(mesh: Mesh, data: st.DataObject) -> None:
    names = list(mesh.names)
    data.draw(st.randoms()).shuffle(names)
    rank = data.draw(st.integers(0, 4))
    spec: list[tuple[str, ...] | None] = [None] * rank
    for name in names:
        where = data.draw(st.integers(-1, rank - 1)) if rank else -1
        if where >= 0:
            spec[where] = (spec[where] or ()) + (name,)
    spec_t = tuple(spec)
    named = pspec_to_named(spec_t, mesh)
    text = named_to_pspec(named)
    assert text is not None
    assert parse_pspec(text) == spec_t, text
    assert named_to_pspec(pspec_to_named(parse_pspec(text), mesh)) == text
    assert parse_sharding(text, mesh) == named


@FAST
@given(meshes(_ident, ids=False))
def test_mesh_text_round_trip(mesh: Mesh) -> None:
    assume(mesh.short().lower() not in ("n150",))  # a one-axis mesh never prints as a preset
    text = mesh.short()  # batch=2,model=4
    back = parse_mesh(text)
    assert back == mesh
    assert back.short() == text
    shape = "x".join(map(str, mesh.shape))
    assert parse_mesh(shape).shape == mesh.shape


@FAST
@given(meshes())
def test_mesh_json_round_trip(mesh: Mesh) -> None:
    import json

    doc = {"axes": [[a, s] for a, s in mesh.axes]}
    if mesh.device_ids is not None:
        doc["device_ids"] = list(mesh.device_ids)
    back = parse_mesh(json.dumps(doc, ensure_ascii=False))
    assert back == mesh and back.device_ids == mesh.device_ids


# -- hostile text ------------------------------------------------------------------------------

HUGE = ["99999999999999999999999999", str(1 << 63), str((1 << 63) - 1), "-1", "0", "1e9"]
STRAY = list("{}[]()<>'\",=?:@#%\\") + ["\x00", "\n", "\ufffd", "\u202e", "e\u0301", "😀", "𝟘"]
DEEP = ["{" * 300, "[" * 300, "(" * 300, "<" * 300, "{[(<" * 100, '"' * 51, "'" * 51]


@st.composite
def mutate(draw, base: str) -> str:
    text = base
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["truncate", "flip", "insert", "deep", "huge", "dup", "unicode"]))
        if op == "truncate":
            text = text[:i]
        elif op == "flip" and i < len(text):
            text = text[:i] + chr(ord(text[i]) ^ (1 << draw(st.integers(0, 7)))) + text[i + 1 :]
        elif op == "insert":
            text = text[:i] + draw(st.sampled_from(STRAY)) + text[i:]
        elif op == "deep":
            text = text[:i] + draw(st.sampled_from(DEEP)) + text[i:]
        elif op == "huge":
            # replace the number that starts at or after i with a huge (or odd) one
            j = next((k for k in range(i, len(text)) if text[k].isdigit()), None)
            if j is not None:
                k = j
                while k < len(text) and text[k].isdigit():
                    k += 1
                text = text[:j] + draw(st.sampled_from(HUGE)) + text[k:]
        elif op == "dup":
            text = text[:i] + text[i:] + text[i:]
        else:
            text = text[:i] + draw(st.text(min_size=1, max_size=3)) + text[i:]
    return text


def assert_clean(fn, text: str):
    """`fn(text)`, or None after a clean MeshdiagError; anything else fails the test."""
    try:
        return fn(text)
    except ParseError as err:
        assert 1 <= err.column <= len(err.text) + 1, str(err)
        assert "\n" not in str(err), repr(str(err))
    except MeshdiagError as err:
        assert str(err) and "\n" not in str(err), repr(str(err))
    return None


def _one_axis_per_dim(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, tuple(DimSharding((AxisRef(a),)) for a in mesh.names))


def _printed_valid(draw) -> dict[str, str]:
    named = draw(valid_named())
    v3 = draw(valid_named(_v3_names, priorities=False))
    mesh = draw(meshes(_ident))
    return {
        "gspmd": print_gspmd(draw(gspmd_values), form=draw(st.sampled_from(["v1", "v2"]))),
        "v3": print_v3(v3),
        "sdy": print_sdy_sharding(named),
        "mesh_attr": print_mesh_attr(named.mesh),
        "per_value": print_sharding_per_value([named]),
        "pspec": named_to_pspec(_one_axis_per_dim(mesh)) or "P()",
        "mesh": mesh.short().split(" device_ids")[0],
    }


PARSERS = {
    "gspmd": parse_gspmd,
    "v3": parse_gspmd,
    "sdy": parse_sdy_sharding,
    "mesh_attr": parse_mesh_attr,
    "per_value": parse_sharding_per_value,
    "pspec": parse_pspec,
    "mesh": parse_mesh,
}


def _parse_mesh_safely(text: str):
    # a mesh that looks like a path is read as a file; hostile text must not name real files
    return parse_mesh(text.replace("/", "|").replace("\\", "|") + ("!" if "." in text else ""))


@settings(
    max_examples=120,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_mutations_of_every_notation_fail_cleanly(data: st.DataObject) -> None:
    valid = _printed_valid(data.draw)
    for kind, text in valid.items():
        bad = data.draw(mutate(text), label=kind)
        parse = _parse_mesh_safely if kind == "mesh" else PARSERS[kind]
        assert_clean(parse, bad)
        assert_clean(parse_sharding, bad)
        assert_clean(lambda t: parse_sharding(t, Mesh((("a", 2), ("b", 4)))), bad)


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.text(max_size=80) | st.binary(max_size=80).map(lambda b: b.decode("utf-8", "replace")))
def test_garbage_fails_cleanly_everywhere(text: str) -> None:
    for parse in (*set(PARSERS.values()) - {parse_mesh}, _parse_mesh_safely, parse_sharding):
        assert_clean(parse, text)


def test_every_parser_survives_the_classic_hostile_inputs() -> None:
    cases = [
        "",
        " ",
        "\x00" * 10,
        "\ufeff{replicated}",  # BOM
        "{" * 100_000,
        "[" * 100_000,
        "(" * 100_000,
        "<" * 100_000,
        "P(" * 10_000,
        "{devices=[" + "9" * 5000 + "]0}",
        "{devices=[2]<=[2]T(" + "0," * 5000 + "0)}",
        '<["x"=' + "9" * 400 + "]>",
        '#sdy.sharding<@m, [{"a":(' + "9" * 50 + ")2}]>",
        "x=" + "9" * 10_000,
        "9" * 10_000 + "x2",
        "{mesh['a'=2], [" + "{}," * 10_000 + "{}]}",
        '"' + "\\" * 10_001,
        "'\\x41'",
        '{replicated metadata={op_name="\\',
        "\ud800".encode("utf-8", "surrogatepass").decode("utf-8", "replace"),
    ]
    for text in cases:
        for parse in (*set(PARSERS.values()) - {parse_mesh}, _parse_mesh_safely, parse_sharding):
            assert_clean(parse, text)
