"""The dump's device assignment (compile_options.textproto): parsing, finding it from each
kind of dump file, turning a physical mesh into logical ids, and `--device-assignment`
errors (one line, exit 2)."""

from __future__ import annotations

import pytest

from meshdiag.cli.app import main
from meshdiag.errors import MeshdiagError
from meshdiag.ir.devices import (
    assignment_for,
    ids_label,
    ids_label_for,
    load_assignment,
    parse_compile_options,
    relabel,
)
from meshdiag.model.mesh import Mesh
from meshdiag.notation.gspmd import parse_gspmd, print_gspmd

TEXTPROTO = """executable_build_options {
  device_ordinal: -1
  debug_options {
    xla_force_host_platform_device_count: 8
  }
  num_replicas: 1
  num_partitions: 4
  device_assignment {
    replica_count: 1
    computation_count: 4
    computation_devices {
      replica_device_ids: 2
    }
    computation_devices {
      replica_device_ids: 3
    }
    computation_devices {
      replica_device_ids: 0
    }
    computation_devices {
      replica_device_ids: 1
    }
  }
  use_spmd_partitioning: true
}
"""


def test_parse_one_device_per_partition():
    da = parse_compile_options(TEXTPROTO, "x")
    assert da.devices == (2, 3, 0, 1) and not da.is_identity
    assert da.mapping_text() == "0→2, 1→3, 2→0, 3→1"


def test_parse_replicas_take_replica_zero_and_reject_bad_blocks():
    two = TEXTPROTO.replace("replica_count: 1", "replica_count: 2").replace(
        "replica_device_ids: 2\n", "replica_device_ids: 2\n      replica_device_ids: 6\n"
    )
    assert parse_compile_options(two) is None  # 5 ids cannot be 4 partitions x 2 replicas
    assert parse_compile_options("num_partitions: 4") is None
    dup = TEXTPROTO.replace("replica_device_ids: 3", "replica_device_ids: 2")
    assert parse_compile_options(dup) is None


def test_found_from_every_kind_of_dump_file(tmp_path):
    mod = tmp_path / "module_0003.jit_f.2"  # a module name with a dot of its own
    mod.mkdir()
    (mod / "compile_options.textproto").write_text(TEXTPROTO)
    (tmp_path / "module_0003.jit_f").mkdir()  # a shorter name that also prefixes
    files = [
        tmp_path / "module_0003.jit_f.2.0004.spmd-cleanup.after_dce.txt",
        tmp_path / "shardy" / "module_0003.jit_f.2" / "02.after_propagation.mlir",
        mod / "module.mlir",
    ]
    for f in files:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("HloModule m\n")
        assert assignment_for(str(f)).devices == (2, 3, 0, 1), f
    other = tmp_path / "module_0004.jit_g.0001.pass.txt"
    other.write_text("HloModule g\n")
    assert assignment_for(str(other)) is None
    assert ids_label(None) == "device ids: logical partition ids"
    assert "runs them on physical devices 0→2" in ids_label(assignment_for(str(files[0])))


def test_each_module_of_a_big_dump_root_finds_its_own(tmp_path):
    """A root of many module directories: every file gets its own module's assignment
    (looked up by its `module_NNNN.`, not by trying every directory's name), a module
    number whose directory has no textproto gets none, and names sharing a number keep
    the longest match."""
    from meshdiag.memo import RunMemos

    orders = {}
    for k in range(120):
        devices = [(k + i) % 4 for i in range(4)]
        orders[k] = tuple(devices)
        text = TEXTPROTO
        for old, new in zip((2, 3, 0, 1), devices, strict=True):
            text = text.replace(f"replica_device_ids: {old}\n", f"replica_device_ids: X{new}\n")
        mod = tmp_path / f"module_{k:04d}.jit_f{k}"
        mod.mkdir()
        (mod / "compile_options.textproto").write_text(text.replace("X", ""))
    (tmp_path / "module_0120.jit_g").mkdir()  # no textproto
    memos = RunMemos()

    def found(name):
        f = tmp_path / name
        f.write_text("HloModule m\n")
        da = assignment_for(str(f), memos)
        return da.devices if da else None

    for k in range(0, 120, 7):
        assert found(f"module_{k:04d}.jit_f{k}.0003.spmd-cleanup.after_dce.txt") == orders[k]
    assert found("module_0120.jit_g.0001.pass.txt") is None
    # a file whose module number names no directory, or names another module's
    assert assignment_for(str(tmp_path / "module_0500.jit_f1.0001.x.txt"), memos) is None
    assert assignment_for(str(tmp_path / "module_0001.jit_h.0001.x.txt"), memos) is None


