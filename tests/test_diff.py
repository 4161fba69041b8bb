"""`meshdiag diff`: shardings in different notations compared by per-device slices, checked
against JAX's `devices_indices_map`; dumps compared value by value; exit codes like `diff`."""

import json
import random
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jax.sharding import Mesh as JaxMesh
from jax.sharding import NamedSharding as JaxNamed
from jax.sharding import PartitionSpec as P

from meshdiag.inputs.mesh_input import parse_mesh
from meshdiag.layouts.diff import PERMUTED, SAME, diff_shardings

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "fixtures" / "seed"
JAXF = ROOT / "fixtures" / "jax"


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "meshdiag", *args], capture_output=True, text=True, timeout=120
    )


def jax_verdict(a, b, shape) -> tuple[str, set[int]]:
    """same / permuted / different from JAX's own per-device indices."""

    def norm(ns):
        out = {}
        for dev, idx in ns.devices_indices_map(shape).items():
            out[dev.id] = tuple(s.indices(n)[:2] for s, n in zip(idx, shape, strict=True))
        return out

    ma, mb = norm(a), norm(b)
    differ = {d for d in ma if ma[d] != mb[d]}
    if not differ:
        return "same", differ
    if sorted(ma.values()) == sorted(mb.values()):
        return "permuted", differ
    return "different", differ


def _spec_text(spec) -> str:
    return "P(" + ", ".join(repr(e) for e in spec) + ")"


def _sdy_text(spec, names, sizes, ids) -> str:
    axes = ", ".join(f'"{n}"={s}' for n, s in zip(names, sizes, strict=True))
    dims = []
    for e in spec:
        e = () if e is None else (e,) if isinstance(e, str) else e
        dims.append("{" + ", ".join(f'"{x}"' for x in e) + "}")
    return f"#sdy.sharding<mesh<[{axes}], device_ids=[{', '.join(map(str, ids))}]>, [{', '.join(dims)}]>"


def _gspmd_text(ns, ids) -> str:
    """JAX's GSPMD sharding of `ns` with its logical ids (positions in the mesh's device list)
    turned into device ids: the V1 form when the mesh is not in iota order."""
    hs = ns._to_xla_hlo_sharding(len(ns.spec))
    if ids == sorted(ids) or hs.is_replicated():
        return str(hs)
    dims = ",".join(map(str, hs.tile_assignment_dimensions()))
    devices = ",".join(str(ids[p]) for p in hs.tile_assignment_devices())
    last = " last_tile_dim_replicate" if hs.replicate_on_last_tile_dim() else ""
    return f"{{devices=[{dims}]{devices}{last}}}"


def _random_spec(rng, names, rank):
    free = list(names)
    rng.shuffle(free)
    spec = []
    for _ in range(rank):
        k = rng.randint(0, min(2, len(free)))
        take, free = free[:k], free[k:]
        spec.append(None if not take else take[0] if k == 1 else tuple(take))
    return P(*spec)


def test_verdicts_match_jax_across_notations():
    """A as a PartitionSpec on the iota mesh; B as JAX's own GSPMD string or as Shardy with
    an inline permuted mesh. meshdiag's verdict and differing devices equal JAX's."""
    rng = random.Random(11)
    devs = jax.devices()[:8]
    names, sizes = ("x", "y"), (2, 4)
    mesh_a = JaxMesh(np.array(devs).reshape(sizes), names)
    seen = {"same": 0, "permuted": 0, "different": 0}
    for i in range(240):
        spec_a = _random_spec(rng, names, 2)
        spec_b = _random_spec(rng, names, 2) if i % 3 else spec_a
        ids = list(range(8))
        if i % 2:
            rng.shuffle(ids)
        mesh_b = JaxMesh(np.array([devs[j] for j in ids]).reshape(sizes), names)
        a = JaxNamed(mesh_a, spec_a)
        b = JaxNamed(mesh_b, spec_b)
        shape = (8, 16)
        want, differ = jax_verdict(a, b, shape)
        seen[want] += 1
        text_b = _gspmd_text(b, ids) if i % 4 < 2 else _sdy_text(spec_b, names, sizes, ids)
        res = diff_shardings(_spec_text(spec_a), text_b, mesh=parse_mesh("x=2,y=4"), shape=shape)
        assert res.diff.verdict == want, (spec_a, text_b)
        assert set(res.diff.differing) == differ, (spec_a, text_b)
        # without --shape: compared per tile, the same verdict for these divisible shapes
        tiles = diff_shardings(_spec_text(spec_a), text_b, mesh=parse_mesh("x=2,y=4"))
        assert tiles.diff.verdict == want, (spec_a, text_b)
    assert min(seen.values()) >= 20, seen  # every verdict is exercised


