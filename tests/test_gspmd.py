"""GSPMD HloSharding text: parse + canonical print, checked against the real XLA parser.

The oracle is `xla_client.HloSharding.from_string(s)` from jaxlib: `str()` of it is XLA's
`HloSharding::ToString()` (without metadata), and `tile_assignment_devices()` /
`tile_assignment_dimensions()` give the device array. Only strings XLA accepts are sent to
it: XLA aborts the process (CHECK failure) on some invalid ones.
"""

from __future__ import annotations

import random
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jax._src.lib import xla_client as xc

from meshdiag.errors import LimitError, MeshdiagError, ParseError
from meshdiag.model.sharding import HloSharding
from meshdiag.model.tiles import TileAssignment
from meshdiag.notation import gspmd
from meshdiag.notation.gspmd import canonical_gspmd, parse_gspmd, print_gspmd, validate_hlo

# -- oracle helpers -----------------------------------------------------------------------


def xla(text: str):
    return xc.HloSharding.from_string(text)


def xla_leaves(h) -> list:
    elements = h.tuple_elements()
    return list(elements) if elements else [h]


def assert_matches_xla(text: str) -> None:
    """Our canonical print equals XLA's, and every tiled leaf has XLA's device array."""
    want = xla(text)
    ours = parse_gspmd(text)
    assert print_gspmd(ours) == str(want), text
    leaves = ours.elements if ours.is_tuple else (ours,)
    if not ours.is_tuple or leaves:
        xla_l = xla_leaves(want)
        assert len(leaves) == len(xla_l), text
        for mine, theirs in zip(leaves, xla_l, strict=True):
            if mine.kind == "tiled":
                assert theirs.is_tiled()
                assert list(mine.tile.dims) == theirs.tile_assignment_dimensions(), text
                assert list(mine.tile.devices()) == theirs.tile_assignment_devices(), text
                assert mine.replicate_on_last == theirs.replicate_on_last_tile_dim()
                assert len(mine.subgroup_types) == len(theirs.subgroup_types())
            else:
                assert not theirs.is_tiled() or mine.kind == "maximal", text


# -- §1.9 corpus ----------------------------------------------------------------------------

CORPUS = [
    "{replicated}",
    '{replicated metadata={op_name="a"}}',
    '{replicated metadata={{op_name="b"}, {op_name="c"}}}',
    "{maximal device=7}",
    '{maximal device=7 metadata={op_name="a"}}',
    "{maximal device=42}",
    "{manual}",
    "{unknown}",
    "{unreduced}",
    "{devices=[2,1,2]2,3,5,7}",
    "{devices=[1,1,2,2]0,1,2,3}",
    "{devices=[3,4]<=[2,2,3]T(2,1,0)}",
    "{devices=[6,35]<=[7,10,3]T(2,1,0)}",
    "{{replicated}, {devices=[1,2]3,5}, {maximal device=3}}",
    '{{replicated metadata={op_name="d"}}, {devices=[1,2]3,5}, '
    '{maximal device=3 metadata={op_name="e"}}}',
    "{devices=[2,2]0,1,2,3 last_tile_dim_replicate}",
    "{devices=[2,2,2,2]0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15 last_tile_dims={manual, replicated}}",
    "{devices=[2,2]<=[4] last_tile_dim_replicate}",
    "{devices=[2,2]<=[2,2]T(1,0) last_tile_dim_replicate}",
    "{devices=[2,2,2,2]<=[16] last_tile_dims={manual, replicated}}",
    "{devices=[2,2,2,2]<=[2,2,4]T(2,1,0) last_tile_dims={manual, replicated}}",
    "{manual shard_as 1}",
    "{devices=[2,2,2,2]<=[16] last_tile_dims={manual, replicated} shard_like 1}",
    "{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dims={manual}}",
    "{devices=[1,1,4,2]<=[2,4]T(1,0) last_tile_dims={manual, replicated}}",
    "{devices=[4,2]<=[8]}",
    "{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}",
    "{devices=[1,4,8]<=[8,4]T(1,0) last_tile_dim_replicate}",
    "{devices=[8,1,4]<=[32] last_tile_dim_replicate}",
    "{devices=[32,1]<=[8,4]T(1,0)}",
    "{devices=[2,3]<=[2,3]T(1,0)}",
    "{{replicated}, {replicated}, {replicated}, {replicated}, {replicated}, "
    "/*index=5*/{replicated}}",
    "{}",
    "{devices=[1,4,2]<=[8] last_tile_dim_replicate}",
    "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}",
    # §2 dump examples
    "{devices=[2,1]<=[2]}",
    "{devices=[1,4]<=[4]}",
    "{{manual}, {manual}}",
    "{{replicated}}",
    "{devices=[2,2,4]<=[2,2,4]T(1,0,2) last_tile_dim_replicate}",
    "{devices=[4,8]<=[8,4]T(1,0)}",
    "{devices=[4,2,4]<=[2,2,2,4]T(3,1,0,2) last_tile_dim_replicate}",
    "{devices=[1,1,4,4]<=[16] last_tile_dims={manual, replicated}}",
    "{devices=[1,2,2]0,1,2,3 last_tile_dim_replicate}",
]


