"""`meshdiag reshard`: the plan against Shardy's reshard-to-collectives semantics, and the
collectives and bytes against what XLA's SPMD partitioner emits on CPU for the same pair
(JAX: an argument with sharding FROM, `with_sharding_constraint(x, TO)`, compiled HLO)."""

import json
import math
import re
import subprocess
import sys
from collections import defaultdict

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.sharding import Mesh as JaxMesh
from jax.sharding import NamedSharding as JaxNamed
from jax.sharding import PartitionSpec as P

from meshdiag.collective_bytes import dtype_bytes, wire_bytes
from meshdiag.errors import MeshdiagError
from meshdiag.formats.detect import parse_sharding
from meshdiag.formats.meshtext import parse_mesh
from meshdiag.formats.shardy import print_sdy_dims
from meshdiag.reshard import reshard
from meshdiag.reshard_plan import axes_size, plan_reshard
from meshdiag.sharding_diff import diff_shardings

# -- the compiled HLO, read here independently of meshdiag's own scanner ---------------------

_INSTR = re.compile(
    r"^\s*(?:ROOT\s+)?%\S+\s*=\s*(?P<shape>\([^=]*?\)|\S+)\s+"
    r"(?P<kind>all-gather|all-to-all|collective-permute|all-reduce|reduce-scatter)"
    r"(?:-start)?\("
)
_ARRAY = re.compile(r"(?P<dt>[a-z]+[0-9]*)\[(?P<dims>[0-9,]*)\]")


def _shape_bytes(text: str) -> int:
    total = 0
    for m in _ARRAY.finditer(text):
        dims = [int(x) for x in m["dims"].split(",") if x]
        total += math.prod(dims) * dtype_bytes(m["dt"])
    return total


def _group_size(line: str) -> int:
    """Devices per replica group, from the list, iota or mesh-axes form."""
    m = re.search(r"replica_groups=mesh\[([^\]]*)\](?:, device_ids=\S+)? \{([^}]*)\}", line)
    if m:
        sizes = dict((k, int(v)) for k, v in re.findall(r"'([^']+)'=(\d+)", m[1]))
        n = 1
        for ref in re.findall(r"'([^']+)'(?::\((\d+)\)(\d+))?", m[2]):
            n *= int(ref[2]) if ref[2] else sizes[ref[0]]
        return n
    m = re.search(r"replica_groups=\[([0-9,]+)\]<=", line)
    if m:
        return int(m[1].split(",")[-1])
    m = re.search(r"replica_groups=\{\{([0-9,]*)\}", line)
    assert m, line
    return len(m[1].split(","))


def xla_collectives(hlo: str, num_devices: int) -> dict[str, list[int]]:
    """Bytes each device receives, per collective kind, summed over the module."""
    per: dict[str, list[int]] = defaultdict(lambda: [0] * num_devices)
    for line in hlo.splitlines():
        m = _INSTR.match(line)
        if not m:
            continue
        kind, result = m["kind"], _shape_bytes(m["shape"])
        if kind == "collective-permute":
            pairs = re.search(r"source_target_pairs=\{(.*?)\}\}", line)[1]
            for s, t in re.findall(r"(\d+),(\d+)", pairs):
                per[kind][int(t)] += wire_bytes(kind, result, 2, self_pair=s == t)
            continue
        n = _group_size(line)
        each = wire_bytes(kind, result, n)  # result = gathered buffer / the all-to-all buffer
        per[kind] = [b + each for b in per[kind]]
    return dict(per)


def meshdiag_collectives(cost) -> dict[str, list[int]]:
    per: dict[str, list[int]] = {}
    for sc in cost.steps:
        if sc.step.kind == "all-slice":  # a local dynamic-slice in XLA: no collective
            continue
        old = per.get(sc.step.kind, [0] * len(sc.bytes_per_device))
        per[sc.step.kind] = [a + b for a, b in zip(old, sc.bytes_per_device, strict=True)]
    return per


