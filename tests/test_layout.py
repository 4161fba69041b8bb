"""The layout engine (kinds, subgroups, uneven dims, limits) and the `meshdiag layout` command."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np
import pytest

import meshdiag
from meshdiag.cli.app import main
from meshdiag.cli.commands.layout import parse_shape
from meshdiag.errors import MeshdiagError
from meshdiag.layouts.engine import layout, uneven_report
from meshdiag.model.mesh import Mesh
from meshdiag.model.sharding import AxisRef, DimSharding, HloSharding, NamedSharding
from meshdiag.model.tiles import TileAssignment

SEED_V2 = HloSharding.tiled(TileAssignment.iota((1, 4, 2)), replicate_on_last=True)
SEED_FIXED = HloSharding.tiled(
    TileAssignment.iota((1, 4, 2), (2, 4), (1, 0)), replicate_on_last=True
)


def _cols(lay) -> dict[int, tuple[int, int]]:
    return {d.device: d.slices[1] for d in lay.devices()}


# -- engine -------------------------------------------------------------------------------


def test_seed_distorted_sharding_puts_tile_j_on_2j_2j1():
    lay = layout(SEED_V2, (32, 32))
    assert lay.num_devices == 8 and lay.tiles == (1, 4)
    assert _cols(lay) == {d: (8 * (d // 2), 8 * (d // 2) + 8) for d in range(8)}
    assert lay.groups.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]


def test_seed_pspec_sharding_puts_tile_j_on_j_and_j4():
    lay = layout(SEED_FIXED, (32, 32))
    assert _cols(lay) == {d: (8 * (d % 4), 8 * (d % 4) + 8) for d in range(8)}
    assert lay.groups.tolist() == [0, 1, 2, 3, 0, 1, 2, 3]
    doc = lay.to_json("{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}")
    assert list(doc) == ["version", "shape", "split", "num_devices", "gspmd", "devices"]
    assert doc["devices"][0] == {
        "device": 0,
        "slices": [[0, 32], [0, 8]],
        "shard_shape": [32, 8],
        "buffer_shape": [32, 8],
        "empty": False,
    }
    assert [d["device"] for d in doc["devices"]] == list(range(8))


def test_replicated_maximal_and_extra_devices():
    rep = layout(HloSharding.replicated(), (4, 6), num_devices=3)
    assert [d.slices for d in rep.devices()] == [((0, 4), (0, 6))] * 3
    assert rep.num_groups == 1
    assert layout(HloSharding.replicated(), (4,)).num_devices == 1

    mx = layout(HloSharding.maximal(2), (4, 6), num_devices=4)
    got = mx.to_json()["devices"]
    assert [g["slices"] for g in got] == [None, None, [[0, 4], [0, 6]], None]
    assert [g["empty"] for g in got] == [True, True, False, True]
    assert got[0]["buffer_shape"] is None and got[2]["buffer_shape"] == [4, 6]
    assert layout(HloSharding.maximal(5), (2,)).num_devices == 6
    with pytest.raises(MeshdiagError, match="device 5"):
        layout(HloSharding.maximal(5), (2,), num_devices=4)

    # a mesh larger than the tile assignment: the devices past it hold nothing
    wide = layout(HloSharding.tiled(TileAssignment.iota((2,))), (4,), num_devices=4)
    assert [d.slices for d in wide.devices()] == [((0, 2),), ((2, 4),), None, None]


def test_manual_unknown_unreduced_are_whole_and_marked():
    for kind in ("manual", "unknown", "unreduced"):
        lay = layout(HloSharding(kind), (3, 5), num_devices=4)
        assert all(d.slices == ((0, 3), (0, 5)) for d in lay.devices())
        assert lay.notes and kind in lay.notes[0]
        assert lay.num_groups == 4  # per-device data is not known to be equal
    assert layout(HloSharding("unreduced"), (2,)).partial
    assert layout(HloSharding("manual"), (2,)).manual


def test_subgroups_manual_and_replicated():
    # [2,2,2] with last dims {manual, replicated}: tile i on the 4 devices with that data coord
    s = HloSharding.tiled(TileAssignment.iota((2, 2, 2)), subgroup_types=("manual", "replicated"))
    lay = layout(s, (8,))
    assert [d.slices for d in lay.devices()] == [((0, 4),)] * 4 + [((4, 8),)] * 4
    # devices differing only along the replicated dim share data; along manual they do not
    assert lay.groups.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert lay.manual and not lay.partial
    u = layout(HloSharding.tiled(TileAssignment.iota((2, 2)), subgroup_types=("unreduced",)), (4,))
    assert u.partial and u.num_groups == 4


def test_rank_zero_and_rank_mismatch():
    lay = layout(HloSharding.replicated(), (), num_devices=2)
    assert lay.to_json()["devices"][1] == {
        "device": 1,
        "slices": [],
        "shard_shape": [],
        "buffer_shape": [],
        "empty": False,
    }
    s0 = HloSharding.tiled(TileAssignment.iota((4,)), replicate_on_last=True)  # data rank 0
    assert [d.slices for d in layout(s0, ()).devices()] == [()] * 4
    with pytest.raises(MeshdiagError, match=r"sharding tiles rank 2, tensor has rank 3"):
        layout(SEED_V2, (4, 4, 4))
    with pytest.raises(MeshdiagError, match="tuple sharding"):
        layout(HloSharding.tuple_of([SEED_V2]), (32, 32))


def test_uneven_rules_and_report():
    s = HloSharding.tiled(TileAssignment.iota((1, 8, 1, 1)))
    xla = layout(s, (1, 7, 32, 32))
    d7 = xla.device(7)
    assert d7.slices[1] == (7, 7) and d7.empty and d7.buffer_shape == (1, 1, 32, 32)
    (rep,) = uneven_report(xla)
    assert (rep.dim, rep.size, rep.shards, rep.tile) == (1, 7, 8, 1)
    assert rep.empty_devices == (7,) and rep.padded_devices == (7,) and rep.absent_devices == ()

    chunk = layout(s, (1, 7, 32, 32), split="chunk")
    assert chunk.device(7).slices is None and chunk.device(7).buffer_shape is None
    (rep,) = uneven_report(chunk)
    assert rep.absent_devices == (7,) and rep.padded_devices == ()
    assert rep.buffers == (1,) * 7 + (0,)

    ten = layout(HloSharding.tiled(TileAssignment.iota((4,))), (10,))
    (rep,) = uneven_report(ten)
    assert rep.sizes == (3, 3, 3, 1) and rep.short_devices == (3,) and rep.padded_devices == (3,)
    assert uneven_report(layout(SEED_V2, (32, 32))) == []
    assert len(uneven_report(layout(SEED_V2, (32, 32)), only_uneven=False)) == 2

    arr = layout(HloSharding.tiled(TileAssignment.iota((4,))), (10,), split="array-split")
    assert [d.slices[0] for d in arr.devices()] == [(0, 3), (3, 6), (6, 8), (8, 10)]
    with pytest.raises(MeshdiagError, match="not divisible by its 4 shards"):
        layout(HloSharding.tiled(TileAssignment.iota((4,))), (10,), split="even")


def test_bad_inputs_are_meshdiag_errors():
    t = HloSharding.tiled(TileAssignment.from_devices((2,), (0, 0)))
    with pytest.raises(MeshdiagError, match="more than once"):
        layout(t, (4,))
    with pytest.raises(MeshdiagError, match="outside"):
        layout(HloSharding.tiled(TileAssignment.from_devices((2,), (0, 5))), (4,), num_devices=4)
    with pytest.raises(MeshdiagError, match="negative"):
        layout(SEED_V2, (32, -1))
    with pytest.raises(MeshdiagError, match="not an integer"):
        layout(SEED_V2, (32, 1.5))
    with pytest.raises(MeshdiagError, match="unknown split rule"):
        layout(SEED_V2, (32, 32), split="ragged")


def test_memoised_in_the_runs_memos_and_readonly():
    from meshdiag.memo import RunMemos

    memos = RunMemos()
    a = layout(SEED_FIXED, (32, 32), memos=memos)
    b = layout(SEED_FIXED, [32, 32], memos=memos)
    assert a is b
    assert layout(SEED_FIXED, (32, 32)) is not a  # no memos given: nothing is remembered
    with pytest.raises(ValueError):
        a.starts[0, 0] = 5


def test_8192_devices_is_fast():
    s = HloSharding.tiled(TileAssignment.iota((16, 16, 32, 1), (16, 16, 32), (2, 0, 1)))
    t0 = time.perf_counter()
    lay = layout(s, (64, 64, 128, 7), num_devices=8192)
    elapsed = time.perf_counter() - t0
    assert lay.num_devices == 8192 and lay.num_groups == 8192
    assert elapsed < 0.5, elapsed  # milliseconds in practice; generous for a shared machine
    # spot-check devices against the iota definition, walked independently
    arr = np.arange(8192).reshape(16, 16, 32).transpose(2, 0, 1).reshape(16, 16, 32)
    for d in (0, 1, 4095, 5 * 256 + 3 * 16 + 7, 8191):
        i, j, k = (int(x[0]) for x in np.nonzero(arr == d))
        assert lay.device(d).slices == (
            (4 * i, 4 * i + 4),
            (4 * j, 4 * j + 4),
            (4 * k, 4 * k + 4),
            (0, 7),
        )


def test_named_sharding_and_text_are_accepted():
    mesh = Mesh((("batch", 2), ("model", 4)))
    named = NamedSharding(mesh, (DimSharding(), DimSharding((AxisRef("model"),))))
    lay = layout(named, (32, 32))
    assert _cols(lay) == _cols(layout(SEED_FIXED, (32, 32)))
    via_pkg = meshdiag.layout("P(None, 'model')", (32, 32), mesh=mesh)
    assert _cols(via_pkg) == _cols(lay)


def test_uneven_report_is_vectorised_data():
    lay = layout(HloSharding.tiled(TileAssignment.iota((3, 2))), (5, 3), split="chunk")
    reps = {r.dim: r for r in uneven_report(lay)}
    assert set(reps) == {0, 1}
    assert reps[0].sizes == (2, 2, 1) and reps[1].sizes == (2, 1)
    assert np.array_equal(lay.empty, np.zeros(6, dtype=bool))


# -- command ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,shape",
    [("32,32", (32, 32)), ("(1,7,32,32)", (1, 7, 32, 32)), ("[]", ()), ("()", ()),
     ("(4,)", (4,)), ("32x16", (32, 16)), (" [ 4 , 8 ] ", (4, 8))],
)  # fmt: skip
def test_parse_shape(text, shape):
    assert parse_shape(text) == shape


@pytest.mark.parametrize("bad", ["32,,32", "a,b", "(4,8]", "-1,2", "4.5"])
def test_parse_shape_errors(bad):
    with pytest.raises(MeshdiagError, match="--shape"):
        parse_shape(bad)


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(list(argv))
    out, err = capsys.readouterr()
    return e.value.code, out, err


def test_cli_json_contract(capsys):
    rc, out, err = _run(
        capsys, "layout", "P(None, 'model')", "--mesh", "batch=2,model=4", "--shape", "32,32",
        "--format", "json",
    )  # fmt: skip
    assert rc == 0, err
    doc = json.loads(out)
    assert doc == {
        "version": 1,
        "shape": [32, 32],
        "split": "xla",
        "num_devices": 8,
        "gspmd": "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}",
        "devices": [
            {
                "device": d,
                "slices": [[0, 32], [8 * (d % 4), 8 * (d % 4) + 8]],
                "shard_shape": [32, 8],
                "buffer_shape": [32, 8],
                "empty": False,
            }
            for d in range(8)
        ],
        # issue 11: every layout says which id space its device numbers are in
        "device_ids": "logical",
        "device_assignment": None,
        "findings": [],  # meshdiag's addition to the contract: MD105 for uneven dims
    }


def test_cli_chunk_json_marks_missing_device(capsys):
    rc, out, _ = _run(
        capsys, "layout", "{devices=[1,8,1,1]<=[8]}", "--shape", "(1,7,32,32)", "--split",
        "chunk", "-f", "json",
    )  # fmt: skip
    assert rc == 0
    last = json.loads(out)["devices"][7]
    assert last == {
        "device": 7,
        "slices": None,
        "shard_shape": None,
        "buffer_shape": None,
        "empty": True,
    }


def test_cli_text_and_files(capsys, tmp_path):
    svg, page = tmp_path / "l.svg", tmp_path / "l.html"
    rc, out, err = _run(
        capsys, "layout", "{devices=[1,4,2]<=[8] last_tile_dim_replicate}", "--shape", "32,32",
        "--svg", str(svg), "--html", str(page),
    )  # fmt: skip
    assert rc == 0, err
    assert "0,1" in out and "6,7" in out and "[0:32, 24:32]" in out
    assert svg.read_text().startswith("<svg") and "<svg" in page.read_text()


@pytest.mark.parametrize(
    "argv,message",
    [
        (["layout", "{devices=[2,2]<=[4]}", "--shape", "4,4,4"], "rank 2, tensor has rank 3"),
        (["layout", "{devices=[2,2]<=[4]}", "--shape", "4,a"], "--shape"),
        (["layout", "{devices=[2,3]<=[6]}", "--shape", "4,4", "--split", "even"], "divisible"),
        (["layout", "{devices=[2,2]<=[4]}", "--shape", "4,4", "--split", "bogus"], "split"),
        (["layout", "{devices=[2,2", "--shape", "4,4"], "expected"),
        (["layout", "{replicated}", "--shape", "4", "--format", "xml"], "--format"),
    ],
)
def test_cli_errors_exit_2_with_one_line(capsys, argv, message):
    rc, out, err = _run(capsys, *argv)
    assert rc == 2
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_cli_subprocess_error_has_no_traceback():
    p = subprocess.run(
        [sys.executable, "-m", "meshdiag", "layout", "{devices=[2,2]<=[4]}", "--shape", "4,4,4"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2
    assert p.stderr.strip() == "meshdiag: error: sharding tiles rank 2, tensor has rank 3"