@pytest.mark.parametrize("text", CORPUS)
def test_corpus_matches_xla(text: str) -> None:
    assert_matches_xla(text)


# Normalisations, each decided by the real XLA (the expected text is what XLA printed).
NORMALISED = [
    (
        "{devices=[2,2]1,0,3,2 last_tile_dim_replicate}",
        "{devices=[2,2]0,1,2,3 last_tile_dim_replicate}",
    ),
    ("{devices=[1,4]<=[4] last_tile_dim_replicate}", "{replicated}"),
    ("{devices=[4,1]<=[4] last_tile_dim_replicate}", "{devices=[4]<=[4]}"),
    ("{devices=[1,1,4]<=[4] last_tile_dims={manual}}", "{manual}"),
    ("{devices=[1,4]<=[2,2]T(1,0) last_tile_dims={unreduced}}", "{unreduced}"),
    (
        "{devices=[2,2]<=[4] last_tile_dims={replicated}}",
        "{devices=[2,2]<=[4] last_tile_dim_replicate}",
    ),
    (
        "{devices=[1,2,2,2]<=[8] last_tile_dims={replicated, manual}}",
        "{devices=[1,2,2,2]<=[2,2,2]T(0,2,1) last_tile_dims={manual, replicated}}",
    ),
    (
        "{devices=[2,1,2]<=[4] last_tile_dims={replicated, manual}}",
        "{devices=[2,2]<=[4] last_tile_dims={manual}}",
    ),
    (
        "{devices=[2,2,2]<=[8] last_tile_dims={replicated, replicated}}",
        "{devices=[2,4]<=[8] last_tile_dim_replicate}",
    ),
    ("{devices=[2,4]<=[2,4]T(0,1)}", "{devices=[2,4]<=[8]}"),
    ("{devices=[4,2]<=[2,2,2]T(2,0,1)}", "{devices=[4,2]<=[4,2]T(1,0)}"),
    (
        "{devices=[2,6]<=[3,4]T(1,0) last_tile_dim_replicate}",
        "{devices=[2,6]<=[3,2,2]T(1,0,2) last_tile_dim_replicate}",
    ),
    (
        "{devices=[4,3]<=[2,2,3]T(2,1,0) last_tile_dim_replicate}",
        "{devices=[4,3]0,3,6,1,7,9,2,4,10,5,8,11 last_tile_dim_replicate}",
    ),
    (
        "{devices=[2,2,2,2]<=[16] last_tile_dims={replicated, unreduced, manual}}",
        "{devices=[2,2,2,2]<=[2,2,2,2]T(0,3,2,1) last_tile_dims={manual, unreduced, replicated}}",
    ),
    ("{devices=[2,1,1]<=[2] last_tile_dims={manual, replicated}}", "{devices=[2]<=[2]}"),
    ("{ replicated /* c */ }", "{replicated}"),
    ("{devices=[2,2] 0, 1 ,2,3}", "{devices=[2,2]0,1,2,3}"),
    ("{devices=[2,2]<=[2,2] T (1,0)}", "{devices=[2,2]<=[2,2]T(1,0)}"),
    ("{maximal devices=[1]3}", "{maximal device=3}"),
    ("{unknown manual}", "{manual}"),
    ("{devices=[2]<=[2] unreduced}", "{unreduced}"),
    ("{devices=[1,1]<=[1]}", "{devices=[1,1]<=[1]}"),
    (
        "{devices=[2,2]<=[4] last_tile_dims={maximal, manual}}",
        "{devices=[2,2]<=[4] last_tile_dims={maximal, manual}}",
    ),
    (
        '{replicated shard_like 0 metadata={op_name="a{}," source_line=3}}',
        "{replicated shard_like 0}",
    ),
]


