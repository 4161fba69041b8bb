"""PartitionSpec text, mesh text in every supported notation, and notation auto-detection."""

import json

import pytest

from meshdiag.errors import LimitError, MeshdiagError, ParseError
from meshdiag.inputs.mesh_input import parse_mesh
from meshdiag.model.mesh import Mesh
from meshdiag.model.named_to_tiled import named_to_hlo
from meshdiag.model.sharding import HloSharding, NamedSharding
from meshdiag.notation.detect import parse_sharding, to_hlo
from meshdiag.notation.gspmd import print_gspmd
from meshdiag.notation.pspec import named_to_pspec, parse_pspec, pspec_to_named
from meshdiag.notation.shardy import parse_sdy_sharding

BM = Mesh((("batch", 2), ("model", 4)))


@pytest.mark.parametrize(
    "text,spec",
    [
        ("P(None, 'model')", (None, ("model",))),
        ("PartitionSpec('batch', None)", (("batch",), None)),
        ("jax.sharding.PartitionSpec(('batch', 'model'),)", (("batch", "model"),)),
        ("(None, ('x', 'y'))", (None, ("x", "y"))),
        ('[None, "model"]', (None, ("model",))),
        ("None", (None,)),
        ("(None, None)", (None, None)),
        ("'model'", (("model",),)),
        ("model", (("model",),)),
        ("P()", ()),
        ("()", ()),
        ("(0, None)", (("0",), None)),
        ("P( 'a' , ( 'b' , ) , )", (("a",), ("b",))),
    ],
)
def test_parse_pspec(text, spec):
    assert parse_pspec(text) == spec


@pytest.mark.parametrize(
    "text", ["P(None, 'model'", "(None, [1.5])", "P(True)", "import os", "P(x=1)"]
)
def test_parse_pspec_errors(text):
    with pytest.raises(ParseError):
        parse_pspec(text)


def test_pspec_to_named_and_back():
    s = pspec_to_named(parse_pspec("P(None, ('model', 'batch'))"), BM)
    assert named_to_pspec(s) == "P(None, ('model', 'batch'))"
    assert print_gspmd(named_to_hlo(s)) == "{devices=[1,8]<=[2,4]T(1,0)}"
    # torch_xla style integer axis indices
    assert named_to_pspec(pspec_to_named(parse_pspec("(1, None)"), BM)) == "P('model', None)"
    with pytest.raises(MeshdiagError, match="'data'"):
        pspec_to_named(parse_pspec("P('data')"), BM)
    with pytest.raises(MeshdiagError, match="'model' more than once"):
        pspec_to_named(parse_pspec("P('model', 'model')"), BM)


def test_named_to_pspec_refuses_non_plain_shardings():
    m = {"m": Mesh((("a", 4), ("b", 2)))}
    for text in [
        '<@m, [{"a":(1)2}, {}]>',
        '<@m, [{"a", ?}, {}]>',
        '<@m, [{"a"}p1, {}]>',
        '<@m, [{"a"}, {}], unreduced={"b"}>',
    ]:
        assert named_to_pspec(parse_sdy_sharding(text, m)) is None
    assert named_to_pspec(parse_sdy_sharding('<@m, [{"a"}, {}], replicated={"b"}>', m)) == (
        "P('a', None)"
    )


@pytest.mark.parametrize(
    "text,axes,ids",
    [
        ("batch=2,model=4", (("batch", 2), ("model", 4)), None),
        (" batch = 2 ; model = 4 ", (("batch", 2), ("model", 4)), None),
        ("2x4", (("axis_0", 2), ("axis_1", 4)), None),
        ("8", (("axis_0", 8),), None),
        ("t3k", (("rows", 2), ("cols", 4)), None),
        ("galaxy", (("rows", 8), ("cols", 4)), None),
        ('<["x"=2, "y"=2], device_ids=[3, 2, 1, 0]>', (("x", 2), ("y", 2)), (3, 2, 1, 0)),
        ('#sdy.mesh<["x"=4]>', (("x", 4),), None),
        ('sdy.mesh @m = <["a"=2, "b"=4]> {stablehlo.mesh = {}}', (("a", 2), ("b", 4)), None),
        (
            "{'device_ids': [0, 1, 2, 3, 4, 5, 6, 7], 'mesh_shape': (2, 4), "
            "'axis_names': ('batch', 'model')}",
            (("batch", 2), ("model", 4)),
            None,
        ),
        (
            "{'device_ids': array([4, 5, 6, 7, 0, 1, 2, 3]), 'mesh_shape': (2, 4), "
            "'axis_names': ('b', 'm')}",
            (("b", 2), ("m", 4)),
            (4, 5, 6, 7, 0, 1, 2, 3),
        ),
        (
            '{"axes": {"batch": 2, "model": 4}, "device_ids": [1, 0, 2, 3, 4, 5, 6, 7]}',
            (("batch", 2), ("model", 4)),
            (1, 0, 2, 3, 4, 5, 6, 7),
        ),
    ],
)
def test_parse_mesh_forms(text, axes, ids):
    m = parse_mesh(text)
    assert m.axes == axes and m.device_ids == ids