def compile_reshard(mesh_text, shape, a, b, dtype=jnp.float32) -> str:
    mesh = parse_mesh(mesh_text)
    devs = np.array(jax.devices()[: mesh.size]).reshape(mesh.shape)
    jm = JaxMesh(devs, mesh.names)
    f = jax.jit(
        lambda x: jax.lax.with_sharding_constraint(x, JaxNamed(jm, b)),
        in_shardings=JaxNamed(jm, a),
        out_shardings=JaxNamed(jm, b),
    )
    return f.lower(jax.ShapeDtypeStruct(shape, dtype)).compile().as_text()


def _spec_text(spec: P) -> str:
    return "P(" + ", ".join(repr(e) for e in spec) + ")"


# (name, mesh, shape, FROM, TO, per-device bytes must match exactly)
CASES = [
    ("no-op", "x=2,y=4", (16, 32), P("x", "y"), P("x", "y"), True),
    ("gather one axis", "x=2,y=4", (16, 32), P("x", None), P(None, None), True),
    ("gather the minor axis", "x=2,y=4", (16, 32), P(("x", "y"), None), P("x", None), True),
    ("slice one axis", "x=2,y=4", (16, 32), P(None, None), P("y", None), True),
    ("all-to-all", "x=2,y=4", (16, 32), P("y", None), P(None, "y"), True),
    ("all-to-all onto a sharded dim", "x=2,y=4", (16, 32), P("y", "x"), P(None, ("x", "y")), True),
    ("permute device order", "x=2,y=4", (32,), P(("x", "y")), P(("y", "x")), True),
    ("permute 2-D", "x=2,y=4", (16, 32), P(("x", "y"), None), P(("y", "x"), None), True),
    ("swap equal axes", "x=2,y=2,z=2", (16, 32), P("x", "y"), P("y", "x"), True),
    # different sizes: a cut axis, collective-permute + all-to-all (XLA: the same two kinds)
    ("swap unequal axes", "x=2,y=4", (16, 32), P("x", "y"), P("y", "x"), False),
    # replicated devices leave the permute's targets open: XLA moves more than it needs
    ("replace an axis", "x=4,y=2", (16, 32), P("x", None), P("y", None), False),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", ["f32", "f16", "s8"])  # (XLA:CPU widens bf16 collectives)
def test_collectives_and_bytes_match_xla(case, dtype):
    _, mesh_text, shape, a, b, exact = case
    jdt = {"f32": jnp.float32, "f16": jnp.float16, "s8": jnp.int8}[dtype]
    hlo = compile_reshard(mesh_text, shape, a, b, jdt)
    mesh = parse_mesh(mesh_text)
    cost = reshard(_spec_text(a), _spec_text(b), shape=shape, mesh=mesh, dtype=dtype)
    ours = meshdiag_collectives(cost)
    theirs = xla_collectives(hlo, mesh.size)
    assert sorted(ours) == sorted(theirs), (ours, theirs, hlo)
    for kind in ours:
        assert max(ours[kind]) == max(theirs[kind]), (kind, ours, theirs)
        if exact:
            assert ours[kind] == theirs[kind], (kind, ours, theirs)
        else:
            assert sum(ours[kind]) <= sum(theirs[kind]), (kind, ours, theirs)


def test_one_step_kinds_and_sizes():
    """The five basic moves, each one collective of the expected kind and group size."""
    mesh = parse_mesh("x=2,y=4")
    kinds = {}
    for name, _, shape, a, b, _ in CASES[:8]:
        cost = reshard(_spec_text(a), _spec_text(b), shape=shape, mesh=mesh)
        kinds[name] = [(s.step.kind, s.group_size) for s in cost.steps]
    assert kinds["no-op"] == []
    assert kinds["gather one axis"] == [("all-gather", 2)]
    assert kinds["slice one axis"] == [("all-slice", 1)]
    assert kinds["all-to-all"] == [("all-to-all", 4)]
    assert kinds["permute device order"] == [("collective-permute", 1)]


def test_gather_bytes_and_groups_by_hand():
    """f32[16,32] gathered over x=2: each device receives the half it lacks, 1024 bytes, from
    the device across x (groups {0,4}, {1,5}, ...)."""
    cost = reshard("P('x', None)", "P(None, None)", shape=(16, 32), mesh=parse_mesh("x=2,y=4"))
    (step,) = cost.steps
    assert step.groups == ((0, 4), (1, 5), (2, 6), (3, 7))
    assert step.buffer_shape == (16, 32)
    assert cost.bytes_per_device == (1024,) * 8
    assert cost.devices[0].holders == (4, 5, 6, 7)
    assert cost.devices[0].action == "receives"


def test_permute_pairs_match_xla():
    a, b = P(("x", "y")), P(("y", "x"))
    hlo = compile_reshard("x=2,y=4", (32,), a, b)
    pairs = re.search(r"source_target_pairs=\{(.*?)\}\}", hlo)[1]
    xla = {(int(s), int(t)) for s, t in re.findall(r"(\d+),(\d+)", pairs) if s != t}
    cost = reshard(_spec_text(a), _spec_text(b), shape=(32,), mesh=parse_mesh("x=2,y=4"))
    assert set(cost.steps[0].pairs) == xla


# -- Shardy's reshard-to-collectives decompositions ------------------------------------------


def _plan(mesh_text, a, b, shape=None):
    mesh = parse_mesh(mesh_text)
    p = plan_reshard(parse_sharding(a, mesh=mesh), parse_sharding(b, mesh=mesh), mesh, shape)
    return [(s.kind, print_sdy_dims(p.named(s.after))) for s in p.steps], p


@pytest.mark.parametrize(
    "a, b, expected",
    [
        # shardy transforms/export/test/reshard_to_collectives.mlir, mesh3d x=2,y=2,z=2
        ('[{"x","y","z"}, {}]', '[{"x"}, {}]', [("all-gather", '[{"x"}, {}]')]),
        ("[{}, {}]", '[{"x"}, {"y","z"}]', [("all-slice", '[{"x"}, {"y", "z"}]')]),
        ('[{"x"}, {"y"}, {}]', '[{}, {"y"}, {"x"}]', [("all-to-all", '[{}, {"y"}, {"x"}]')]),
        (
            '[{"y"}, {"x","z"}, {}]',
            '[{}, {}, {"x","y","z"}]',
            [
                ("collective-permute", '[{"x"}, {"y", "z"}, {}]'),
                ("all-to-all", '[{}, {"y", "z"}, {"x"}]'),
                ("all-to-all", '[{}, {}, {"x", "y", "z"}]'),
            ],
        ),
        # the axes an all-to-all will carry are sliced at its source first (smaller buffer)
        (
            '[{"x"}, {}]',
            '[{}, {"x","y"}]',
            [("all-slice", '[{"x", "y"}, {}]'), ("all-to-all", '[{}, {"x", "y"}]')],
        ),
    ],
)
def test_plan_follows_shardy(a, b, expected):
    steps, plan = _plan("x=2,y=2,z=2", a, b)
    assert steps == expected
    assert not plan.fallback


def test_plan_cuts_an_axis_to_swap_unequal_axes():
    steps, plan = _plan("x=2,y=4", '[{"x"}, {"y"}]', '[{"y"}, {"x"}]')
    assert steps == [
        ("collective-permute", '[{"y":(1)2}, {"x", "y":(2)2}]'),
        ("all-to-all", '[{"y"}, {"x"}]'),
    ]


def test_every_plan_ends_at_the_target():
    """Random pairs of plain specs on a 3-axis mesh: the last step's sharding is the target,
    every step keeps each axis once, and every all-to-all / permute keeps the buffer size."""
    import itertools
    import random

    rng = random.Random(7)
    mesh = parse_mesh("a=2,b=4,c=2")
    names = ["a", "b", "c"]
    specs = []
    for assign in itertools.product(range(4), repeat=3):  # axis -> dim 0..2, or 3 = unused
        dims = [[n for n, d in zip(names, assign, strict=True) if d == k] for k in range(3)]
        for perm in itertools.product(*[list(itertools.permutations(d)) for d in dims]):
            specs.append(
                "[" + ", ".join("{" + ", ".join(f'"{x}"' for x in d) + "}" for d in perm) + "]"
            )
    for a, b in (rng.sample(specs, 2) for _ in range(300)):
        p = plan_reshard(
            parse_sharding(a, mesh=mesh), parse_sharding(b, mesh=mesh), mesh, (16, 16, 16)
        )
        state = p.source
        for s in p.steps:
            assert print_sdy_dims(p.named(s.before)) == print_sdy_dims(p.named(state))
            state = s.after
            flat = [x for d in state for x in d]
            assert len(flat) == len(set(flat))
            before = [axes_size(mesh, d) for d in s.before]
            after = [axes_size(mesh, d) for d in s.after]
            if s.kind == "collective-permute":
                assert before == after
            elif s.kind == "all-to-all":
                assert math.prod(before) == math.prod(after)
            elif s.kind == "all-gather":
                assert math.prod(before) > math.prod(after)
            else:
                assert math.prod(before) < math.prod(after)
        assert print_sdy_dims(p.named(state)) == print_sdy_dims(p.named(p.target)), (a, b)


# -- the command -----------------------------------------------------------------------------


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "meshdiag", *args], capture_output=True, text=True, timeout=120
    )