def _dump_root(tmp_path):
    """A dump root of module directories, two of one number (`jit_f` and `jit_f.2`: the
    longer wins the files it prefixes), one without a textproto, a `shardy/` tree and
    files of each kind; returns the files and the directories' assignments."""
    orders = {}
    for k, name in enumerate(["module_0001.jit_f", "module_0001.jit_f.2", "module_0002.jit_g"]):
        mod = tmp_path / name
        mod.mkdir()
        devices = tuple((k + i) % 4 for i in range(4))
        text = TEXTPROTO
        for old, new in zip((2, 3, 0, 1), devices, strict=True):
            text = text.replace(f"replica_device_ids: {old}\n", f"replica_device_ids: X{new}\n")
        (mod / "compile_options.textproto").write_text(text.replace("X", ""))
        (mod / "module.mlir").write_text("module {}\n")
        orders[name] = devices
    (tmp_path / "module_0003.jit_h").mkdir()  # no textproto
    files = [str(mod / "module.mlir") for mod in map(tmp_path.joinpath, orders)]
    for stem in ["module_0001.jit_f", "module_0001.jit_f.2", "module_0002.jit_g"]:
        for n in range(3):
            f = tmp_path / f"{stem}.{n:04d}.pass.txt"
            f.write_text("HloModule m\n")
            files.append(str(f))
        sdy = tmp_path / "shardy" / stem
        sdy.mkdir(parents=True)
        (sdy / "01.after.mlir").write_text("module {}\n")
        files.append(str(sdy / "01.after.mlir"))
    for other in ["module_0003.jit_h.0001.pass.txt", "module_0009.jit_z.0001.pass.txt", "x.txt"]:
        (tmp_path / other).write_text("HloModule m\n")
        files.append(str(tmp_path / other))
    return files, orders


def test_one_run_answers_as_a_fresh_lookup_whatever_the_order(tmp_path, monkeypatch):
    """A run keeps the last directory and module it looked in (`_Lookup`): in any order of
    files, and spelled any way (`dir//file`, `./dir/file`, relative), every answer is the
    one a fresh lookup gives, and the files of a module directory find their own."""
    import os

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from meshdiag.memo import RunMemos

    files, orders = _dump_root(tmp_path)
    monkeypatch.chdir(tmp_path.parent)  # relative spellings name the same files from here
    spellings = []
    fresh = {}
    for f in files:
        here, name = os.path.split(f)
        rel = os.path.relpath(f)
        ways = [f, here + "//" + name, here + "/./" + name, rel, "./" + rel]
        for p in ways:
            fresh[p] = assignment_for(p, RunMemos())
            assert fresh[p] == fresh[f], p  # every spelling names the one file
        spellings += ways
    for mod, devices in orders.items():
        assert fresh[str(tmp_path / mod / "module.mlir")].devices == devices
        assert fresh[str(tmp_path / f"{mod}.0001.pass.txt")].devices == devices
        assert fresh[str(tmp_path / "shardy" / mod / "01.after.mlir")].devices == devices
    assert fresh[str(tmp_path / "module_0003.jit_h.0001.pass.txt")] is None

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.sampled_from(spellings), min_size=1, max_size=40))
    def run(order):
        memos = RunMemos()
        for p in order:
            assert assignment_for(p, memos) == fresh[p], p
            # (the label, made once a run of files sharing an assignment, follows it)
            assert ids_label_for(p, memos) == ids_label(fresh[p]), p

    run()


