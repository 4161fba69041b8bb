"""lint configuration: discovery, validation, merging with the command line, selection."""

from __future__ import annotations

import os

import pytest

from meshdiag.errors import MeshdiagError
from meshdiag.lint.config import CliOptions, find_config, load_config, resolve_settings
from meshdiag.lint.select import (
    PathGlob,
    SelectionLayer,
    ignored_for,
    parse_per_file_ignores,
    resolve_selection,
)

CODES = ["MD001", "MD101", "MD102", "MD103", "MD104", "MD105", "MD201"]


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# -- discovery -------------------------------------------------------------------------------


def test_pyproject_without_table_is_skipped(tmp_path):
    write(tmp_path / "meshdiag.toml", 'select = ["MD1"]\n')
    write(tmp_path / "proj" / "pyproject.toml", "[project]\nname = 'x'\n")
    nested = tmp_path / "proj" / "a" / "b"
    nested.mkdir(parents=True)
    assert find_config(str(nested)) == str(tmp_path / "meshdiag.toml")


def test_closest_pyproject_with_table_wins(tmp_path):
    write(tmp_path / "meshdiag.toml", 'select = ["MD1"]\n')
    write(tmp_path / "proj" / "pyproject.toml", '[tool.meshdiag]\nignore = ["MD103"]\n')
    nested = tmp_path / "proj" / "dumps" / "x"
    nested.mkdir(parents=True)
    found = find_config(str(nested))
    assert found == str(tmp_path / "proj" / "pyproject.toml")
    assert load_config(found).values == {"ignore": ["MD103"]}


def test_a_found_pyproject_is_read_once(tmp_path, monkeypatch):
    """Telling whether a pyproject.toml holds the table reads it; the settings take what was
    read then, not the file again."""
    import meshdiag.fileio as fileio

    write(tmp_path / "pyproject.toml", '[tool.meshdiag]\nignore = ["MD103"]\n')
    real = fileio.read_text
    read: list[str] = []
    monkeypatch.setattr(fileio, "read_text", lambda path, *a: read.append(path) or real(path, *a))
    settings = resolve_settings(CliOptions(), CODES, cwd=str(tmp_path))
    assert "MD103" not in settings.codes
    assert read == [str(tmp_path / "pyproject.toml")]


def test_meshdiag_toml_beats_pyproject_in_same_dir(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.meshdiag]\nignore = ["MD103"]\n')
    write(tmp_path / "meshdiag.toml", 'ignore = ["MD104"]\n')
    assert find_config(str(tmp_path)) == str(tmp_path / "meshdiag.toml")


def test_no_config_anywhere(tmp_path):
    # tmp dirs live under /tmp; no meshdiag config above them
    assert find_config(str(tmp_path)) is None


def test_nested_discovery_applies_settings(tmp_path):
    write(
        tmp_path / "pyproject.toml",
        '[tool.meshdiag]\nselect = ["MD10"]\nignore = ["MD103"]\nfail-on = "error"\n'
        'split = "chunk"\n[tool.meshdiag.per-file-ignores]\n"legacy/*" = ["MD101"]\n',
    )
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    s = resolve_settings(CliOptions(), CODES, cwd=str(nested))
    assert s.codes == {"MD001", "MD101", "MD102", "MD104", "MD105"}  # MD001: always on
    assert s.fail_on == "error" and s.split == "chunk"
    assert s.config_path == str(tmp_path / "pyproject.toml")
    # per-file-ignores globs are anchored at the config's directory, not the cwd
    assert ignored_for(str(tmp_path / "legacy" / "d.mlir"), s.per_file_ignores) == {"MD101"}
    assert ignored_for(str(nested / "legacy" / "d.mlir"), s.per_file_ignores) == set()


def test_cli_overrides_config(tmp_path):
    write(tmp_path / "meshdiag.toml", 'select = ["MD1"]\nignore = ["MD101"]\nfail-on = "info"\n')
    s = resolve_settings(CliOptions(select=("MD101",), fail_on="error"), CODES, cwd=str(tmp_path))
    assert s.codes == {"MD001", "MD101"}  # ruff: the CLI's select is the new base
    assert s.fail_on == "error"
    s = resolve_settings(CliOptions(extend_select=("MD101",)), CODES, cwd=str(tmp_path))
    assert s.codes == {"MD001", "MD101", "MD102", "MD103", "MD104", "MD105"}


def test_isolated_and_explicit_config(tmp_path):
    write(tmp_path / "meshdiag.toml", 'select = ["MD103"]\n')
    other = write(tmp_path / "ci" / "lint.toml", 'select = ["MD105"]\n')
    assert resolve_settings(CliOptions(), CODES, cwd=str(tmp_path)).codes == {"MD001", "MD103"}
    assert resolve_settings(CliOptions(isolated=True), CODES, cwd=str(tmp_path)).codes == set(CODES)
    s = resolve_settings(CliOptions(config=str(other)), CODES, cwd=str(tmp_path))
    assert s.codes == {"MD001", "MD105"} and s.root == str(tmp_path / "ci")