def test_cli_text_and_json():
    out = run_cli(
        "reshard", "P('y', None)", "P(None, 'y')", "--shape", "16,32", "--mesh", "x=2,y=4"
    )
    assert out.returncode == 0
    assert "all-to-all" in out.stdout and "y: dim 0->1" in out.stdout
    out = run_cli(
        "reshard",
        "P('y', None)",
        "P(None, 'y')",
        "--shape",
        "16,32",
        "--mesh",
        "x=2,y=4",
        "--dtype",
        "bf16",
        "--format",
        "json",
    )
    doc = json.loads(out.stdout)
    assert doc["version"] == 1 and doc["dtype"] == "bf16"
    assert [s["kind"] for s in doc["steps"]] == ["all-to-all"]
    assert doc["steps"][0]["bytes_per_device"] == [192] * 8  # 3/4 of bf16[4,32]
    assert doc["max_bytes"] == 192 and len(doc["devices"]) == 8


@pytest.mark.parametrize(
    "args, message",
    [
        (["{devices=[2]<=[2]}", "{replicated}", "--shape", "8"], "pass --mesh"),
        (
            ["P('x')", "P('y')", "--shape", "8", "--mesh", "x=2,y=4", "--dtype", "f33"],
            "unknown dtype",
        ),
        (["P('x')", "P('q')", "--shape", "8", "--mesh", "x=2,y=4"], "'q'"),
        (["{devices=[2]0,1}", "P('x')", "--shape", "8", "--mesh", "x=2,y=4"], "spans 2 devices"),
    ],
)
def test_cli_errors_are_one_line(args, message):
    out = run_cli("reshard", *args)
    assert out.returncode == 2
    assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1


