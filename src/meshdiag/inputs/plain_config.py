"""A lint config's values read without pydantic, when every key and value is plain.

Validating a `meshdiag.toml` through its pydantic model (`config_model.LintConfig`) imports
pydantic and builds the models: 66 ms of `-X importtime`, a third of a `lint` run of one
small dump, on every CI run that has a config. Most configs hold nothing but the keys
`meshdiag lint` has, each with a value of the kind its model takes as it is: a string, a
split rule or severity by its name, a string or list of strings, a table of those by
glob, a byte count. `plain_values` gives for such a table what
`config_values(validate_config(table, source))` gives (the same keys, values and order), and
None for anything else (an unknown or misspelled key, a mesh table, a value of another
kind, a byte size that does not read): pydantic then validates the table and says what is
wrong, at its key and line. tests/test_plain_config.py holds the two to the same answers.
"""

from __future__ import annotations

from meshdiag.errors import MeshdiagError
from meshdiag.model.findings import SEVERITIES
from meshdiag.model.splits import SPLIT_RULES
from meshdiag.notation.byte_size import parse_size

#: the config's keys in the model's order (`config_values` gives them so), each with what
#: its value is read as
_KEYS = {
    "mesh": "text",  # (a mesh table goes to pydantic)
    "target": "text",
    "split": SPLIT_RULES,
    "fail-on": SEVERITIES,
    "select": "strings",
    "extend-select": "strings",
    "ignore": "strings",
    "exclude": "strings",
    "per-file-ignores": "strings by glob",
    "collective-budget": "bytes",
    "remat-min-bytes": "bytes",
}
_NOT_PLAIN = object()


def plain_values(table: dict) -> dict | None:
    """The config's values by their TOML names when each is plain (see the module
    docstring), else None."""
    read = {}
    for key, value in table.items():
        kind = _KEYS.get(key) if type(key) is str else None
        if kind is None:
            return None
        got = _read(kind, value)
        if got is _NOT_PLAIN:
            return None
        read[key] = got
    return {key: read[key] for key in _KEYS if key in read}


def _read(kind: object, value: object) -> object:
    if kind == "text":
        return value if type(value) is str else _NOT_PLAIN
    if isinstance(kind, tuple):  # one of these names
        return value if type(value) is str and value in kind else _NOT_PLAIN
    if kind == "strings":
        return _strings(value)
    if kind == "bytes":
        if type(value) is not int and type(value) is not str:
            return _NOT_PLAIN
        try:
            return parse_size(value, "the value")
        except MeshdiagError:
            return _NOT_PLAIN
    # strings by glob
    if type(value) is not dict:
        return _NOT_PLAIN
    out = {}
    for glob, codes in value.items():
        got = _strings(codes)
        if type(glob) is not str or got is _NOT_PLAIN:
            return _NOT_PLAIN
        out[glob] = got
    return out


def _strings(value: object) -> object:
    """A string list; one string is a one-item list."""
    if type(value) is str:
        return [value]
    if type(value) is list and all(type(x) is str for x in value):
        return list(value)
    return _NOT_PLAIN