def test_fields_are_whole_words():
    """`device_assignment`'s fields are read where their name starts a word, as the
    `\\b`-led pattern read them: a longer name ending in one is not it."""
    import re

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from meshdiag.ir.devices import _fields

    old = re.compile(r"\b(replica_count|computation_count|replica_device_ids)\s*:\s*(-?\d+)")
    names = "replica_count computation_count replica_device_ids xreplica_count"
    words = st.sampled_from([*names.split(), *"x_é1-7{}:", ": ", " ", "\n"])

    @settings(max_examples=300, deadline=None)
    @given(st.lists(words, max_size=30).map("".join))
    def same(body):
        want = [(f.group(1), int(f.group(2))) for f in old.finditer(body)]
        assert _fields(body) == want

    same()
    assert _fields("my_replica_count: 3 replica_count: 2") == [("replica_count", 2)]


def test_physical_mesh_becomes_logical():
    da = parse_compile_options(TEXTPROTO)
    phys = Mesh((("x", 2), ("y", 2)), (2, 3, 0, 1))
    assert da.logical_mesh(phys).device_ids is None  # the dump's iota mesh
    swapped = da.logical_mesh(Mesh((("x", 2), ("y", 2)), (1, 0, 3, 2)))
    assert swapped.device_ids == (3, 2, 1, 0)
    assert da.logical_mesh(Mesh((("x", 2), ("y", 2)), (4, 5, 6, 7))) is None
    # no order stated (an explicit iota list is the same mesh: Shardy drops it)
    assert da.logical_mesh(Mesh((("x", 2), ("y", 2)), (0, 1, 2, 3))) is None


def test_relabel_shows_physical_devices():
    da = load_assignment("2,3,0,1")
    s = relabel(parse_gspmd("{devices=[2,2]<=[4]}"), da, 2)
    assert print_gspmd(s) == "{devices=[2,2]2,3,0,1}"
    assert relabel(parse_gspmd("{maximal device=1}"), da, 2).device == 3
    rep = relabel(parse_gspmd("{replicated}"), da, 2)
    assert rep.tile.devices() == (2, 3, 0, 1) and rep.replicate_on_last
    with pytest.raises(MeshdiagError, match="tiles over 8 devices"):
        relabel(parse_gspmd("{devices=[8]<=[8]}"), da, 1)


@pytest.mark.parametrize(
    ("value", "msg"),
    [
        ("1,1,2", "more than once"),
        ("/nonexistent/compile_options.textproto", "cannot read"),
        ("nonsense!", "neither a device list"),
    ],
)
def test_bad_device_assignment_is_one_line_exit_2(capsys, value, msg):
    with pytest.raises(SystemExit) as e:
        main(["layout", "{devices=[2,2]<=[4]}", "--shape", "4,4", "--device-assignment", value])
    _, err = capsys.readouterr()
    assert e.value.code == 2 and msg in err and len(err.strip().splitlines()) == 1


def test_mesh_ids_not_the_assigned_devices_is_an_error(capsys):
    with pytest.raises(SystemExit) as e:
        main([
            "layout", "P('x', 'y')", "--shape", "4,4", "--device-assignment", "2,3,0,1",
            "--mesh", '<["x"=2, "y"=2], device_ids=[4, 5, 6, 7]>',
        ])  # fmt: skip
    _, err = capsys.readouterr()
    assert e.value.code == 2 and "not the devices --device-assignment lists" in err


@pytest.mark.parametrize(
    ("extra", "label"),
    [
        ([], "device ids: logical partition ids\n"),  # the whole first line
        (
            ["--mesh", '<["x"=2, "y"=2], device_ids=[3, 2, 1, 0]>'],
            "the mesh's device_ids as Shardy reads them",
        ),
        (
            [
                "--mesh",
                '<["x"=2, "y"=2], device_ids=[3, 2, 1, 0]>',
                "--device-assignment",
                "3,2,1,0",
            ],
            "device ids: physical devices",
        ),
    ],
)
def test_every_layout_says_its_id_space(capsys, extra, label):
    with pytest.raises(SystemExit) as e:
        main(["layout", "{devices=[2,2]<=[4]}", "--shape", "4,4", *extra])
    out, err = capsys.readouterr()
    assert e.value.code in (0, None), err
    head = out.split("\n")[0] if label.endswith("\n") else " ".join(out.split("\n")[:3])
    assert " ".join(label.split()) in " ".join(head.split())  # rich may wrap the line