# -- hostile input: a MeshdiagError (one line, exit 2), never a crash --------------------------

_PIECES = st.sampled_from(
    [
        "P(",
        ")",
        "'x'",
        "'y'",
        "None",
        ", ",
        "(",
        "{",
        "}",
        "[",
        "]",
        '"x"',
        '"y"',
        "devices=",
        "<=",
        "[2,4]",
        "[8]",
        "T(1,0)",
        " last_tile_dim_replicate",
        "replicated",
        "maximal device=3",
        "#sdy.sharding<",
        "@mesh",
        "mesh<[",
        '"x"=2, "y"=4',
        "]>",
        ">",
        ":(1)2",
        "?",
        "unreduced",
        "0,1,2,3",
        "{}",
    ]
)
_TEXT = st.lists(_PIECES, min_size=1, max_size=10).map("".join)


@settings(max_examples=300, deadline=None)
@given(_TEXT, _TEXT, st.lists(st.integers(0, 9), min_size=0, max_size=3))
def test_hostile_shardings_raise_only_meshdiag_errors(a, b, shape):
    mesh = parse_mesh("x=2,y=4")
    for fn in (
        lambda: reshard(a, b, shape=tuple(shape), mesh=mesh),
        lambda: diff_shardings(a, b, mesh=mesh, shape=tuple(shape) or None),
    ):
        try:
            fn()
        except MeshdiagError:
            pass