def test_named_cases():
    mesh = parse_mesh("batch=2,model=4")
    gspmd = "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"
    assert diff_shardings("P(None, 'model')", gspmd, mesh=mesh).diff.verdict == SAME
    sdy = '#sdy.sharding<mesh<["batch"=2, "model"=4]>, [{}, {"model"}]>'
    assert diff_shardings(sdy, gspmd).diff.verdict == SAME
    v1 = "{devices=[1,4,2]0,4,1,5,2,6,3,7 last_tile_dim_replicate}"
    assert diff_shardings(v1, gspmd).diff.verdict == SAME
    seed = "{devices=[1,4,2]<=[8] last_tile_dim_replicate}"
    res = diff_shardings("P(None, 'model')", seed, mesh=mesh, shape=(32, 32))
    assert res.diff.verdict == PERMUTED
    assert res.diff.differing == (1, 2, 3, 4, 5, 6)
    # unreduced and replicated have the same slices but not the same data
    res = diff_shardings("{unreduced}", "{replicated}", shape=(4,))
    assert res.diff.verdict == "different" and res.diff.note


def test_cli_sharding_exit_codes_and_json():
    same = run_cli(
        "diff",
        "P(None, 'model')",
        "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}",
        "--mesh",
        "batch=2,model=4",
    )
    assert same.returncode == 0, same.stderr
    assert "same layout" in same.stdout
    perm = run_cli(
        "diff",
        "P(None, 'model')",
        "{devices=[1,4,2]<=[8] last_tile_dim_replicate}",
        "--mesh",
        "batch=2,model=4",
        "--shape",
        "32,32",
        "--format",
        "json",
    )
    assert perm.returncode == 1
    doc = json.loads(perm.stdout)
    assert doc["version"] == 1 and doc["verdict"] == "permuted"
    assert doc["differing_devices"] == [1, 2, 3, 4, 5, 6]
    assert doc["devices"][1]["b"] == [[0, 32], [0, 8]]
    assert doc["devices"][1]["b_slice_held_under_a_by"] == [0, 4]


@pytest.mark.parametrize(
    "args, message",
    [
        (["P('x')", "{replicated}"], "--mesh"),
        (["{devices=[2,2", "{replicated}"], "column"),
        (["{devices=[2]<=[2]}", "{devices=[2,2]<=[4]}"], "different ranks"),
        (["/nonexistent/a.mlir", str(SEED / "fixed_mesh.mlir")], "no such file"),
        (["{replicated}", "{replicated}", "--format", "yaml"], "format"),
    ],
)
def test_cli_errors_exit_2(args, message):
    out = run_cli("diff", *args)
    assert out.returncode == 2, out.stdout
    assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1


# -- dumps -----------------------------------------------------------------------------------