@pytest.mark.parametrize(("text", "expected"), NORMALISED)
def test_normalisation_as_xla(text: str, expected: str) -> None:
    assert str(xla(text)) == expected  # the notes' claim, confirmed by XLA itself
    assert print_gspmd(parse_gspmd(text)) == expected
    assert_matches_xla(text)


def test_bug_pair_differs() -> None:
    wrong = parse_gspmd("{devices=[1,4,2]<=[8] last_tile_dim_replicate}")
    right = parse_gspmd("{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}")
    assert wrong != right
    assert right.tile.devices() == (0, 4, 1, 5, 2, 6, 3, 7)
    assert wrong.tile.devices() == tuple(range(8))
    assert right == parse_gspmd("{devices=[1,4,2]0,4,1,5,2,6,3,7 last_tile_dim_replicate}")


# -- lenient extras -----------------------------------------------------------------------


def test_missing_transpose_is_lenient_identity() -> None:
    text = "{devices=[2,4]<=[2,4]}"
    with pytest.raises(Exception, match="T\\("):
        xla(text)  # XLA is strict here
    s = parse_gspmd(text)
    assert s.tile.devices() == tuple(range(8))
    assert print_gspmd(s) == "{devices=[2,4]<=[8]}"
    assert s == parse_gspmd("{devices=[2,4]<=[2,4]T(0,1)}")


def test_old_spellings() -> None:
    assert print_gspmd(parse_gspmd("{devices=[2,2,2]<=[8] last_tile_dims={maximul}}")) == (
        "{devices=[2,2,2]<=[8] last_tile_dims={maximal}}"
    )
    old = parse_gspmd("{s32[7,11,13] devices=[2,1,2]2,3,5,7}")
    assert print_gspmd(old) == "{devices=[2,1,2]2,3,5,7}"
    # one explicit device: XLA's parser refuses it, its FromProto makes it replicated
    assert parse_gspmd("{devices=[1]0}") == HloSharding.replicated()


def test_nested_tuples_are_flattened() -> None:
    s = parse_gspmd("{{replicated}, {{manual}, {unknown}}}")
    assert print_gspmd(s) == "{{replicated}, {manual}, {unknown}}"


def test_comments_and_index_markers() -> None:
    text = "{{manual}, // first\n {replicated}, /*index=2*/ {maximal device=1}}"
    assert print_gspmd(parse_gspmd(text)) == "{{manual}, {replicated}, {maximal device=1}}"


# -- printing -------------------------------------------------------------------------------


def test_tuple_index_comment_every_fifth() -> None:
    leaves = [HloSharding.maximal(i) for i in range(11)]
    text = print_gspmd(HloSharding.tuple_of(leaves))
    assert text.count("/*index=") == 2
    assert ", /*index=5*/{maximal device=5}" in text
    assert ", /*index=10*/{maximal device=10}" in text
    assert str(xla(text)) == text


def test_metadata_printing_keeps_raw_entries() -> None:
    single = '{replicated metadata={op_name="x{y},z\\"}" source_line=3}}'
    s = parse_gspmd(single)
    assert s.metadata == ('op_name="x{y},z\\"}" source_line=3',)
    assert print_gspmd(s) == "{replicated}"
    assert print_gspmd(s, metadata=True) == single
    multi = '{maximal device=1 shard_as 2 metadata={{op_name="a"}, {op_name="b,}"}}}'
    m = parse_gspmd(multi)
    assert m.metadata == ('op_name="a"', 'op_name="b,}"')
    out = print_gspmd(m, metadata=True)
    assert out == multi
    assert xla(out) == xla(multi)


def test_v1_form_always_lists_devices() -> None:
    s = parse_gspmd("{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}")
    assert print_gspmd(s, form="v1") == "{devices=[1,4,2]0,4,1,5,2,6,3,7 last_tile_dim_replicate}"
    with pytest.raises(MeshdiagError):
        print_gspmd(s, form="v9")


