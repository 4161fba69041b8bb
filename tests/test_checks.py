"""The mesh checks MD101-MD104, MD107, MD108 on hand-built module reports and on the seed
fixtures through the real scanner."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshdiag.checks import (
    md101_mesh_mismatch,
    md102_off_mesh_sharding,
    md103_unsupported_mesh,
    md104_device_count_mismatch,
    md107_rank_mismatch,
    md108_invalid_sharding,
)
from meshdiag.checks.common import module_meshes
from meshdiag.checks.context import CheckContext
from meshdiag.ir.model import Diagnostic, MeshDecl, ModuleReport, Value
from meshdiag.memo import RunMemos
from meshdiag.model.mesh import Mesh
from meshdiag.model.named_to_tiled import named_to_hlo
from meshdiag.model.sharding import AxisRef, DimSharding, NamedSharding
from meshdiag.notation.gspmd import parse_gspmd
from tests.test_properties import gspmd_values

GLOBAL = Mesh((("batch", 2), ("model", 4)))
SEED_MESH = Mesh((("_axis_0", 4), ("_axis_1", 2)), name="mesh")
SEED_GSPMD = "{devices=[1,4,2]<=[8] last_tile_dim_replicate}"
RIGHT_GSPMD = "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"


def ax(text: str) -> AxisRef:
    """`model` or the sub-axis `model:(1)2`."""
    if ":" not in text:
        return AxisRef(text)
    name, rest = text.split(":")
    pre, size = rest[1:].split(")")
    return AxisRef(name, int(pre), int(size))


def sdy(mesh: Mesh, dims, *, shape=(32, 32), line=4, name="%arg0", mesh_name="mesh", **extra):
    ns = NamedSharding(
        mesh,
        tuple(DimSharding(tuple(ax(a) for a in d)) for d in dims),
        mesh_ref=mesh_name,
        **extra,
    )
    text = (
        "#sdy.sharding<@"
        + mesh_name
        + ", ["
        + ", ".join("{" + ", ".join(f'"{a}"' for a in d) + "}" for d in dims)
        + "]>"
    )
    try:
        hlo = named_to_hlo(ns, mesh)
    except Exception:  # an invalid sharding has no tiled form; MD108 reports it
        hlo = None
    return Value(name, line, 18, text, "sdy", kind="arg", shape=shape, mesh_name=mesh_name,
                 sharding=ns, hlo=hlo)  # fmt: skip


def gspmd(text: str, *, shape=(32, 32), line=3, name="%arg0") -> Value:
    s = parse_gspmd(text)
    return Value(name, line, 40, text, "gspmd", kind="arg", shape=shape, sharding=s, hlo=s)


def module(values=(), meshes=(), **kw) -> ModuleReport:
    decls = [MeshDecl(m.name or "mesh", m, 3, 3, f"<{m.short()}>") for m in meshes]
    return ModuleReport("ReplicateShardedData.6", 2, meshes=decls, values=list(values), **kw)


def ctx(mesh=GLOBAL, target=None) -> CheckContext:
    return CheckContext("dump.mlir", mesh, target)


def seed_module(**kw) -> ModuleReport:
    return module(
        [sdy(SEED_MESH, [[], ["_axis_0"]]), sdy(SEED_MESH, [[], []], name="%0", line=5)],
        [SEED_MESH],
        diagnostics=[Diagnostic("error", "Mesh is not valid", 12)],
        **kw,
    )


def codes(findings):
    return [f.code for f in findings]


# -- MD101 ---------------------------------------------------------------------------------
def test_md101_seed_declared_4x2_vs_global_2x4():
    (f,) = md101_mesh_mismatch.check(seed_module(), ctx())
    assert (f.code, f.name, f.severity, f.path, f.line, f.column) == (
        "MD101", "mesh-mismatch", "error", "dump.mlir", 3, 3)  # fmt: skip
    assert "ReplicateShardedData.6" in f.message
    assert "_axis_0=4,_axis_1=2" in f.message and "batch=2,model=4" in f.message
    assert "permuted (4x2 vs 2x4)" in f.message
    assert 'sdy.mesh @mesh = <["batch"=2, "model"=4]>' in f.fix
    assert '%arg0: <@mesh, [{}, {"model"}]>' in f.fix
    assert "%0" not in f.fix  # a replicated value needs no correction


def test_md101_needs_a_global_mesh():
    assert md101_mesh_mismatch.check(seed_module(), ctx(mesh=None)) == []


@pytest.mark.parametrize(
    "declared",
    [
        Mesh((("_axis_0", 2), ("_axis_1", 4))),  # fake names alone are fine
        Mesh((("x", 2), ("y", 4))),
        Mesh((("a", 1), ("batch", 2), ("model", 4))),  # size-1 axes do not count
        Mesh((("batch", 2), ("one", 1), ("model", 4))),
    ],
)
def test_md101_equal_meshes_do_not_fire(declared):
    m = module([sdy(declared, [[], [declared.names[-1]]])], [declared])
    assert md101_mesh_mismatch.check(m, ctx()) == []


@pytest.mark.parametrize(
    "declared,why",
    [
        (Mesh((("batch", 2), ("model", 4)), (0, 2, 4, 6, 1, 3, 5, 7)), "device order"),
        (Mesh((("batch", 2), ("model", 2))), "4 devices, the global mesh 8"),
        (Mesh((("all", 8),)), "shapes differ (8 vs 2x4)"),  # declared: merging is a mismatch
    ],
)
def test_md101_declared_mismatches(declared, why):
    (f,) = md101_mesh_mismatch.check(module([], [declared]), ctx())
    assert why in f.message


def test_md101_gspmd_only_seed_derives_4x2():
    m = module([gspmd(SEED_GSPMD, line=3), gspmd("{replicated}", line=4, name="result#0")])
    (f,) = md101_mesh_mismatch.check(m, ctx())
    assert "derived from the GSPMD sharding of %arg0 (line 3)" in f.message
    assert "_axis_0=4,_axis_1=2" in f.message and (f.line, f.column) == (3, 40)
    assert 'sdy.mesh @mesh = <["batch"=2, "model"=4]>' in f.fix
    assert f"%arg0: {RIGHT_GSPMD} ((None, 'model'))" in f.fix


@pytest.mark.parametrize(
    "text",
    [
        RIGHT_GSPMD,  # (None, 'model')
        "{devices=[1,2,4]<=[8] last_tile_dim_replicate}",  # (None, 'batch')
        "{devices=[8,1]<=[8]}",  # (('batch', 'model'), None): derived 8 merges both axes
        "{devices=[8,1]<=[2,4]T(1,0)}",  # (('model', 'batch'), None)
        "{devices=[2,4]<=[8]}",
        "{devices=[4,2]<=[2,4]T(1,0)}",
    ],
)
def test_md101_gspmd_plain_specs_are_compatible(text):
    assert md101_mesh_mismatch.check(module([gspmd(text)]), ctx()) == []


# -- MD102 ---------------------------------------------------------------------------------
def test_md102_seed_sdy_value_on_the_global_mesh():
    (f,) = md102_off_mesh_sharding.check(seed_module(), ctx())
    assert (f.code, f.line, f.column) == ("MD102", 4, 18)
    assert '[{}, {"batch", "model":(1)2}]' in f.message
    assert "4x2" in f.message  # a mesh it fits
    assert "(None, 'model') has the same tiling but another device order" in f.message
    assert RIGHT_GSPMD in f.fix and '[{}, {"model"}]' in f.fix


def test_md102_gspmd_seed_and_fixed():
    (f,) = md102_off_mesh_sharding.check(module([gspmd(SEED_GSPMD)]), ctx())
    assert f"use (None, 'model') on the global mesh: {RIGHT_GSPMD}" in f.fix
    assert md102_off_mesh_sharding.check(module([gspmd(RIGHT_GSPMD)]), ctx()) == []


def test_md102_sub_axes_on_the_global_mesh_are_valid_layouts():
    # issue 11 changed this: Shardy propagation gives sub-axes on the global mesh itself
    # (a reshape of an ('x', 'y') dim), so an explicit sub-axis sharding on the declared global
    # mesh is a layout of it, not an off-mesh sharding
    g = Mesh((("batch", 2), ("model", 4)), name="mesh")
    for dims in ([[], ["batch", "model:(1)2"]], [["batch", "model:(1)2"], ["model:(2)2"]]):
        assert md102_off_mesh_sharding.check(module([sdy(g, dims)], [g]), ctx()) == []
    good = sdy(g, [["model"], ["batch"]])
    assert md102_off_mesh_sharding.check(module([good], [g]), ctx()) == []


def test_md101_md102_derived_mesh_that_splits_global_axes():
    # what XLA exports from [{"x","y":(1)2},{"y":(2)2}] next to plain specs: derived 2x2x2
    x4y2, x2y4 = "{devices=[4,2]<=[8]}", "{devices=[2,4]<=[8]}"
    m = module([gspmd(x4y2), gspmd(x2y4, name="%arg1", line=4)])
    assert [mm.mesh.shape for mm in module_meshes(m, RunMemos())] == [(2, 2, 2)]
    assert md101_mesh_mismatch.check(m, ctx()) == []
    assert md102_off_mesh_sharding.check(m, ctx()) == []
    # alone, [4,2]<=[8] derives 4x2, whose first axis joins batch with half of model: the
    # seed's distortion, reported by both
    alone = module([gspmd(x4y2)])
    assert codes(md101_mesh_mismatch.check(alone, ctx())) == ["MD101"]
    assert codes(md102_off_mesh_sharding.check(alone, ctx())) == ["MD102"]


def test_md102_device_order_no_sub_axis_gives_fires_on_the_global_mesh():
    swapped = "{devices=[8]0,1,2,3,5,4,6,7}"  # devices 4 and 5 swapped
    m = module([gspmd("{devices=[2,4]<=[8]}"), gspmd(swapped, name="%arg1", line=4)])
    (f,) = md102_off_mesh_sharding.check(m, ctx())
    assert (f.code, f.line) == ("MD102", 4)
    assert "no named sharding on it expresses it" in f.message


@pytest.mark.parametrize(
    "text",
    ["{replicated}", "{maximal device=3}", "{manual}", "{devices=[2,2]<=[4]}"],  # 4 ≠ 8: MD104
)
def test_md102_ignores_what_it_cannot_compare(text):
    assert md102_off_mesh_sharding.check(module([gspmd(text)]), ctx()) == []


def test_md102_no_named_form_on_the_mesh():
    g = Mesh((("x", 2), ("y", 3)))
    (f,) = md102_off_mesh_sharding.check(module([gspmd("{devices=[2,3]<=[2,3]T(1,0)}")]), ctx(g))
    assert "('x', 'y') has the same tiling" in f.message
    assert "{devices=[2,3]<=[6]}" in f.fix


def test_md102_judges_each_distinct_sharding_once_but_reports_every_value():
    vals = [gspmd(SEED_GSPMD, name=f"%arg{i}", line=3 + i) for i in range(3)]
    assert [f.line for f in md102_off_mesh_sharding.check(module(vals), ctx())] == [3, 4, 5]


# -- MD103 ---------------------------------------------------------------------------------
def test_md103_seed_4x2_unsupported_suggests_2x4():
    (f,) = md103_unsupported_mesh.check(seed_module(), ctx(target="tt-mlir"))
    assert (f.code, f.line) == ("MD103", 3)
    assert "4x2 is not in tt-mlir@2026-03-12's supported meshes" in f.message
    assert "'error: Mesh is not valid' at line 12" in f.message
    assert f.fix.startswith('use the global mesh 2x4: sdy.mesh @mesh = <["batch"=2, "model"=4]>')


def test_md103_without_global_mesh_suggests_the_transpose():
    (f,) = md103_unsupported_mesh.check(seed_module(), ctx(mesh=None, target="tt-mlir@2025-07"))
    assert f.fix == "use 2x4 (the transpose); also accepted: 1x8"
    assert "tt-mlir@2025-07-29" in f.message


def test_md103_gspmd_only_uses_the_derived_mesh():
    (f,) = md103_unsupported_mesh.check(module([gspmd(SEED_GSPMD)]), ctx(target="tt-mlir"))
    assert "derived from the GSPMD sharding of %arg0" in f.message
    assert md103_unsupported_mesh.check(module([gspmd(RIGHT_GSPMD)]), ctx(target="tt-mlir")) == []


@pytest.mark.parametrize(
    "mesh,target,fires",
    [
        (Mesh((("x", 8),)), "tt-mlir", False),  # 1-D → 1x8
        (Mesh((("x", 1), ("y", 2), ("z", 4))), "tt-mlir", True),  # 3-D is rejected
        (Mesh((("x", 2), ("y", 2))), "tt-mlir@2025-07", True),  # 2x2 came in 2026-03
        (Mesh((("x", 2), ("y", 2))), "tt-mlir", False),
        (SEED_MESH, "generic", False),
        (SEED_MESH, "t3k", False),  # systems limit the count only (MD104)
        (SEED_MESH, None, False),
    ],
)
def test_md103_table(mesh, target, fires):
    got = md103_unsupported_mesh.check(module([], [mesh]), ctx(mesh=None, target=target))
    assert bool(got) is fires


def test_md103_3d_suggests_dropping_size1_axes():
    m = module([], [Mesh((("x", 1), ("y", 2), ("z", 4)))])
    (f,) = md103_unsupported_mesh.check(m, ctx(mesh=None, target="tt-mlir"))
    assert "expects a 0-D, 1-D or 2-D mesh, got 3-D" in f.message
    assert f.fix.startswith("use 2x4")


# -- MD104 ---------------------------------------------------------------------------------
def test_md104_meshes_of_one_module_differ():
    a = Mesh((("x", 8),), name="a")
    b = Mesh((("y", 4),), name="b")
    maximal = Mesh((), (3,), name="maximal_mesh_3")
    m = module([], [a, b, maximal])
    (f,) = md104_device_count_mismatch.check(m, ctx())
    assert "mesh @b with 4 devices but mesh @a" in f.message and "8" in f.fix


def test_md104_num_partitions_and_tile_counts():
    m = module([gspmd("{devices=[2,2]<=[4]}"), gspmd("{devices=[2,4]<=[8]}", line=9)],
               num_partitions=8)  # fmt: skip
    (f,) = md104_device_count_mismatch.check(m, ctx())
    assert f.line == 3 and "4 devices but num_partitions is 8" in f.message
    m = module([], [GLOBAL.__class__(GLOBAL.axes, name="mesh")], num_partitions=4)
    (f,) = md104_device_count_mismatch.check(m, ctx())
    assert "num_partitions=4" in f.message and "num_partitions=8" in f.fix


def test_md104_group_local_shardings_after_partitioning():
    # what XLA's grouped partitioning leaves in *.spmd-cleanup.* files of a 32-partition module
    group = [
        gspmd("{devices=[1,4,1,4]0,4,8,12,1,5,9,13,2,6,10,14,3,7,11,15 last_tile_dim_replicate}"),
        gspmd("{devices=[1,1,4]0,1,2,3}", line=5),
        gspmd("{devices=[8,1]<=[8]}", line=6),
    ]
    odd = gspmd("{devices=[12]<=[12]}", line=7)  # no device group of 32 has 12 devices
    g32 = Mesh((("x", 2), ("y", 4), ("z", 4)))
    m = module([*group, odd], num_partitions=32)
    m.partitioned = True
    (f,) = md104_device_count_mismatch.check(m, ctx(g32))
    assert f.line == 7 and "12 devices but num_partitions is 32" in f.message
    m = module(group, num_partitions=32)  # before partitioning they are mismatches
    assert [f.line for f in md104_device_count_mismatch.check(m, ctx(g32))] == [3, 5, 6]


def test_md104_gspmd_values_disagree_without_a_reference():
    m = module([gspmd("{devices=[2,4]<=[8]}"), gspmd("{devices=[2,2]<=[4]}", line=7)])
    (f,) = md104_device_count_mismatch.check(m, ctx(mesh=None))
    assert f.line == 7 and "%arg0's sharding (line 3) has 8" in f.message


def test_md104_target_chip_count():
    m = module([], [Mesh((("x", 2), ("y", 2)))])
    (f,) = md104_device_count_mismatch.check(m, ctx(target="t3k"))
    assert "t3k has 8 chips" in f.message and "2x4" in f.fix
    assert md104_device_count_mismatch.check(module([], [SEED_MESH]), ctx(target="t3k")) == []
    assert md104_device_count_mismatch.check(seed_module(), ctx(target="tt-mlir")) == []


# -- MD107 ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text,shape,fix",
    [
        ("{devices=[2,2,2]<=[8]}", (8, 16), "{devices=[2,2,2]<=[8] last_tile_dim_replicate}"),
        ("{devices=[2,4]<=[8]}", (8, 16, 4), "{devices=[2,4,1]<=[8]}"),
        (
            "{devices=[2,1,4]<=[8] last_tile_dim_replicate}",
            (8,),
            "{devices=[2,4]<=[8] last_tile_dim_replicate}",
        ),
        ("{devices=[2,2,2]<=[8] last_tile_dim_replicate}", (8,), None),
        ("{devices=[8,1,1]0,1,2,3,4,5,6,7}", (8,), "{devices=[8]0,1,2,3,4,5,6,7}"),
    ],
)
def test_md107_tiled(text, shape, fix):
    (f,) = md107_rank_mismatch.check(module([gspmd(text, shape=shape)]), ctx())
    assert f"has rank {len(shape)}" in f.message
    if fix:
        assert f.fix == f"use {fix}" or f.fix.startswith(f"use {fix} ")
    else:
        assert "rank-2 tensor" in f.fix


def test_md107_named():
    g = Mesh((("batch", 2), ("model", 4)), name="mesh")
    (f,) = md107_rank_mismatch.check(module([sdy(g, [["model"]], shape=(4, 4))], [g]), ctx())
    assert f.fix == 'use [{"model"}, {}]'
    (f,) = md107_rank_mismatch.check(module([sdy(g, [["model"], []], shape=(4,))], [g]), ctx())
    assert f.fix == 'use [{"model"}]'


@pytest.mark.parametrize(
    "text", ["{replicated}", "{maximal device=1}", "{devices=[1,4,2]<=[8] last_tile_dim_replicate}"]
)
def test_md107_quiet(text):
    assert md107_rank_mismatch.check(module([gspmd(text)]), ctx()) == []


# -- MD108 ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "dims,extra,message",
    [
        ([["a"], ["a"]], {}, 'duplicate axis ref: "a"'),
        ([["c"], []], {}, 'unknown axis name: "c"'),
        ([["b:(1)3"], []], {}, "doesn't divide the size of the full axis 4"),
        ([["b:(1)2", "b:(1)4"], []], {}, "sub-axis size is equal to the full axis size"),
        ([["b"], ["b:(1)2"]], {}, 'both sub-axis and full-axis are used for axis name: "b"'),
        ([["a"], []], {"replicated": (AxisRef("a"),)}, 'duplicate axis ref: "a"'),
    ],
)
def test_md108_shardy_verifier_facts(dims, extra, message):
    g = Mesh((("a", 2), ("b", 4)), name="mesh")
    got = md108_invalid_sharding.check(module([sdy(g, dims, **extra)], [g]), ctx(mesh=None))
    assert got and all(f.code == "MD108" for f in got)
    assert any(message in f.message for f in got), [f.message for f in got]


def test_md108_mesh_device_ids_not_a_permutation():
    bad = Mesh((("a", 2), ("b", 2)), (0, 1, 2, 5), name="mesh")
    (f,) = md108_invalid_sharding.check(module([], [bad]), ctx(mesh=None))
    assert "sorted device ids must be iota(product(axes)), got: 0, 1, 2, 5" in f.message
    assert "0..3" in f.fix


def test_md108_unknown_mesh():
    v = sdy(GLOBAL, [["batch"], []], mesh_name="other")
    v.sharding = NamedSharding(None, v.sharding.dims, mesh_ref="other")
    (f,) = md108_invalid_sharding.check(module([v], [SEED_MESH]), ctx())
    assert "unknown mesh: @other" in f.message


@pytest.mark.parametrize(
    "text,message",
    [
        ("{devices=[2,2]0,1,2,9}", "device 9 out of range [0, 8)"),
        ("{devices=[2,2]0,1,1,3}", "device 1 repeated"),
        ("{maximal device=8}", "device 8 is out of range"),
    ],
)
def test_md108_gspmd_device_ids(text, message):
    got = md108_invalid_sharding.check(module([gspmd(text)], num_partitions=8), ctx())
    assert any(message in f.message for f in got), [f.message for f in got]


def test_md108_valid_inputs_are_quiet():
    assert md108_invalid_sharding.check(seed_module(), ctx()) == []
    assert md108_invalid_sharding.check(module([gspmd(RIGHT_GSPMD)]), ctx()) == []


def test_every_finding_has_the_contract_fields():
    m = seed_module()
    for check in (md101_mesh_mismatch, md102_off_mesh_sharding, md103_unsupported_mesh):
        for f in check.check(m, ctx(target="tt-mlir")):
            assert f.code and f.name and f.severity == "error" and f.fix
            assert f.path == "dump.mlir" and f.line and f.column and f.module
            assert f.message.endswith(".") and "\n" not in f.message


# -- end to end through the real scanner and CLI ------------------------------------------
SEED_DIR = "fixtures/seed"


def inspect_json(capsys, path, *extra):
    import json
    import os

    from meshdiag.cli.app import main

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    args = ["inspect", os.path.join(root, SEED_DIR, path), "--mesh", "batch=2,model=4"]
    with pytest.raises(SystemExit) as e:
        main([*args, *extra, "--format", "json"])
    out = capsys.readouterr()
    assert e.value.code == 0, out.err
    return json.loads(out.out)["findings"]


def test_e2e_distorted_seed_reports_md101_md102_md103(capsys):
    got = inspect_json(capsys, "distorted_mesh.mlir", "--target", "tt-mlir")
    first = [f for f in got if f["line"] < 12]  # the "Before AnalyzeMeshPass" section
    assert sorted(f["code"] for f in first) == ["MD101", "MD102", "MD103"]
    by = {f["code"]: f for f in first}
    assert (
        by["MD101"]["line"] == 3
        and 'sdy.mesh @mesh = <["batch"=2, "model"=4]>' in (by["MD101"]["fix"])
    )
    assert '[{}, {"model"}]' in by["MD101"]["fix"]
    assert by["MD102"]["line"] == 4 and RIGHT_GSPMD in by["MD102"]["fix"]
    assert "(None, 'model')" in by["MD102"]["fix"]
    assert "Mesh is not valid" in by["MD103"]["message"] and "2x4" in by["MD103"]["fix"]
    for f in got:
        assert set(f) == {"code", "name", "severity", "path", "line", "column", "message", "fix"}


def test_e2e_fixed_seed_is_clean(capsys):
    got = inspect_json(capsys, "fixed_mesh.mlir", "--target", "tt-mlir")
    assert not {f["code"] for f in got} & {"MD101", "MD102", "MD103"}


def test_e2e_gspmd_seed(capsys):
    got = inspect_json(capsys, "distorted_mesh_gspmd.mlir")
    assert {"MD101", "MD102"} <= {f["code"] for f in got}
    md101 = next(f for f in got if f["code"] == "MD101")
    assert "derived from the GSPMD sharding of %arg0" in md101["message"]
    assert RIGHT_GSPMD in md101["fix"]
    fixed = inspect_json(capsys, "fixed_mesh_gspmd.mlir", "--target", "tt-mlir")
    assert not {f["code"] for f in fixed} & {"MD101", "MD102", "MD103"}


def test_a_check_that_raises_is_an_md002_finding_not_silence() -> None:
    from meshdiag.checks.registry import RULES, get_rule, module_checks, run_check
    from meshdiag.errors import MeshdiagError
    from meshdiag.pipeline.inspect import run_checks

    def boom(module, ctx):
        raise MeshdiagError("mesh axis size 0")

    from meshdiag.ir.scan import scan_bytes

    text = (
        'module @m {\nsdy.mesh @mesh = <["x"=2]>\nfunc.func @main(%arg0: tensor<8xf32>) {\n}\n}\n'
    )
    report = scan_bytes("x.mlir", text.encode())
    found = run_checks(report, None, None, "xla", checks={"MD104": boom})
    (f,) = found
    assert (f.code, f.severity, f.line) == ("MD002", "warning", report.modules[0].line)
    assert f.message == "MD104 could not judge this module: mesh axis size 0"
    assert get_rule("MD002").name == "check-failed"
    # every rule in the table has its module, and every module rule its check
    assert set(module_checks()) == {c for c, (_, kind) in RULES.items() if kind == "module"}
    ctx = CheckContext("x.mlir")
    assert run_check("MD101", lambda m, c: [], report.modules[0], ctx, line=1, module=None) == []


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_md105_fast_answer_is_the_findings_answer(data):
    """MD105 answers most values without its memo (`splits_evenly`): it must say "nothing to
    find" exactly when `uneven_findings` finds nothing, for any GSPMD sharding (tiled with
    replicated or manual subgroups, replicated, maximal, tuples) and any shape."""
    from meshdiag.checks.keys import splits_evenly
    from meshdiag.checks.md105_uneven_shard import uneven_findings

    h = data.draw(gspmd_values)
    rank = h.data_rank if h.is_tiled and h.tile is not None else None
    if rank is not None and data.draw(st.booleans()):
        shape = tuple(  # often divisible: the common case
            k * data.draw(st.integers(0, 3)) + data.draw(st.sampled_from([0, 0, 1]))
            for k in h.data_dims
        )
    else:
        shape = tuple(data.draw(st.lists(st.integers(0, 40), max_size=5)))
    found = uneven_findings(h, shape, "xla", where={})
    assert splits_evenly(h, shape) == (not found)
    # the split dims are remembered on the object: asked again, and after a trip to
    # another process (pickled with them), the same answer
    assert splits_evenly(h, shape) == (not found)
    assert splits_evenly(pickle.loads(pickle.dumps(h)), shape) == (not found)


@pytest.mark.parametrize(
    ("shape", "split", "says"),
    [
        ((7, 2), "xla", "device 3 holds 1 + 1 padding"),
        ((5, 2), "xla", "device 2 holds 1 + 1 padding; device 3 holds only padding"),
        ((7, 2), "chunk", "giving 4 chunks (2,2,2,1): device 3 holds a short chunk of 1"),
        ((5, 2), "chunk", "(2,2,1): device 2 holds a short chunk of 1; device 3 holds nothing"),
        ((7, 2), "array-split", "(2,2,2,1): devices 0-2 hold 2; device 3 holds 1"),
    ],
)
def test_md105_says_which_devices_hold_what(shape, split, says):
    """The devices of short, padded and empty shards, by rule (worked out by hand: 7 or 5
    rows over 4 devices)."""
    from meshdiag.checks.md105_uneven_shard import uneven_findings

    (f,) = uneven_findings(parse_gspmd("{devices=[4,1]<=[4]}"), shape, split, where={})
    assert f.message.endswith(says), f.message


@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 300), k=st.integers(2, 70), rule=st.sampled_from(["xla", "chunk"]))
def test_md105_shard_runs_are_the_split_arrays(n, k, rule):
    """MD105 reads which shards are whole, short and empty from n and k (`shard_runs`):
    they must be what `split_dim`'s per-shard arrays say."""
    import numpy as np

    from meshdiag.checks.md105_uneven_shard import shard_runs
    from meshdiag.model.splits import split_dim

    s = split_dim(n, k, rule)
    sizes = s.stops - s.starts
    c = -(-n // k)
    full, used = shard_runs(n, k)
    i = np.arange(k)
    assert ((sizes == c) == (i < full)).all()
    assert (((sizes > 0) & (sizes < c)) == ((i >= full) & (i < used))).all()
    assert ((sizes == 0) == (i >= used)).all()
    assert (s.present == (i < used)).all() or rule == "xla"
    assert used - full <= 1


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_md105_reads_listed_devices_as_the_numpy_arrays(data):
    """A tile of at most 1,024 devices has each shard index's devices listed in Python
    (`_by_index`), in the order numpy's moveaxis gives; a finding read from those lists is
    the finding read from the array."""
    import numpy as np

    from meshdiag.checks.md105_uneven_shard import _by_index, dim_finding
    from meshdiag.model.tiles import TileAssignment

    dims = tuple(data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
    n = int(np.prod(dims))
    devices = data.draw(st.permutations(range(n)))
    tile = TileAssignment.from_devices(dims, devices)
    d = data.draw(st.integers(0, len(dims) - 1))
    rows = _by_index(tile, d)
    array = np.moveaxis(tile.array(), d, 0).reshape(dims[d], -1)
    assert rows == array.tolist()
    size = data.draw(st.integers(1, 40))
    split = data.draw(st.sampled_from(["xla", "chunk", "array-split", "even"]))
    listed = dim_finding(d, size, dims[d], split, rows, where={})
    arrayed = dim_finding(d, size, dims[d], split, array, where={})
    assert (listed is None) == (arrayed is None)
    if listed is not None:
        assert (listed.message, listed.fix) == (arrayed.message, arrayed.fix)
