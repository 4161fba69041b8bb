"""Targets: tt-mlir's versioned SupportedMeshes with its 2-D normalisation, TT systems, generic."""

import math

import pytest

from meshdiag.errors import MeshdiagError
from meshdiag.model.targets import get_target, preset_mesh, preset_names, target_names

# SupportedMeshes at HEAD (tt-mlir PR #7450), shardy_ttmlir.md §4.1
HEAD = [(1, 1), (1, 2), (1, 4), (1, 8), (1, 16), (1, 32), (1, 64), (2, 2), (2, 4), (2, 8),
        (4, 4), (4, 8), (4, 16), (4, 32), (8, 4), (8, 8), (8, 16)]  # fmt: skip


def test_head_list_is_the_pr_7450_list_in_order():
    t = get_target("tt-mlir")
    assert list(t.supported) == HEAD
    assert t.version == "2026-03-12" and "#7450" in t.ref
    assert get_target("tt-mlir@head") == t


@pytest.mark.parametrize(
    "spec,version,has_1x4,has_4x8",
    [
        ("tt-mlir@2025-07-23", "2025-07-23", False, False),  # PR #4046
        ("tt-mlir@2025-07-28", "2025-07-23", False, False),
        ("tt-mlir@2025-07", "2025-07-29", True, False),  # end of July: PR #4111 added 1x4
        ("tt-mlir@2026-01", "2025-07-29", True, False),  # the list when the seed was filed
        ("tt-mlir@#6842", "2026-02-13", True, True),
        ("tt-mlir@pr7450", "2026-03-12", True, True),
    ],
)
def test_version_pins(spec, version, has_1x4, has_4x8):
    t = get_target(spec)
    assert t.version == version
    assert t.accepts((1, 4)) is has_1x4
    assert t.accepts((4, 8)) is has_4x8
    assert t.accepts((2, 4)) and not t.accepts((4, 2))


def test_the_seed_january_list():
    # xla_hlosharding_torchxla.md §3.5: early January 2026 = {1x1,1x2,1x4,1x8,2x4,1x32,8x4}
    t = get_target("tt-mlir@2026-01-07")
    assert set(t.supported) == {(1, 1), (1, 2), (1, 4), (1, 8), (2, 4), (1, 32), (8, 4)}


@pytest.mark.parametrize("bad", ["tt-mlir@2025-06", "tt-mlir@#1", "tt-mlir@yesterday", "t3k@1"])
def test_bad_versions_are_one_line_errors(bad):
    with pytest.raises(MeshdiagError) as e:
        get_target(bad)
    assert "\n" not in str(e.value)


def test_unknown_target_lists_the_names():
    with pytest.raises(MeshdiagError, match="unknown target 'wormhole9'.*tt-mlir.*t3k"):
        get_target("wormhole9")


@pytest.mark.parametrize(
    "shape,normal",
    [((), (1, 1)), ((8,), (1, 8)), ((2, 4), (2, 4)), ((4, 2), (4, 2)), ((1, 2, 4), None)],
)
def test_ttmlir_normalises_to_2d(shape, normal):
    assert get_target("tt-mlir").normalize(shape) == normal


def test_ttmlir_accepts_exact_ordered_pairs_only():
    t = get_target("tt-mlir")
    for a in range(1, 20):
        for b in range(1, 20):
            assert t.accepts((a, b)) is ((a, b) in HEAD)
    assert t.accepts(()) and t.accepts((8,)) and t.accepts((64,))  # 1x1, 1x8, 1x64
    assert not t.accepts((3,)) and not t.accepts((128,))


def test_rank_1_2_accepts_and_rank_3_rejects():
    t = get_target("tt-mlir")
    assert t.accepts((2,))  # 1x2
    assert not t.accepts((1, 2, 4))
    assert "0-D, 1-D or 2-D mesh, got 3-D" in t.rejection((1, 2, 4))
    assert "4x2 is not in tt-mlir@2026-03-12's supported meshes" in t.rejection((4, 2))
    assert "(normalised from 3)" in t.rejection((3,))


@pytest.mark.parametrize(
    "shape,first",
    [
        ((4, 2), (2, 4)),  # the seed: the transpose first
        ((2, 1), (1, 2)),
        ((16, 4), (4, 16)),
        ((1, 2, 4), (2, 4)),  # 3-D with a size-1 axis: drop it
        ((2, 2, 2), (1, 8)),  # no transpose: same-count reshapes in the list's order
        ((32, 1), (1, 32)),
    ],
)
def test_suggest_transpose_first_then_reshapes(shape, first):
    t = get_target("tt-mlir")
    s = t.suggest(shape)
    assert s[0] == first
    assert all(t.accepts(x) and math.prod(x) == math.prod(shape) for x in s)
    assert len(set(s)) == len(s)


def test_suggest_is_empty_when_accepted_or_impossible():
    t = get_target("tt-mlir")
    assert t.suggest((2, 4)) == []
    assert t.suggest((3, 5)) == []  # no supported mesh has 15 devices
    assert t.suggest((4, 2)) == [(2, 4), (1, 8)]


def test_systems_accept_their_chip_count_and_report_their_shape():
    t3k = get_target("t3k")
    assert t3k.kind == "system" and t3k.chips == 8 and t3k.canonical_shape == (2, 4)
    assert t3k.accepts((4, 2)) and t3k.accepts((8,)) and not t3k.accepts((2, 2))
    assert t3k.suggest((2, 2))[0] == (2, 4)
    assert "t3k has 8 chips but the mesh has 4 devices" == t3k.rejection((2, 2))
    assert get_target("llmbox").name == "t3k"
    assert get_target("galaxy").canonical_shape == (8, 4)
    assert get_target("n150").chips == 1 and get_target("n300").canonical_shape == (1, 2)
    assert get_target("p150x4").shapes == ((1, 4), (2, 2))


#: the mesh presets users rely on (`--mesh t3k`), as they were before they came from the table
KNOWN_PRESETS = {
    "n150": (1, 1), "n300": (1, 2), "t3k": (2, 4), "t3000": (2, 4), "llmbox": (2, 4),
    "loudbox": (2, 4), "galaxy": (8, 4), "tg": (8, 4), "tgg": (8, 8), "p100": (1, 1),
    "p150": (1, 1), "p300": (1, 2), "p150x2": (1, 2), "p150x4": (1, 4), "p150x8": (2, 4),
    "bhglx": (8, 4),
}  # fmt: skip


def test_mesh_presets_are_the_system_table():
    assert set(KNOWN_PRESETS) <= set(preset_names())
    for name in preset_names():
        t = get_target(name)
        mesh = preset_mesh(name.upper())
        assert mesh.shape == t.canonical_shape and t.chips == math.prod(mesh.shape), name
        assert mesh.names == ("rows", "cols") and mesh.name == name
        if name in KNOWN_PRESETS:
            assert mesh.shape == KNOWN_PRESETS[name], name
    assert preset_mesh("batch") is None


def test_generic_accepts_everything():
    g = get_target("generic")
    assert g.accepts((4, 2)) and g.accepts((3, 5, 7)) and g.suggest((4, 2)) == []


def test_names_cover_aliases():
    names = target_names()
    assert {"tt-mlir", "generic", "t3k", "t3000", "galaxy", "tg", "p300"} <= set(names)