def test_canonical_is_what_xla_prints() -> None:
    text = "{devices=[2,2]<=[2,2]T(1,0) last_tile_dims={manual} shard_as 7}"
    first = canonical_gspmd(text)
    assert canonical_gspmd(text) == first
    assert parse_gspmd(text) == parse_gspmd(text)
    assert first == str(xla(text))


def test_parse_is_fast_enough() -> None:
    text = "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"
    raw = gspmd.parse_gspmd
    raw(text)
    start = time.perf_counter()
    for _ in range(200):
        raw(text)
    per_call = (time.perf_counter() - start) / 200
    assert per_call < 500e-6  # generous for a shared CI box; typically under 10 µs


# -- differential: generated strings against XLA ----------------------------------------------

TRICKY_METADATA = [
    'op_name="a"',
    'op_name="x{y},z" source_file="f.py" source_line=3',
    'op_name="q\\"}{" op_type="t"',
    'op_name="jit(f)/dot_general" source_line=12',
    'op_name="a\\\\" source_file="b,}"',
]


def _factorise(n: int, rng: random.Random, max_parts: int) -> list[int]:
    parts: list[int] = []
    rest = n
    while rest > 1 and len(parts) < max_parts - 1:
        d = rng.choice([d for d in range(2, rest + 1) if rest % d == 0])
        parts.append(d)
        rest //= d
    if rest > 1 or not parts:
        parts.append(rest)
    for _ in range(rng.randint(0, 2)):
        parts.insert(rng.randrange(len(parts) + 1), 1)
    return parts


def _gen_tile(rng: random.Random, n: int) -> tuple[list[int], str]:
    dims = _factorise(n, rng, rng.randint(1, 5))
    head = f"[{','.join(map(str, dims))}]"
    if rng.random() < 0.55:
        reshape = _factorise(n, rng, 4)
        perm = list(range(len(reshape)))
        rng.shuffle(perm)
        text = f"{head}<=[{','.join(map(str, reshape))}]"
        if len(reshape) > 1:  # XLA requires T(...) then
            text += f"T({','.join(map(str, perm))})"
        return dims, text
    devices = list(range(n))
    rng.shuffle(devices)
    return dims, head + ",".join(map(str, devices))


def _gen_leaf(rng: random.Random) -> str:
    extra = []
    if rng.random() < 0.2:
        extra.append(f"{rng.choice(['shard_as', 'shard_like'])} {rng.randint(0, 9)}")
    if rng.random() < 0.25:
        ms = [rng.choice(TRICKY_METADATA) for _ in range(rng.randint(1, 3))]
        body = ms[0] if len(ms) == 1 else ", ".join(f"{{{m}}}" for m in ms)
        extra.append("metadata={" + body + "}")
    r = rng.random()
    if r < 0.1:
        head = rng.choice(["replicated", "manual", "unknown", "unreduced", "maximal device=%d"])
        if "%d" in head:
            head = head.replace("%d", str(rng.randint(0, 63)))
        return "{" + " ".join([head, *extra]) + "}"
    n = rng.choice([2, 3, 4, 6, 8, 12, 16, 24, 32, 36, 60, 64])
    dims, tile = _gen_tile(rng, n)
    items = ["devices=" + tile]
    mode = rng.random()
    if mode < 0.3:
        items.append("last_tile_dim_replicate")
    elif mode < 0.6:
        k = rng.randint(1, min(3, len(dims)))
        kinds = ["manual", "replicated", "unreduced", "replicated", "manual", "maximal"]
        items.append("last_tile_dims={" + ", ".join(rng.choice(kinds) for _ in range(k)) + "}")
    items += extra
    if rng.random() < 0.2:
        rng.shuffle(items)  # items in any order
    return "{" + " ".join(items) + "}"


def _gen_sharding(rng: random.Random) -> str:
    if rng.random() < 0.15:
        return "{" + ", ".join(_gen_leaf(rng) for _ in range(rng.randint(0, 8))) + "}"
    return _gen_leaf(rng)


GENERATED = [_gen_sharding(random.Random(seed)) for seed in range(400)]


def test_differential_generated_against_xla() -> None:
    assert len(set(GENERATED)) >= 300
    for text in GENERATED:
        assert_matches_xla(text)


