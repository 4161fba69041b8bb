"""The copy simulator's shape: checks never import it (it imports them), its modules keep no
module-level state, and each step's module does its step on plain inputs."""

from __future__ import annotations

import ast
from pathlib import Path

import grimp
import pytest

import meshdiag.simulate
from meshdiag.errors import MeshdiagError
from meshdiag.model.copy import DeviceCopy, Piece, Readback, ShardedDim
from meshdiag.model.mesh import mesh_from_shape
from meshdiag.notation.ttnn import parse_composer, parse_dest
from meshdiag.simulate.allocate import allocate
from meshdiag.simulate.compose import compose
from meshdiag.simulate.readback import judge_readback
from meshdiag.simulate.transfer import copy_specs

SIMULATE = Path(meshdiag.simulate.__file__).parent


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("meshdiag", cache_dir=None)


def test_checks_never_import_simulate_not_even_for_types(graph):
    # grimp counts imports under TYPE_CHECKING too
    assert not graph.chain_exists("meshdiag.checks", "meshdiag.simulate", as_packages=True)
    for name in ("md105_uneven_shard", "md106_uniform_spec"):
        imported = graph.find_modules_directly_imported_by(f"meshdiag.checks.{name}")
        assert "meshdiag.model.copy" in imported
        assert not any(m.startswith("meshdiag.simulate") for m in imported)


def test_the_copy_types_are_plain_model_data(graph):
    imported = graph.find_modules_directly_imported_by("meshdiag.model.copy")
    assert not any(m.startswith("meshdiag.") for m in imported)
    d = DeviceCopy(3, 3, (0, 3), ((0, 1), (2, 4)), (1, 2), (1, 2), False, False, None)
    assert d.shard_shape == (1, 2)
    assert d.to_json()["written"] == [[0, 1], [2, 4]]
    rb = Readback((2,), False, (), (Piece(0, ((0, 2),), "stale", None, False),), "first")
    assert rb.differing == rb.pieces
    assert ShardedDim(1, 7, 8, ((0,),) * 8).shards == 8


def _module_level_state(path: Path) -> list[str]:
    """Module-level names bound to a mutable container, or functions given a cache decorator."""
    found = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(
            node.value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
        ):
            found.append(f"{path.name}:{node.lineno}")
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call):
            func = node.value.func
            if isinstance(func, ast.Name) and func.id in ("dict", "list", "set", "defaultdict"):
                found.append(f"{path.name}:{node.lineno}")
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            for dec in node.decorator_list:
                text = ast.unparse(dec)
                if "cache" in text:
                    found.append(f"{path.name}:{node.lineno} @{text}")
    return found


def test_no_module_level_caches_in_simulate():
    files = sorted(SIMULATE.glob("*.py"))
    assert len(files) > 5
    assert [hit for f in files for hit in _module_level_state(f)] == []


# -- each step on its own ----------------------------------------------------------------------

LINE8 = mesh_from_shape((1, 8))
#: shard:1 of (1,7,4) over 8 devices under `chunk`: devices 0-6 one slice each, device 7 nothing
REGIONS = [((0, 1), (i, i + 1), (0, 4)) for i in range(7)] + [None]


def test_allocate_fresh_uniform_and_rank_mismatch():
    assert allocate(LINE8, (1, 7, 4), parse_dest("fresh"), REGIONS) == [(1, 1, 4)] * 7 + [None]
    assert allocate(LINE8, (1, 7, 4), parse_dest("uniform:1,1,4"), REGIONS) == [(1, 1, 4)] * 8
    with pytest.raises(MeshdiagError, match=r"destination spec \(1,4\) has rank 2"):
        allocate(LINE8, (1, 7, 4), parse_dest("uniform:1,4"), REGIONS)


def test_copy_by_value_keeps_the_allocated_spec_by_reference_replaces_it():
    uniform = [(1, 1, 4)] * 8
    assert copy_specs(LINE8, (1, 7, 4), REGIONS, uniform, "by-value") == uniform
    assert copy_specs(LINE8, (1, 7, 4), REGIONS, uniform, "by-reference") == [(1, 1, 4)] * 7 + [
        None
    ]
    with pytest.raises(MeshdiagError, match="does not fit the destination buffer"):
        copy_specs(LINE8, (1, 7, 4), REGIONS, [(1, 1, 2)] * 8, "by-value")


def test_compose_and_judge_the_stale_device():
    final = [(1, 1, 4)] * 8  # by-value: device 7 keeps claiming a slice
    out_shape, placed = compose(LINE8, (1, 7, 4), parse_composer("concat:1"), final, None)
    assert out_shape == (1, 8, 4)
    assert placed[7] == (7, ((0, 1), (7, 8), (0, 4)))
    rb = judge_readback(LINE8.ids, (1, 7, 4), REGIONS, final, out_shape, placed, "concat:1")
    assert rb.stale_devices == (7,) and not rb.matches_source
    assert [p.kind for p in rb.pieces] == ["data"] * 7 + ["stale"]
    with pytest.raises(MeshdiagError, match="'tiles' composer needs a compiler sharding"):
        compose(LINE8, (1, 7, 4), parse_composer("tiles"), final, None)