@pytest.mark.parametrize(
    "text, needle",
    [
        ('selct = ["MD1"]\n', "unknown key 'selct'"),
        ("select = 3\n", "'select'"),
        ('fail-on = "fatal"\n', "'fail-on'"),
        ('split = "weird"\n', "'split'"),
        ("[per-file-ignores]\n'x' = 3\n", "meshdiag.toml:2: 'per-file-ignores.x'"),
        ("select = [\n", "not valid TOML"),
        ('select = ["MD9"]\n', "no rule matches"),
        ('select = ["banana"]\n', "invalid rule selector"),
    ],
)
def test_bad_config_is_one_line_error(tmp_path, text, needle):
    path = write(tmp_path / "meshdiag.toml", text)
    with pytest.raises(MeshdiagError) as e:
        resolve_settings(CliOptions(), CODES, cwd=str(tmp_path))
    msg = str(e.value)
    assert needle in msg and "\n" not in msg.strip()
    if "TOML" not in needle:
        assert str(path) in msg


def test_unknown_key_in_pyproject_names_table(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.meshdiag]\nmesh_shape = '2x4'\n")
    with pytest.raises(MeshdiagError, match=r"unknown key 'mesh_shape' in \[tool.meshdiag\]"):
        resolve_settings(CliOptions(), CODES, cwd=str(tmp_path))


def test_explicit_pyproject_without_table_is_error(tmp_path):
    path = write(tmp_path / "pyproject.toml", "[project]\nname='x'\n")
    with pytest.raises(MeshdiagError, match="no \\[tool.meshdiag\\] table"):
        load_config(str(path))


# -- selection ---------------------------------------------------------------------------------


def sel(*layers):
    return set(resolve_selection(CODES, layers))


def test_default_is_every_rule():
    assert sel() == set(CODES)


def test_select_prefixes_and_all():
    assert sel(SelectionLayer(select=("MD1",))) == {"MD101", "MD102", "MD103", "MD104", "MD105"}
    assert sel(SelectionLayer(select=("MD10",), ignore=("MD105",))) == {
        "MD101",
        "MD102",
        "MD103",
        "MD104",
    }
    assert sel(SelectionLayer(select=("ALL",), ignore=("MD1",))) == {"MD001", "MD201"}
    assert sel(SelectionLayer(select=("md001",))) == {"MD001"}  # case-insensitive


def test_an_always_on_rule_is_left_out_only_by_an_ignore():
    def on(*layers):
        return set(resolve_selection(CODES, layers, always=("MD001",)))

    assert on(SelectionLayer(select=("MD1",))) == {
        "MD001",
        "MD101",
        "MD102",
        "MD103",
        "MD104",
        "MD105",
    }
    assert "MD001" not in on(SelectionLayer(select=("MD1",), ignore=("MD001",)))
    assert "MD001" not in on(SelectionLayer(ignore=("ALL",)))
    config = SelectionLayer(ignore=("MD0",), origin="cfg")
    assert "MD001" not in on(config, SelectionLayer(select=("MD1",)))  # still ignored
    assert "MD001" in on(config, SelectionLayer(extend_select=("MD001",)))  # selected again


def test_more_specific_selector_wins_within_a_layer():
    assert sel(SelectionLayer(select=("MD103",), ignore=("MD1",))) == {"MD103"}
    assert sel(SelectionLayer(select=("MD1",), ignore=("MD103",))) == {
        "MD101",
        "MD102",
        "MD104",
        "MD105",
    }
    # equal specificity: ignore wins (ruff)
    assert sel(SelectionLayer(select=("MD103",), ignore=("MD103",))) == set()


def test_extend_select_adds_to_earlier_layer():
    config = SelectionLayer(select=("MD10",), ignore=("MD103",), origin="cfg")
    assert sel(config, SelectionLayer(extend_select=("MD201",))) == {
        "MD101",
        "MD102",
        "MD104",
        "MD105",
        "MD201",
    }
    assert sel(config, SelectionLayer(extend_select=("MD103",))) == {
        "MD101",
        "MD102",
        "MD103",
        "MD104",
        "MD105",
    }
    assert sel(config, SelectionLayer(ignore=("MD1",))) == set()


def test_unknown_selector_rejected():
    with pytest.raises(MeshdiagError, match="no rule matches"):
        sel(SelectionLayer(select=("MD9",)))
    with pytest.raises(MeshdiagError, match="invalid rule selector"):
        sel(SelectionLayer(ignore=("MD-1",)))


