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