def test_block_read_as_brace_by_brace_matching_read_it():
    """`parse_compile_options` finds the end of the `device_assignment` block by counting
    the opens before each close (`_block_end`); the reference matches every brace. Nested
    blocks, unclosed ones and braces side by side must end alike, and a field after the
    block or before it is not read as the block's."""
    import re

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from meshdiag.ir.devices import _BLOCK, _block_end

    def reference(text: str, start: int) -> int:
        depth = 1
        for brace in re.finditer(r"[{}]", text[start:]):
            depth += 1 if brace.group() == "{" else -1
            if not depth:
                return start + brace.end()
        return len(text)

    tokens = [
        "device_assignment {",
        "computation_devices {",
        "other {",
        "{",
        "}",
        "}}",
        "{{",
        *[f"replica_device_ids: {d}" for d in range(4)],
        "replica_count: 2",
    ]

    parts = st.tuples(st.sampled_from(tokens), st.sampled_from(["\n", " ", ""]))

    @settings(max_examples=500, deadline=None)
    @given(st.lists(parts, max_size=24).map(lambda ps: "".join(t + sep for t, sep in ps)))
    def same(text):
        m = _BLOCK.search(text)
        if m is not None:
            assert _block_end(text, m.end()) == reference(text, m.end())

    same()
    # a field after the block is not in it, one in a nested block is
    text = "device_assignment { a { replica_device_ids: 1 } replica_device_ids: 0 }\n"
    assert parse_compile_options(text + "replica_device_ids: 5").devices == (1, 0)
    assert parse_compile_options("replica_device_ids: 5 " + text).devices == (1, 0)
    # braces next to each other, right after the block's own
    assert parse_compile_options("device_assignment {{}replica_device_ids: 1}").devices == (1,)
    assert parse_compile_options("device_assignment {}}{replica_device_ids: 1}") is None
    # an unclosed block reads to the text's end
    assert parse_compile_options("device_assignment { replica_device_ids: 3").devices == (3,)


def test_textprotos_of_equal_bytes_are_parsed_once_and_keep_their_own_source(tmp_path):
    """The programs of one job share their compile options: a textproto's devices are
    parsed once per run by its bytes, but each module's assignment names its own file."""
    from meshdiag.ir import devices
    from meshdiag.memo import RunMemos

    other = TEXTPROTO.replace("replica_device_ids: 2", "replica_device_ids: 9")
    texts = {"module_0001.jit_a": TEXTPROTO, "module_0002.jit_b": TEXTPROTO}
    texts["module_0003.jit_c"] = other
    for name, text in texts.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "compile_options.textproto").write_text(text)
    memos = RunMemos()
    parsed = []
    real = devices._assigned_devices

    def counted(text):
        parsed.append(text)
        return real(text)

    devices._assigned_devices = counted
    try:
        got = {n: assignment_for(str(tmp_path / f"{n}.0001.pass.txt"), memos) for n in texts}
    finally:
        devices._assigned_devices = real
    assert len(parsed) == 2  # two distinct texts
    for name, da in got.items():
        assert da.source == str(tmp_path / name / "compile_options.textproto")
    assert got["module_0001.jit_a"].devices == got["module_0002.jit_b"].devices == (2, 3, 0, 1)
    assert got["module_0003.jit_c"].devices == (9, 3, 0, 1)
    # one too big to be kept by its bytes is parsed as it is
    big = TEXTPROTO + "#" * devices.SHARED_TEXTPROTO_BYTES
    (tmp_path / "module_0004.jit_d").mkdir()
    (tmp_path / "module_0004.jit_d" / "compile_options.textproto").write_text(big)
    fresh = RunMemos()
    da = assignment_for(str(tmp_path / "module_0004.jit_d.0001.pass.txt"), fresh)
    assert da.devices == (2, 3, 0, 1) and da.source.endswith("jit_d/compile_options.textproto")
    assert not fresh.table("devices.by_bytes").data  # its bytes are not held