def test_differential_v1_form_reparses_in_xla_equal() -> None:
    for text in GENERATED:
        ours = parse_gspmd(text)
        v1 = print_gspmd(ours, form="v1", metadata=True)
        v2 = print_gspmd(ours, metadata=True)
        assert "<=" not in v1
        # compare re-parses of the two forms: XLA's canonical print is not always a fixed
        # point of its own parser (`{devices=[12]... last_tile_dims={unreduced}}` reparses
        # as `{unreduced}`), so `xla(text)` itself is not the reference here
        assert xla(v1) == xla(v2), (text, v1)
        assert parse_gspmd(v1) == parse_gspmd(v2)
        assert print_gspmd(parse_gspmd(v1)) == str(xla(v1))


def test_differential_metadata_round_trip_in_xla() -> None:
    for text in GENERATED:
        if "metadata" not in text:
            continue
        ours = parse_gspmd(text)
        printed = print_gspmd(ours, metadata=True)
        assert printed.count("metadata={") == text.count("metadata={")
        again = parse_gspmd(printed)  # XLA accepts it, and the entries survive
        assert [leaf.metadata for leaf in again.leaves()] == [
            leaf.metadata for leaf in ours.leaves()
        ]
        assert str(xla(printed)) == print_gspmd(again)


# -- V3 hand-off -----------------------------------------------------------------------------


def test_v3_leaves_are_handed_to_gspmd_v3(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def parse_v3_leaf(text: str, pos: int) -> tuple[HloSharding, int]:
        calls.append(pos)
        assert text[pos] == "{"
        depth = 0
        for end in range(pos, len(text)):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            if depth == 0:
                break
        return HloSharding.tiled(TileAssignment.iota((2, 4))), end + 1

    monkeypatch.setattr(gspmd, "parse_v3_leaf", parse_v3_leaf)
    leaf = "{mesh[a=2,b=4], [{a}, {b}]}"
    assert print_gspmd(gspmd.parse_gspmd(leaf)) == "{devices=[2,4]<=[8]}"
    tup = "{{replicated}, {maximal_mesh[device_id=0]}, {mesh[x=8], [{x}]}}"
    s = gspmd.parse_gspmd(tup)
    assert [e.kind for e in s.elements] == ["replicated", "tiled", "tiled"]
    assert calls == [0, tup.index("{maximal_mesh"), tup.index("{mesh[x")]


# -- errors ----------------------------------------------------------------------------------

ERRORS = [
    # (text, column where it failed)
    ("{devices=[2,2", 14),
    ("{devices=[2,2}", 14),
    ("{devices=[2,2]<=[4", 19),
    ("{devices=[2,2]<=[2,2]T(1,0", 27),
    ("{devices=[2,2]<=[2,2]T(1,1)}", 22),
    ("{devices=[2,2]<=[5]}", 18),
    ("{devices=[2,2]0,1,2}", 15),
    ("{devices=[2,2]0,1,2,3,4}", 15),
    ("{devices=[2,2]0,1,,3}", 19),
    ("{devices=[0,2]<=[2]}", 11),
    ("{replicatd}", 2),
    ("{devices =[2]0,1}", 2),
    ("{foo=3}", 2),
    ("{replicated devices=[2]0,1}", 13),
    ("{maximal}", 9),
    ("{maximal devices=[2]0,1}", 10),
    ("{manual device=3}", 9),
    ("{device=3}", 2),
    ("{replicated", 12),
    ("{replicated}}", 13),
    ("replicated", 1),
    ("", 1),
    ("{{replicated}, manual}", 16),
    ("{{replicated} {manual}}", 15),
    ("{replicated,}", 12),
    ("{devices=[2,2]<=[4] last_tile_dims={unknown}}", 37),
    ("{devices=[2,2]<=[4] last_tile_dims={manual,}}", 44),
    ("{devices=[2,2]<=[4] last_tile_dim_replicate last_tile_dims={manual}}", 45),
    ("{devices=[2]<=[2] last_tile_dims={manual, manual}}", 19),
    ('{replicated metadata={op_name="a}', 34),
    ("{maximal device=99999999999999999999999}", 17),
    ("{shard_as}", 10),
    ("{replicated /* never closed", 13),
    ("{mesh_x}", 2),
]


@pytest.mark.parametrize(("text", "column"), ERRORS)
def test_errors_have_a_column(text: str, column: int) -> None:
    with pytest.raises(ParseError) as info:
        parse_gspmd(text)
    err = info.value
    assert err.column == column, str(err)
    assert f"at column {column}" in str(err)
    assert "\n" not in str(err)


def test_error_message_shape() -> None:
    with pytest.raises(
        ParseError, match=r"expected ',' or '\]'.* at column 14 in '\{devices=\[2,2"
    ):
        parse_gspmd("{devices=[2,2")


def test_huge_tile_assignment_fails_fast() -> None:
    start = time.perf_counter()
    with pytest.raises(LimitError, match="devices"):
        parse_gspmd("{devices=[1000000000]<=[1000000000]}")
    with pytest.raises(LimitError):
        parse_gspmd("{devices=[65536,65536]0,1}")
    assert time.perf_counter() - start < 0.5


def test_deep_nesting_is_refused_cleanly() -> None:
    for depth in (65, 1000, 200_000):
        with pytest.raises(LimitError, match="nest"):
            parse_gspmd("{" * depth + "replicated" + "}" * depth)
    with pytest.raises(LimitError, match="nest"):
        parse_gspmd("{replicated metadata={" + "{" * 100 + "}}")
    # within the limit nesting is fine (and flattened)
    assert parse_gspmd("{" * 10 + "replicated" + "}" * 10).elements == (HloSharding.replicated(),)


def test_overlong_annotation_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("meshdiag.limits.MAX_ANNOTATION_CHARS", 100)
    with pytest.raises(LimitError):
        gspmd.parse_gspmd("{devices=[64]" + ",".join(map(str, range(64))) + "}")


VALID_SEEDS = CORPUS + GENERATED[:60]
_MUTATION_CHARS = "{}[]()<=,\"' T/*\\-0123456789abcdemlp\n"


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(VALID_SEEDS))
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["truncate", "flip", "insert", "delete"]))
        if not text:
            break
        i = draw(st.integers(0, len(text) - 1))
        c = draw(st.sampled_from(_MUTATION_CHARS))
        if op == "truncate":
            text = text[:i]
        elif op == "flip":
            text = text[:i] + c + text[i + 1 :]
        elif op == "insert":
            text = text[:i] + c + text[i:]
        else:
            text = text[:i] + text[i + 1 :]
    return text