# -- per-file ignores and globs ----------------------------------------------------------------


def test_per_file_ignores_cli_syntax(tmp_path):
    rules = parse_per_file_ignores(
        ["dumps/legacy/*:MD103,MD104", "**/*.hlo:MD1", "x/{a,b}/*.mlir:MD105"],
        CODES,
        str(tmp_path),
    )
    assert [r.glob.pattern for r in rules] == ["dumps/legacy/*", "**/*.hlo", "x/{a,b}/*.mlir"]
    assert rules[0].codes == {"MD103", "MD104"}
    assert rules[1].codes == {"MD101", "MD102", "MD103", "MD104", "MD105"}
    legacy = str(tmp_path / "dumps" / "legacy" / "m.mlir")
    assert ignored_for(legacy, rules) == {"MD103", "MD104"}
    # like .gitignore: a glob that matches a directory covers the files below it
    assert ignored_for(str(tmp_path / "dumps" / "legacy" / "deep" / "m.mlir"), rules) == {
        "MD103",
        "MD104",
    }
    assert ignored_for(str(tmp_path / "dumps" / "current" / "m.mlir"), rules) == set()
    assert ignored_for(str(tmp_path / "deep" / "er" / "m.hlo"), rules) == rules[1].codes
    assert ignored_for(str(tmp_path / "x" / "b" / "m.mlir"), rules) == {"MD105"}
    assert ignored_for(str(tmp_path / "x" / "c" / "m.mlir"), rules) == set()


@pytest.mark.parametrize("bad", ["MD103", ":MD103", "dumps/*:", "dumps/*:MD9"])
def test_per_file_ignores_bad_entries(tmp_path, bad):
    with pytest.raises(MeshdiagError):
        parse_per_file_ignores([bad], CODES, str(tmp_path))


@pytest.mark.parametrize(
    "pattern, rel, hit",
    [
        ("dumps/legacy/*", "dumps/legacy/a.mlir", True),
        ("dumps/legacy/*", "dumps/legacyx/a.mlir", False),
        ("dumps/legacy", "dumps/legacy/sub/a.mlir", True),  # a directory covers what is below
        ("*.mlir", "deep/down/a.mlir", True),  # no '/': matches the name at any depth
        ("dumps/*.mlir", "dumps/sub/a.mlir", False),  # '*' stays in one segment
        ("dumps/**/a.mlir", "dumps/a.mlir", True),
        ("dumps/**/a.mlir", "dumps/x/y/a.mlir", True),
        ("module_[0-9]*.txt", "d/module_0001.txt", True),
        ("module_[!0-9]*.txt", "d/module_0001.txt", False),
        ("./dumps/?.mlir", "dumps/a.mlir", True),
    ],
)
def test_globs(tmp_path, pattern, rel, hit):
    assert PathGlob(pattern, str(tmp_path)).matches(os.path.join(tmp_path, rel)) is hit


@pytest.mark.parametrize(
    "text",
    [
        'mesh = "batch=2,model=4"\n',
        "[mesh]\naxes = { batch = 2, model = 4 }\n",
        'mesh = "plan/mesh.toml"\n',  # a mesh file, relative to the config's directory
    ],
)
def test_mesh_from_config(tmp_path, text):
    write(tmp_path / "plan" / "mesh.toml", "[mesh]\naxes = { batch = 2, model = 4 }\n")
    write(tmp_path / "meshdiag.toml", 'target = "tt-mlir"\n' + text)  # before any table
    (tmp_path / "sub").mkdir()
    s = resolve_settings(CliOptions(), CODES, cwd=str(tmp_path / "sub"))
    assert s.mesh.shape == (2, 4) and s.mesh.names == ("batch", "model")
    assert s.target == "tt-mlir"
    # the command line wins
    s = resolve_settings(CliOptions(mesh="4x2"), CODES, cwd=str(tmp_path / "sub"))
    assert s.mesh.shape == (4, 2)


def test_bad_mesh_or_target_in_config(tmp_path):
    write(tmp_path / "meshdiag.toml", 'mesh = "batch=two"\n')
    with pytest.raises(MeshdiagError, match="meshdiag.toml"):
        resolve_settings(CliOptions(), CODES, cwd=str(tmp_path))
    write(tmp_path / "meshdiag.toml", 'target = "tt-nonsense"\n')
    with pytest.raises(MeshdiagError):
        resolve_settings(CliOptions(), CODES, cwd=str(tmp_path))
    write(tmp_path / "meshdiag.toml", "mesh = 8\n")
    with pytest.raises(MeshdiagError, match="'mesh'"):
        resolve_settings(CliOptions(), CODES, cwd=str(tmp_path))