def test_sdy_mesh_op_keeps_its_name():
    assert parse_mesh('sdy.mesh @mesh = <["_axis_0"=4, "_axis_1"=2]> loc(#loc)').name == "mesh"


def test_mesh_files(tmp_path):
    t = tmp_path / "mesh.toml"
    t.write_text("[mesh]\naxes = {batch = 2, model = 4}\ndevice_ids = [7,6,5,4,3,2,1,0]\n")
    m = parse_mesh(str(t))
    assert m.axes == (("batch", 2), ("model", 4)) and m.device_ids == (7, 6, 5, 4, 3, 2, 1, 0)
    top = tmp_path / "top.toml"
    top.write_text('axes = [["x", 2], ["y", 2]]\n')
    assert parse_mesh(str(top)).axes == (("x", 2), ("y", 2))
    j = tmp_path / "m.json"
    j.write_text(json.dumps({"mesh": {"axes": [["dp", 4]]}}))
    assert parse_mesh(str(j)).axes == (("dp", 4),)
    py = tmp_path / "pyproject.toml"
    py.write_text('[tool.meshdiag]\nmesh = "batch=2,model=4"\n')
    assert parse_mesh(str(py)).axes == (("batch", 2), ("model", 4))
    bad = tmp_path / "bad.toml"
    bad.write_text("axes = {x = 0}\n")
    with pytest.raises(MeshdiagError, match="positive"):
        parse_mesh(str(bad))
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(MeshdiagError, match="not valid JSON"):
        parse_mesh(str(broken))
    with pytest.raises(MeshdiagError, match="does not exist"):
        parse_mesh(str(tmp_path / "missing.toml"))


@pytest.mark.parametrize(
    "text,err,match",
    [
        ("0x4", MeshdiagError, "positive"),
        ("banana", ParseError, "expected a mesh like"),
        ("batch=2,model", ParseError, "column 9"),
        ("a=2,a=4", MeshdiagError, "more than once"),
        ("", MeshdiagError, "empty"),
        ("1000000x1000000", LimitError, "limit"),
        ("x".join(["2"] * 1_000), LimitError, "axes"),
        (",".join(f"a{i}=1" for i in range(100_000)), LimitError, "axes"),
        (
            "{'device_ids': [0, 0], 'mesh_shape': (2,), 'axis_names': ('x',)}",
            MeshdiagError,
            "permutation",
        ),
        (
            "{'device_ids': [0, 1], 'mesh_shape': (2, 2), 'axis_names': ('x', 'y')}",
            MeshdiagError,
            "2 entries",
        ),
        ("{'mesh_shape': __import__('os')}", ParseError, "Python literal"),
        ('<["a"=2, "a"=2]>', ParseError, "duplicate axis name"),
    ],
)
def test_parse_mesh_errors(text, err, match):
    with pytest.raises(err, match=match):
        parse_mesh(text)


def test_detect_notations():
    assert isinstance(parse_sharding("{devices=[2,4]<=[8]}"), HloSharding)
    s = parse_sharding('#sdy.sharding<@mesh, [{}, {"model"}]>', mesh=BM)
    assert isinstance(s, NamedSharding) and s.mesh == BM and s.mesh_ref == "mesh"
    named = parse_sharding('<@m, [{"batch"}, {}]>', meshes={"m": BM})
    assert named.mesh == BM
    inline = parse_sharding('<mesh<["x"=2]>, [{"x"}]>')
    assert print_gspmd(to_hlo(inline)) == "{devices=[2]<=[2]}"
    want = "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"
    for text in [
        '[{}, {"model"}]',
        "P(None, 'model')",
        "(None, 'model')",
        '[None, "model"]',
        '#sdy.sharding_per_value<[<@mesh, [{}, {"model"}]>]>',
    ]:
        assert print_gspmd(to_hlo(parse_sharding(text, mesh=BM))) == want, text
    v3 = parse_sharding("{mesh['batch'=2,'model'=4], [{}, {'model'}]}")
    assert print_gspmd(v3) == want and v3.named is not None
    for text in ["P(None, 'model')", '[{}, {"model"}]']:
        with pytest.raises(MeshdiagError, match="--mesh"):
            parse_sharding(text)
    with pytest.raises(MeshdiagError, match="@mesh"):
        to_hlo(parse_sharding('#sdy.sharding<@mesh, [{"model"}]>'))
    with pytest.raises(ParseError):
        parse_sharding("   ")