def test_dumps_in_two_notations_are_the_same():
    out = run_cli("diff", str(JAXF / "mlp_gspmd.mlir"), str(JAXF / "mlp_shardy.mlir"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "3 same" in out.stdout


def test_seed_dump_against_the_fixed_one():
    out = run_cli(
        "diff", str(SEED / "distorted_mesh.mlir"), str(SEED / "fixed_mesh.mlir"), "--format", "json"
    )
    assert out.returncode == 1
    doc = json.loads(out.stdout)
    status = {(v["module"], v["name"]): v["status"] for v in doc["values"]}
    # both sections of the pass dump are paired with the one module of the fixed dump
    assert sorted(status.values()) == ["permuted", "permuted", "same", "same"]
    arg0 = [v for v in doc["values"] if v["name"] == "%arg0"]
    assert all(v["differing_devices"] == [1, 2, 3, 4, 5, 6] for v in arg0)
    assert {v["b"]["sharding"] for v in arg0} == {'#sdy.sharding<@mesh, [{}, {"model"}]>'}


def test_directories_and_values_on_one_side(tmp_path):
    same = run_cli(
        "diff",
        str(ROOT / "fixtures" / "xla_dump" / "mlp2"),
        str(ROOT / "fixtures" / "xla_dump" / "mlp2"),
    )
    assert same.returncode == 0, same.stderr
    a = tmp_path / "a.mlir"
    b = tmp_path / "b.mlir"
    head = 'module @m {\n  sdy.mesh @mesh = <["x"=2, "y"=2]>\n'
    a.write_text(
        head
        + '  func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, '
        "%arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) -> tensor<8x8xf32> {\n"
        "    return %arg0 : tensor<8x8xf32>\n  }\n}\n"
    )
    b.write_text(
        head
        + '  func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", "y"}, {}]>}) '
        "-> tensor<8x8xf32> {\n    return %arg0 : tensor<8x8xf32>\n  }\n}\n"
    )
    out = run_cli("diff", str(a), str(b))
    assert out.returncode == 1
    assert "%arg0  different" in out.stdout and "%arg1  only in A" in out.stdout
    assert "2 values: 0 same, 0 permuted, 1 different, 1 only-a" in out.stdout


DUMP_PAIRS = [
    (SEED / "distorted_mesh.mlir", SEED / "fixed_mesh.mlir"),
    (SEED / "distorted_mesh_gspmd.mlir", SEED / "fixed_mesh_gspmd.mlir"),
    (JAXF / "mlp_gspmd.mlir", JAXF / "mlp_shardy.mlir"),
    (JAXF / "mesh3d_gspmd.mlir", JAXF / "mesh3d_shardy.mlir"),
    (JAXF / "mlp_compiled.hlo.txt", JAXF / "mlp2_compiled.hlo.txt"),
    (ROOT / "fixtures" / "xla_dump" / "mlp2", ROOT / "fixtures" / "xla_dump" / "mlp2"),
    (ROOT / "fixtures" / "xla_dump" / "mlp2", ROOT / "fixtures" / "xla_dump" / "loop"),
]


@pytest.mark.parametrize("a, b", DUMP_PAIRS)
def test_a_dump_diff_says_what_comparing_every_layout_says(a, b, monkeypatch):
    """Equal shardings answered without a second layout, pairs compared once per run,
    devices dropped from verdicts of all the same: the text and JSON of comparing every
    value's two layouts in full."""
    from meshdiag.layouts import diff as layout_diff
    from meshdiag.pipeline import dump_diff
    from meshdiag.report import diff_report
    from meshdiag.report.diff_report import dumps_json, dumps_text

    monkeypatch.setattr(diff_report, "JSON_BATCH", 2)  # the values in several batches

    def shown(diffs):
        diffs = list(diffs)
        return (
            list(dumps_text(diffs, str(a), str(b), details=True)),
            "".join(dumps_json(diffs, str(a), str(b))),
        )

    fast = shown(dump_diff.diff_dumps(str(a), str(b)))
    # the pieces make one document, the one `json.dumps` gives
    doc = json.loads(fast[1])
    assert fast[1] == json.dumps(doc) and doc["values"]

    def full(x, y, shape, split, n, memos):
        from meshdiag.layouts.engine import layout

        return layout_diff.compare_layouts(
            layout(x, shape, split=split, num_devices=n),
            layout(y, shape, split=split, num_devices=n),
        )

    monkeypatch.setattr(dump_diff, "_layout_diff", full)
    assert shown(dump_diff.diff_dumps(str(a), str(b))) == fast


# -- pairing as the dumps stream by ----------------------------------------------------------

AXES = ("x", "y")


def _module_text(name: str, section: str | None, funcs: list[list[int]]) -> str:
    """A Shardy module `@name` (after a pass-dump header when `section`): one function per
    entry of `funcs`, each with arguments sharded along AXES[s] (or replicated, s = 2) in
    turn; functions repeat `%arg0`, `%arg1`, ... (names repeat in the module)."""
    head = (
        f"// -----// IR Dump After {section} ({section.lower()}) "
        f"('builtin.module' operation: @{name}) //----- //"
        if section
        else "// -----"
    )
    lines = [head, f"module @{name} {{", '  sdy.mesh @mesh = <["x"=2, "y"=2]>']
    for i, specs in enumerate(funcs):
        args = ", ".join(
            f"%arg{j}: tensor<8x8xf32> {{sdy.sharding = #sdy.sharding<@mesh, "
            f"[{{{chr(34) + AXES[s] + chr(34) if s < 2 else ''}}}, {{}}]>}}"
            for j, s in enumerate(specs)
        )
        lines += [
            f"  func.func @f{i}({args}) -> tensor<8x8xf32> {{",
            "    %0 = stablehlo.constant dense<0.0> : tensor<8x8xf32>",
            "    return %0 : tensor<8x8xf32>",
            "  }",
        ]
    lines += ["}", ""]
    return "\n".join(lines)


def _keyed_values(path: str) -> dict:
    """Every value of a dump read whole, by its key (file, module, the module's place among
    those of its name and section, name, occurrence), as `diff` keys it."""
    import os

    from meshdiag.ir.scan import scan_paths
    from meshdiag.pipeline.dump_diff import Key, _module_key

    out = {}
    for rep in scan_paths([path]):
        fkey = os.path.relpath(rep.path, path) if os.path.isdir(path) else ""
        modules: dict = {}
        for m in rep.modules:
            mk = _module_key(m)
            mo = modules[mk] = modules.get(mk, -1) + 1
            names: dict = {}
            for v in m.values:
                k = names[v.name] = names.get(v.name, -1) + 1
                out[Key(fkey, mk, mo, v.name, k)] = v
    return out


def _whole_pairing(path_a: str, path_b: str) -> list[tuple]:
    """The reference: both dumps read whole, their values paired by key at once, as `diff`
    did before it streamed (then by `loose_pairs`, the rule for what has no exact partner):
    (key, A's line, B's line or None) per value of A, (key, None, B's line) per value only
    B has."""
    from meshdiag.pipeline.dump_diff import loose_pairs

    left, right = _keyed_values(path_a), _keyed_values(path_b)
    pairs = {k: k if k in right else None for k in left}
    matched = {k for k in pairs.values() if k is not None}
    rest_a = [k for k in left if pairs[k] is None]
    rest_b = [k for k in right if k not in matched]
    for i, j in loose_pairs(rest_a, rest_b).items():
        pairs[rest_a[i]] = rest_b[j]
        matched.add(rest_b[j])
    out = [(k, v.line, right[pairs[k]].line if pairs[k] else None) for k, v in left.items()]
    out += [(k, None, v.line) for k, v in right.items() if k not in matched]
    return out


def test_values_with_no_exact_partner_pair_by_module_name_alone_where_one_side_has_it_once():
    """The loose rule: a pass dump's sections against a plain dump's one module (every A
    value of a loose key pairs with B's only one); A holding the key once pairs with B's
    first; both holding it more than once pair nothing; other names never pair."""
    from meshdiag.pipeline.dump_diff import Key, loose_pairs

    def k(module, name="%arg0", occurrence=0, module_k=0):
        return Key("", module, module_k, name, occurrence)

    sections = [
        k("m [IR Dump After A]"),
        k("m [IR Dump After B]"),
        k("m [IR Dump After A]", module_k=1),
    ]
    assert loose_pairs(sections, [k("m")]) == {0: 0, 1: 0, 2: 0}
    assert loose_pairs([k("m [X]")], [k("m [Y]"), k("m [Z]")]) == {0: 0}
    assert loose_pairs([k("m [X]"), k("m [W]")], [k("m [Y]"), k("m [Z]")]) == {}
    assert loose_pairs([k("m [X]")], [k("n"), k("m", "%arg1"), k("m", occurrence=1)]) == {}


_modules = st.lists(
    st.tuples(
        st.sampled_from(["m", "n"]),
        st.sampled_from([None, "Canonicalizer", "Inliner"]),
        st.lists(st.lists(st.integers(0, 2), min_size=1, max_size=3), min_size=1, max_size=2),
    ),
    min_size=1,
    max_size=6,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(a=_modules, b=_modules, shuffle=st.randoms(use_true_random=False))
def test_streamed_pairing_is_the_pairing_of_whole_dumps(tmp_path, a, b, shuffle):
    """Modules met in any order, missing on one side, repeated sections, values only one
    side has, plain modules against pass-dump sections: each value is paired with what
    pairing the whole dumps at once pairs it with."""
    from meshdiag.pipeline.dump_diff import ONLY_A, ONLY_B, diff_dumps

    b = b + [m for m in a if shuffle.random() < 0.5]  # some modules of A again, reordered
    shuffle.shuffle(b)
    fa, fb = tmp_path / "a.mlir", tmp_path / "b.mlir"
    fa.write_text("".join(_module_text(*m) for m in a))
    fb.write_text("".join(_module_text(*m) for m in b))
    got = []
    for d in diff_dumps(str(fa), str(fb)):
        assert (d.a is None) == (d.status == ONLY_B) and (d.b is None) == (d.status == ONLY_A)
        got.append((d.key, d.a.line if d.a else None, d.b.line if d.b else None))
    want = _whole_pairing(str(fa), str(fb))
    assert sorted(got, key=repr) == sorted(want, key=repr)
    # the order: the exact pairs, then the rest of A's in A's order (by line: one file),
    # then what only B has, in B's order
    keys_b = _keyed_values(str(fb))  # (B read once, not again for every pair)
    exact = {(k, la) for k, la, lb in want if la is not None and lb is not None and k in keys_b}
    kinds = [0 if (k, la) in exact else 1 if la is not None else 2 for k, la, _ in got]
    assert kinds == sorted(kinds)
    rest_a = [la for (k, la, _), kind in zip(got, kinds, strict=True) if kind == 1]
    only_b = [lb for (k, _, lb), kind in zip(got, kinds, strict=True) if kind == 2]
    assert rest_a == sorted(rest_a) and only_b == sorted(only_b)


def test_a_section_printed_twice_is_two_modules(tmp_path):
    """`mlir-print-ir-after-all` prints a pass's section each time the pass runs: each
    occurrence is compared with the same occurrence on the other side (the second one
    used to replace the first, which was then not compared at all)."""
    a, b = tmp_path / "a.mlir", tmp_path / "b.mlir"
    a.write_text(
        _module_text("m", "Canonicalizer", [[0]]) + _module_text("m", "Canonicalizer", [[1]])
    )
    b.write_text(
        _module_text("m", "Canonicalizer", [[0]]) + _module_text("m", "Canonicalizer", [[0]])
    )
    out = run_cli("diff", str(a), str(b))
    assert out.returncode == 1, out.stderr
    assert "module m [IR Dump After Canonicalizer (canonicalizer)] (#2)" in out.stdout
    assert "2 values: 1 same, 1 permuted, 0 different" in out.stdout  # x and y: 2 devices
    doc = json.loads(run_cli("diff", str(a), str(b), "--format", "json").stdout)
    assert [(v["module_occurrence"], v["status"]) for v in doc["values"]] == [
        (0, "same"),
        (1, "permuted"),
    ]


def test_a_file_with_nothing_to_read_writes_no_output(tmp_path):
    """The error comes before any of the output (which is written as values are compared)."""
    empty = tmp_path / "empty.mlir"
    empty.write_bytes(b"\0binary")
    for fmt in ("text", "json"):
        out = run_cli("diff", str(SEED / "fixed_mesh.mlir"), str(empty), "--format", fmt)
        assert out.returncode == 2 and out.stdout == "", out.stdout
        assert len(out.stderr.strip().splitlines()) == 1


def test_directories_pair_files_by_their_path_below_them(tmp_path):
    """A file of A is compared with the file at the same path below B; files one side has
    alone are all only-a or only-b: what pairing the whole directories at once gives."""
    from meshdiag.pipeline.dump_diff import diff_dumps

    a, b = tmp_path / "a", tmp_path / "b"
    for d, files in (
        (a, {"one.mlir": [("m", None, [[0, 1]])], "sub/two.mlir": [("m", "Inliner", [[1]])]}),
        (b, {"sub/two.mlir": [("m", None, [[0], [2]])], "three.mlir": [("n", None, [[2]])]}),
    ):
        for name, modules in files.items():
            (d / name).parent.mkdir(parents=True, exist_ok=True)
            (d / name).write_text("".join(_module_text(*m) for m in modules))
    got = [
        (x.key, x.a.line if x.a else None, x.b.line if x.b else None)
        for x in diff_dumps(str(a), str(b))
    ]
    assert sorted(got, key=repr) == sorted(_whole_pairing(str(a), str(b)), key=repr)
    assert {k.file for k, la, lb in got if lb is None} == {"one.mlir"}
    assert {k.file for k, la, lb in got if la is None} == {"three.mlir", "sub/two.mlir"}


def test_a_module_stream_gives_the_modules_a_scan_gives(tmp_path):
    """`ModuleStream` (what `diff` reads each dump with) gives the modules `scan_path` gives,
    from a file read in many blocks, and the report once they are out; closed early, it
    gives no more."""
    from meshdiag.ir.module_stream import ModuleStream
    from meshdiag.ir.scan import BLOCK, scan_path

    big = tmp_path / "big.mlir"
    one = _module_text("m", "Canonicalizer", [[0, 1, 2], [2, 1]])
    big.write_text(one * (3 * BLOCK // len(one)))
    whole = scan_path(str(big))
    with ModuleStream(str(big)) as stream:
        got = list(stream)
        assert stream.report is not None and stream.report.modules == []
        assert stream.report.findings == whole.findings
    assert got == whole.modules and len(got) > 100
    stream = ModuleStream(str(big))
    assert next(stream) == whole.modules[0]
    stream.close()
    assert list(stream) == [] and stream.report is None


def test_what_could_not_be_read_is_said_and_exits_2(tmp_path):
    """A line too long to read (or any other MD001 error of either dump) leaves its values
    out of the comparison: the report lists it after the counts, JSON under `problems`,
    stderr says so in one line and the exit code is 2 (diff's trouble), never 0 for
    values that were not compared. It used to say "0 values" and exit 0."""
    import os

    from meshdiag.ir.scan import BLOCK

    # a signature longer than a read (lines held across reads are bounded by the limit)
    long_module = _module_text("m", None, [[0] * (BLOCK // 40)])
    f = tmp_path / "a.mlir"
    f.write_text(long_module + _module_text("n", None, [[1]]))
    env = {**os.environ, "MESHDIAG_MAX_ANNOTATION_CHARS": "1000"}  # lines of 4,000 at most

    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "meshdiag", "diff", str(f), str(f), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )

    out = run()
    assert out.returncode == 2, out.stderr
    assert "1 values: 1 same" in out.stdout  # module n's value, compared
    assert "2 part(s) of the dumps could not be read" in out.stdout
    assert f"  A {f}:4:1: line 4 is longer than" in out.stdout
    assert len(out.stderr.strip().splitlines()) == 1 and "not compared" in out.stderr
    out = run("--format", "json")
    doc = json.loads(out.stdout)
    assert out.returncode == 2 and doc["problem_count"] == 2
    assert [(p["side"], p["line"]) for p in doc["problems"]] == [("a", 4), ("b", 4)]
    assert [v["status"] for v in doc["values"]] == ["same"]


@st.composite
def _equal_pair_case(draw):
    from meshdiag.model.sharding import HloSharding
    from meshdiag.model.tiles import TileAssignment

    rank = draw(st.integers(0, 3))
    dims = [draw(st.sampled_from([1, 2, 3, 4])) for _ in range(rank)]
    rep = draw(st.booleans()) or not dims
    tile_dims = (*dims, draw(st.sampled_from([2, 4]))) if rep else tuple(dims)
    h = HloSharding.tiled(TileAssignment.iota(tile_dims), replicate_on_last=rep)
    if draw(st.integers(0, 3)) == 0:
        h = draw(st.sampled_from([HloSharding.replicated(), HloSharding.maximal(1)]))
    shape_rank = rank if draw(st.integers(0, 4)) else draw(st.integers(0, 3))
    shape = tuple(draw(st.sampled_from([0, 1, 2, 3, 4, 6, 8, 12])) for _ in range(shape_rank))
    n = draw(st.sampled_from([1, 2, 4, 8, 16, 2000]))
    return h, shape, draw(st.sampled_from(["xla", "chunk", "even"])), n


@settings(max_examples=300, deadline=None)
@given(_equal_pair_case())
def test_equal_shardings_answer_as_their_two_layouts_compared(case):
    """A pair of equal shardings is answered without a layout where the tiling names it
    (`whole_spec`), else from one layout: the verdict, shape, device count and note of
    comparing their two layouts, or the error laying either out raises."""
    from meshdiag.errors import MeshdiagError
    from meshdiag.layouts.diff import compare_layouts
    from meshdiag.layouts.engine import layout
    from meshdiag.memo import RunMemos
    from meshdiag.pipeline.dump_diff import _layout_diff

    h, shape, split, n = case
    try:
        want = compare_layouts(*(layout(h, shape, split=split, num_devices=n) for _ in "ab"))
    except MeshdiagError as e:
        with pytest.raises(MeshdiagError) as got_error:
            _layout_diff(h, h, shape, split, n, RunMemos())
        assert str(got_error.value) == str(e)
        return
    got = _layout_diff(h, h, shape, split, n, RunMemos())
    assert (got.verdict, got.shape, got.num_devices, got.note) == (
        want.verdict,
        want.shape,
        want.num_devices,
        want.note,
    )
    assert got.differing == want.differing == ()


@given(
    root=st.sampled_from(["d", "d/", "./d", "a/../d", "/tmp/d", "/tmp/d/"]),
    parts=st.lists(st.sampled_from(["x", ".x", "..x", "x.", ".", "..", "y.txt"]), min_size=1),
)
def test_a_file_below_its_directory_is_named_as_relpath_names_it(root, parts):
    import os

    from meshdiag.pipeline.dump_diff import _below

    path = os.path.join(root, *parts)
    assert _below(path, root) == os.path.relpath(path, root)
