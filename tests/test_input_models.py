"""Config and mesh files are validated by pydantic models (`meshdiag.inputs`): a bad key, type
or value is one line naming the file, the key path and the key's line, and exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshdiag.errors import LimitError, MeshdiagError
from meshdiag.inputs.keyline import json_key_line, toml_key_line
from meshdiag.inputs.mesh_input import parse_mesh
from meshdiag.inputs.problems import FileError
from meshdiag.lint.config import CliOptions, resolve_settings

CODES = ["MD001", "MD101", "MD102", "MD103", "MD104", "MD105", "MD106", "MD107", "MD108"]


def _config_error(tmp_path: Path, name: str, text: str) -> FileError:
    (tmp_path / name).write_text(text)
    with pytest.raises(FileError) as e:
        resolve_settings(CliOptions(), CODES, cwd=str(tmp_path))
    return e.value


# -- where a key is ------------------------------------------------------------------------


def test_toml_key_line_follows_tables_dotted_and_quoted_keys() -> None:
    text = (
        "# top\n"
        'name = "x"\n'
        "[tool.other]\n"
        "select = 1\n"
        "[tool.meshdiag]\n"
        'select = ["MD1"]\n'
        'mesh.axes = { batch = 2, "model" = 0 }\n'
        "[tool.meshdiag.per-file-ignores]\n"
        "'tests/*.mlir' = 3\n"
    )
    assert toml_key_line(text, ("tool", "meshdiag", "select")) == 6
    assert toml_key_line(text, ("tool", "other", "select")) == 4
    assert toml_key_line(text, ("tool", "meshdiag", "mesh", "axes", "model")) == 7
    assert toml_key_line(text, ("tool", "meshdiag", "per-file-ignores", "tests/*.mlir")) == 9
    # a key not written: the deepest part that is (the table header)
    assert toml_key_line(text, ("tool", "meshdiag", "per-file-ignores", "other")) == 8
    assert toml_key_line(text, ("nowhere",)) is None


def test_json_key_line_follows_the_path_exactly() -> None:
    text = (
        '{\n  "other": {"axes": 9},\n  "mesh": {\n    "name": "axes",\n    "axes": [\n'
        '      ["x", 2],\n      ["y", 0]\n    ]\n  },\n  "axes": 1,\n  "axes": 2\n}\n'
    )
    assert json_key_line(text, ("mesh", "axes")) == 5
    assert json_key_line(text, ("mesh", "axes", 1)) == 7
    assert json_key_line(text, ("mesh", "axes", 1, 1)) == 7
    assert json_key_line(text, ("axes",)) == 11  # a repeated key: the copy json.loads keeps
    assert json_key_line(text, ("mesh", "missing")) == 3  # the deepest part found
    assert json_key_line(text, ("missing",)) is None


# -- the lint config -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, line, needle",
    [
        ('target = "tt-mlir"\nselct = ["MD1"]\n', 2, "unknown key 'selct'; known keys: "),
        ('\n\nfail-on = "loud"\n', 3, "'fail-on' is 'loud'; expected one of error, warning, info"),
        ('split = "xla"\nselect = ["MD1", 3]\n', 2, "'select[1]' must be a string, not 3"),
        ("mesh = 8\n", 1, "'mesh' must be a string or a table, not 8"),
        ("target = true\n", 1, "'target' must be a string, not True"),
        ("[per-file-ignores]\n'a/*.mlir' = [1]\n", 2, "'per-file-ignores.\"a/*.mlir\"[0]'"),
        ("[mesh]\naxes = { x = 2 }\nname = 'm'\n", 3, "unknown key 'name' in [mesh]"),
        ("[mesh]\naxes = { x = 2, y = 0 }\n", 2, "'mesh.axes.y': mesh axis sizes must be positive"),
        ('[mesh]\naxes = { x = "2" }\n', 2, "'mesh.axes.x' must be an integer, not '2'"),
        ("[mesh]\nshape = [2, 2]\ndevice_ids = [0, 1, 2, 2]\n", 3, "'mesh.device_ids'"),
        ("[mesh]\ndevice_ids = [0]\n", 1, "no 'axes'"),
    ],
)
def test_bad_meshdiag_toml_names_file_key_and_line(tmp_path, text, line, needle) -> None:
    err = _config_error(tmp_path, "meshdiag.toml", text)
    assert err.path == str(tmp_path / "meshdiag.toml") and err.line == line
    assert needle in err.detail, err.detail
    assert str(err).startswith(f"{tmp_path / 'meshdiag.toml'}:{line}: ")
    assert "\n" not in str(err)


def test_pyproject_keys_are_named_with_their_table(tmp_path) -> None:
    text = '[project]\nname = "p"\n\n[tool.meshdiag]\ntarget = "tt-mlir"\nfail-on = 1\n'
    err = _config_error(tmp_path, "pyproject.toml", text)
    assert err.line == 6 and err.detail == "'tool.meshdiag.fail-on' is 1; expected one of " + (
        "error, warning, info"
    )
    err = _config_error(tmp_path, "pyproject.toml", "[tool.meshdiag]\n\nmesh_shape = '2x4'\n")
    assert err.line == 3 and "unknown key 'mesh_shape' in [tool.meshdiag]" in err.detail


def test_valid_configs_still_load(tmp_path) -> None:
    (tmp_path / "meshdiag.toml").write_text(
        'select = "MD1"\nignore = ["MD105"]\nfail-on = "error"\nsplit = "chunk"\n'
        '[mesh]\naxes = [["batch", 2], ["model", 4]]\ndevice_ids = [7, 6, 5, 4, 3, 2, 1, 0]\n'
        "[per-file-ignores]\n'x/*.mlir' = 'MD101'\n"
    )
    s = resolve_settings(CliOptions(), CODES, cwd=str(tmp_path))
    assert s.mesh.axes == (("batch", 2), ("model", 4)) and s.mesh.ids[0] == 7
    assert s.fail_on == "error" and s.split == "chunk" and "MD105" not in s.codes
    assert "MD101" in s.codes and "MD201" not in s.codes


def test_a_mesh_file_named_by_the_config_is_located_in_that_file(tmp_path) -> None:
    (tmp_path / "meshdiag.toml").write_text('mesh = "plan.json"\n')
    (tmp_path / "plan.json").write_text('{"mesh": {\n "axes": {"x": 2},\n "ids": [1, 0]}}\n')
    with pytest.raises(MeshdiagError) as e:
        resolve_settings(CliOptions(), CODES, cwd=str(tmp_path))
    msg = str(e.value)
    assert "meshdiag.toml:1: mesh 'plan.json': " in msg
    assert "plan.json:3: unknown key 'ids'" in msg


# -- mesh files ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, text, line, needle, error",
    [
        ("m.toml", "[mesh]\naxes = {x = 0}\n", 2, "'mesh.axes.x'", MeshdiagError),
        ("m.toml", "# c\naxes = [['x', 2, 3]]\n", 2, "'axes[0]'", MeshdiagError),
        ("m.toml", "[mesh]\naxes = {x = 2}\naxis = 1\n", 3, "unknown key 'axis'", MeshdiagError),
        ("m.toml", "[mesh]\nmesh_shape = [2]\naxis_names = []\n", 1, "name every", MeshdiagError),
        ("m.toml", "[mesh]\nshape = [2, 2]\nnames = ['x']\n", 1, "name every", MeshdiagError),
        ("m.toml", "[mesh]\naxes = {x = 2}\nshape = [2]\n", 1, "give one of", MeshdiagError),
        ("m.json", '{\n"mesh": {\n"axes": {"x": 2.0}}}', 3, "'mesh.axes.x'", MeshdiagError),
        (
            "m.json",
            '{\n"axes": [["x", 2]],\n"device_ids": "0,1"}',
            3,
            "'device_ids'",
            MeshdiagError,
        ),
        ("m.json", '{"mesh": 3}', 1, "'mesh' must be a string or an object", MeshdiagError),
        (
            "m.json",
            json.dumps({"axes": {f"a{i}": 1 for i in range(300)}}),
            1,
            "300 axes",
            LimitError,
        ),
    ],
)
def test_bad_mesh_files_name_file_key_and_line(tmp_path, name, text, line, needle, error) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(error) as e:
        parse_mesh(str(path))
    assert isinstance(e.value, FileError) and e.value.line == line
    assert str(e.value).startswith(f"{path}:{line}: ") and needle in str(e.value)


def test_mesh_file_forms_accepted_as_before(tmp_path) -> None:
    cases = {
        "a.toml": "title = 'plan'\n[mesh]\naxes = {batch = 2, model = 4}\n",
        "b.toml": 'axes = [["batch", 2], ["model", 4]]\n',
        "c.json": json.dumps({"mesh_shape": [2, 4], "axis_names": ["batch", "model"]}),
        "d.json": json.dumps({"shape": [2, 4], "names": ["batch", "model"]}),
        "e.toml": 'mesh = "batch=2,model=4"\n',
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        assert parse_mesh(str(tmp_path / name)).axes == (("batch", 2), ("model", 4)), name


def test_inline_mapping_errors_have_no_file_location() -> None:
    with pytest.raises(MeshdiagError) as e:
        parse_mesh('{"axes": {"x": "2"}}')
    assert not isinstance(e.value, FileError)
    assert str(e.value) == "'axes.x' must be an integer, not '2'"
    # Python-literal mappings may have keys that are not strings: still one message
    for text in ("{1: 2}", "{'mesh': {'axes': {'x': 2}, 5: 1}}", "{'axes': {1: 2}}"):
        with pytest.raises(MeshdiagError) as e:
            parse_mesh(text)
        assert "\n" not in str(e.value) and "string" in str(e.value)
    # torch_xla's repr still reads
    m = parse_mesh("{'device_ids': [1, 0], 'mesh_shape': (2,), 'axis_names': ('x',)}")
    assert m.axes == (("x", 2),) and m.ids == (1, 0)


def test_cli_reports_a_bad_config_in_one_line_with_exit_2(tmp_path) -> None:
    (tmp_path / "meshdiag.toml").write_text('target = "tt-mlir"\n\nfail-on = "never"\n')
    r = subprocess.run(
        [sys.executable, "-m", "meshdiag", "lint", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1
    assert r.stderr.startswith(f"meshdiag: error: {tmp_path / 'meshdiag.toml'}:3: 'fail-on'")


# -- any table: a located one-line error or a valid config, never a crash -------------------

_KEYS = ["mesh", "target", "split", "fail-on", "select", "ignore", "extend-select", "exclude"]
_scalars = st.one_of(
    st.integers(-3, 10),
    st.booleans(),
    st.sampled_from(["xla", "error", "MD1", "2x4", "tt-mlir", "é x", 'a"b', ""]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["axes", "x", "device_ids", "y z", "shape"]), inner),
    ),
    max_leaves=6,
)


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, str)):
        return json.dumps(value) if isinstance(value, str) else str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + "}"


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(st.sampled_from([*_KEYS, "per-file-ignores", "selct", "x y"]), _values),
    st.integers(0, 3),
)
def test_any_config_table_is_valid_or_one_located_line(tmp_path_factory, table, blank) -> None:
    tmp = tmp_path_factory.mktemp("cfg")
    lines = [f"{json.dumps(k)} = {_toml(v)}" for k, v in table.items()]
    text = "\n" * blank + "\n".join(lines) + "\n"
    (tmp / "meshdiag.toml").write_text(text)
    try:
        resolve_settings(CliOptions(), CODES, cwd=str(tmp))
    except FileError as e:
        assert 1 <= e.line <= text.count("\n") and "\n" not in str(e)
        if table:  # the line holds a key of the table
            assert text.splitlines()[e.line - 1].strip()
    except MeshdiagError as e:  # selection, target or mesh-text problems: one line
        assert "\n" not in str(e)