@settings(
    max_examples=400,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(mutated())
def test_mutations_parse_or_fail_cleanly(text: str) -> None:
    try:
        s = parse_gspmd(text)
    except ParseError as err:
        assert 1 <= err.column <= len(text) + 1
    except LimitError:
        pass
    else:
        # whatever parses prints, and both forms of the print read back the same
        printed = print_gspmd(s, metadata=True)
        assert parse_gspmd(printed) == parse_gspmd(print_gspmd(s, form="v1", metadata=True))


# -- validation ------------------------------------------------------------------------------


def test_validate_clean_shardings() -> None:
    assert validate_hlo(parse_gspmd("{devices=[2,4]<=[8]}"), 8) == []
    assert validate_hlo(parse_gspmd("{devices=[2,2]3,1,0,2}"), 4) == []
    assert validate_hlo(parse_gspmd("{replicated}"), 8) == []
    assert validate_hlo(parse_gspmd("{maximal device=3}"), 4) == []


def test_validate_reports_verifier_problems() -> None:
    out = validate_hlo(parse_gspmd("{devices=[2,2]0,1,2,7}"), 4)
    assert any("device 7 out of range [0, 4)" in m for m in out)
    rep = validate_hlo(parse_gspmd("{devices=[2,2]0,0,1,1}"))
    assert any("repeated" in m and "0, 1" in m for m in rep)
    neg = validate_hlo(parse_gspmd("{devices=[2]1,-1}"))
    assert any("-1 out of range" in m for m in neg)
    count = validate_hlo(parse_gspmd("{devices=[2,4]<=[8]}"), 4)
    assert count == ["tile assignment [2,4] holds 8 devices but the module has 4"]
    single = validate_hlo(parse_gspmd("{devices=[1,1]<=[1]}"))
    assert any("single device" in m for m in single)
    maximal = validate_hlo(parse_gspmd("{maximal device=9}"), 8)
    assert maximal == ["device 9 is out of range: the module has 8 devices"]
    tup = validate_hlo(parse_gspmd("{{replicated}, {devices=[2]0,0}}"), 2)
    assert tup == ["tuple element 1: device 0 repeated in tile assignment"]
