"""A lint config read without pydantic (`inputs/plain_config.py`) against its model
(`inputs/config_model.py`): every table the plain reader takes gives the values the model
gives, key for key and in the same order, and it takes no table the model refuses."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshdiag.errors import MeshdiagError
from meshdiag.inputs.config_model import config_values, validate_config
from meshdiag.inputs.plain_config import plain_values
from meshdiag.inputs.problems import Source
from meshdiag.lint.config import load_config

SOURCE = Source("meshdiag.toml", "", False, ())


def by_model(table: dict) -> dict | None:
    """What the model gives for `table`, None when it refuses it."""
    try:
        return config_values(validate_config(table, SOURCE))
    except MeshdiagError:
        return None


words = st.sampled_from(["", "MD1", "MD105", "ALL", "x", "batch=2,model=4", "é"])
anything = st.one_of(
    words,
    st.sampled_from(["xla", "chunk", "array-split", "even", "XLA", "error", "warning", "info"]),
    st.sampled_from(["64MiB", "1KiB", "1.5 GiB", "12", "-3", "lots", "0x10"]),
    st.integers(-5, 1 << 40),
    st.booleans(),
    st.floats(allow_nan=False),
    st.none(),
    st.lists(words, max_size=3),
    st.lists(st.one_of(words, st.integers()), max_size=3),
    st.dictionaries(
        words, st.one_of(words, st.lists(words, max_size=2), st.integers()), max_size=3
    ),
)
keys = st.sampled_from(
    [
        "mesh",
        "target",
        "split",
        "fail-on",
        "select",
        "extend-select",
        "ignore",
        "exclude",
        "per-file-ignores",
        "collective-budget",
        "remat-min-bytes",
        "fail_on",  # a field's name, not its key
        "selct",
    ]
)


@settings(max_examples=1500, deadline=None)
@given(table=st.dictionaries(keys, anything, max_size=5))
def test_what_the_plain_reader_takes_the_model_gives_alike(table):
    plain = plain_values(table)
    model = by_model(table)
    if plain is not None:
        assert model is not None, table  # it takes nothing the model refuses
        assert plain == model and list(plain) == list(model)


PLAIN = [
    {},
    {"fail-on": "error", "mesh": "batch=2,model=4"},
    {"select": "MD1", "ignore": ["MD105"], "extend-select": ["MD2"], "exclude": ["gen/*"]},
    {"per-file-ignores": {"tests/*": "MD1", "a.mlir": ["MD101", "MD102"]}},
    {"collective-budget": "64MiB", "remat-min-bytes": 1024, "split": "chunk", "target": "t3k"},
    {"mesh": "meshes/pod.toml"},
]
NOT_PLAIN = [
    {"mesh": {"axes": {"batch": 2, "model": 4}}},  # a table: its model builds it
    {"fail_on": "error"},  # a field's name
    {"select": ["MD1", 3]},
    {"collective-budget": True},
    {"collective-budget": "lots"},
    {"split": "XLA"},
    {"per-file-ignores": {"a": 1}},
]


@pytest.mark.parametrize("table", PLAIN)
def test_plain_tables_are_read_as_the_model_reads_them(table):
    assert plain_values(table) == by_model(table) is not None


@pytest.mark.parametrize("table", NOT_PLAIN)
def test_other_tables_go_to_the_model(table):
    assert plain_values(table) is None


def test_a_config_file_is_read_either_way_with_the_same_values(tmp_path, monkeypatch):
    from meshdiag.inputs import plain_config

    path = tmp_path / "meshdiag.toml"
    path.write_text(
        'fail-on = "warning"\nmesh = "batch=2,model=4"\nselect = "MD1"\n'
        'collective-budget = "1KiB"\n[per-file-ignores]\n"gen/*" = ["MD105"]\n'
    )
    plain = load_config(str(path)).values
    monkeypatch.setattr(plain_config, "plain_values", lambda table: None)
    assert load_config(str(path)).values == plain
    assert plain["collective-budget"] == 1024 and plain["select"] == ["MD1"]


def test_the_plain_reader_knows_the_models_keys_in_its_order():
    """A key added to the model and not here would only send every config that sets it to
    pydantic (slower, never wrong): this keeps the two lists one."""
    from meshdiag.inputs.config_model import LintConfig
    from meshdiag.inputs.plain_config import _KEYS

    assert list(_KEYS) == [f.alias or n for n, f in LintConfig.model_fields.items()]
