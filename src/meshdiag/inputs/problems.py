"""Validate a parsed file against a pydantic model; report the first problem in one line that
names the file, the line and the key path (`meshdiag.toml:3: 'fail-on' is 'loud'; ...`).

pydantic reports a value that fits none of a union's members once per member, with the
member's name in the location: those names are dropped (only keys and indices that are in
the data stay), and the deepest location wins, so `select = ["MD1", 3]` is reported at
`select[1]` and `mesh = 8` as "must be a string or a table".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from meshdiag.errors import LimitError, MeshdiagError
from meshdiag.inputs.keyline import KeyPath, key_line

if TYPE_CHECKING:  # (pydantic is imported where a model is validated: a plain config,
    # `plain_config`, and a located error of another kind need only `Source`)
    from pydantic import BaseModel, ValidationError

#: how a type is named to a user, per pydantic error type (TOML word first, JSON second)
_EXPECTED = {
    "string_type": ("a string", "a string"),
    "int_type": ("an integer", "an integer"),
    "int_parsing": ("an integer", "an integer"),
    "int_from_float": ("an integer", "an integer"),
    "bool_type": ("true or false", "true or false"),
    "float_type": ("a number", "a number"),
    "list_type": ("a list", "a list"),
    "tuple_type": ("a list", "a list"),
    "dict_type": ("a table", "an object"),
    "model_type": ("a table", "an object"),
    "model_attributes_type": ("a table", "an object"),
}


class FileError(MeshdiagError):
    """A problem at a line of a file the user wrote: `{path}:{line}: {detail}`."""

    def __init__(self, path: str, line: int, detail: str):
        self.path, self.line, self.detail = path, line, detail
        super().__init__(f"{path}:{line}: {detail}")


class FileLimitError(FileError, LimitError):
    """A file that declares more than the limits allow (a mesh with too many axes)."""


@dataclass(frozen=True)
class Source:
    """Where the parsed data came from, to locate problems in its text."""

    path: str | None  # the file, as messages name it (None: text given inline)
    text: str = ""  # its text, to find a key's line
    is_json: bool = False
    #: keys before the model's own (("tool", "meshdiag") for a pyproject table)
    prefix: tuple[str, ...] = ()

    def line(self, loc: KeyPath) -> int:
        return key_line(self.text, self.prefix + tuple(loc), is_json=self.is_json) or 1

    def located(self, loc: KeyPath, message: str, *, limit: bool = False) -> MeshdiagError:
        if self.path is None:
            return LimitError(message) if limit else MeshdiagError(message)
        return (FileLimitError if limit else FileError)(self.path, self.line(loc), message)


def key_path(loc: KeyPath) -> str:
    """`mesh.axes.x`, `select[1]`, `per-file-ignores."tests/*.mlir"` (TOML dotted keys)."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        bare = part and part.isascii() and all(c.isalnum() or c in "_-" for c in part)
        out += ("." if out else "") + (part if bare else json.dumps(part))
    return out


def _data_loc(loc: tuple, data: object) -> KeyPath:
    """`loc` without the union member tags pydantic adds: only keys and indices present."""
    out: list[str | int] = []
    node = data
    for part in loc:
        if isinstance(node, dict) and not isinstance(part, (list, dict)) and part in node:
            node = node[part]
        elif isinstance(node, (list, tuple)) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            continue
        out.append(part)
    return tuple(out)


def _show(value: object, limit: int = 40) -> str:
    text = repr(value)
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    return text.translate({c: 0x2400 + c for c in range(32)})


def _known_keys(model: type[BaseModel], loc: KeyPath) -> list[str]:
    """The keys the model accepts at the table `loc` (walking nested models by alias)."""
    from pydantic import BaseModel

    current: type[BaseModel] | None = model
    for part in loc:
        if current is None or not isinstance(part, str):
            return []
        nxt = None
        for name, f in current.model_fields.items():
            if (f.alias or name) == part:
                for t in (f.annotation, *getattr(f.annotation, "__args__", ())):
                    if isinstance(t, type) and issubclass(t, BaseModel):
                        nxt = t
        current = nxt
    if current is None:
        return []
    return sorted(f.alias or n for n, f in current.model_fields.items())


def validate(model: type[BaseModel], data: object, source: Source) -> BaseModel:
    """`model` validated from `data`; a one-line located MeshdiagError when it does not fit."""
    from pydantic import ValidationError

    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise problem(e, model, data, source) from None


def problem(
    e: ValidationError, model: type[BaseModel], data: object, source: Source
) -> MeshdiagError:
    errors = [(_data_loc(err["loc"], data), err) for err in e.errors()]
    deepest = max(len(loc) for loc, _ in errors)
    loc = next(loc for loc, _ in errors if len(loc) == deepest)
    same = [err for l2, err in errors if l2 == loc]
    # a union member whose type fit but whose content did not says more than the others
    first = next((err for err in same if err["type"] not in _EXPECTED), same[0])
    kind = first["type"]
    where = key_path(source.prefix + loc)
    if kind == "extra_forbidden" and loc:
        known = _known_keys(model, loc[:-1])
        table = key_path(source.prefix + loc[:-1])
        inside = (f'"{table}"' if source.is_json else f"[{table}]") if table else ""
        return source.located(
            loc,
            f"unknown key {loc[-1]!r}"
            + (f" in {inside}" if inside else "")
            + (f"; known keys: {', '.join(known)}" if known else ""),
        )
    if kind == "missing":
        missing = first["loc"][-1]
        return source.located(loc, f"missing key {missing!r} in {where or 'the file'}")
    if kind == "literal_error":
        allowed = first.get("ctx", {}).get("expected", "").replace("'", "")
        allowed = allowed.replace(" or ", ", ")
        return source.located(
            loc, f"{where!r} is {_show(first['input'])}; expected one of {allowed}"
        )
    wanted = [
        _EXPECTED[err["type"]][1 if source.is_json else 0]
        for err in same
        if err["type"] in _EXPECTED
    ]
    if wanted and len(wanted) == len(same):
        words = list(dict.fromkeys(wanted))
        return source.located(
            loc, f"{where!r} must be {' or '.join(words)}, not {_show(first['input'])}"
        )
    message = first["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
    message = message[:1].lower() + message[1:]
    return source.located(loc, f"{where!r}: {message}" if where else message)
