"""The lint configuration's model: `meshdiag.toml` (top-level keys) or `[tool.meshdiag]`.

A string where a list is expected is a one-item list (`select = "MD1"`), as before; keys are
the ones `meshdiag lint` has options for. `lint/config.py` finds the file and merges it with
the command line; this module only says what a valid table is.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt, StrictStr

from meshdiag.errors import MeshdiagError
from meshdiag.inputs.mesh_model import MeshTable
from meshdiag.inputs.problems import Source, validate
from meshdiag.model.findings import SEVERITIES
from meshdiag.model.splits import SPLIT_RULES


def _as_list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else value


#: a list of strings, or one string for a one-item list
Strings = Annotated[StrictStr | list[StrictStr], AfterValidator(_as_list)]


def _as_bytes(value: int | str) -> int:
    from meshdiag.notation.byte_size import parse_size

    try:
        return parse_size(value, "the value")
    except MeshdiagError as e:  # pydantic reports a ValueError at the key's line
        raise ValueError(str(e)) from None


#: a byte count: an integer or a string like '64MiB' (collective checks MD201, MD202)
Bytes = Annotated[StrictInt | StrictStr, AfterValidator(_as_bytes)]


class LintConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: mesh text, a mesh file (relative to the config's directory), or a mesh table
    mesh: StrictStr | MeshTable | None = None
    target: StrictStr | None = None
    split: Literal[SPLIT_RULES] | None = None  # type: ignore[valid-type]
    fail_on: Literal[SEVERITIES] | None = Field(None, alias="fail-on")  # type: ignore[valid-type]
    select: Strings | None = None
    extend_select: Strings | None = Field(None, alias="extend-select")
    ignore: Strings | None = None
    exclude: Strings | None = None
    #: glob -> codes
    per_file_ignores: dict[str, Strings] | None = Field(None, alias="per-file-ignores")
    collective_budget: Bytes | None = Field(None, alias="collective-budget")
    remat_min_bytes: Bytes | None = Field(None, alias="remat-min-bytes")


def validate_config(table: dict, source: Source) -> LintConfig:
    return validate(LintConfig, table, source)  # type: ignore[return-value]


def config_values(config: LintConfig) -> dict:
    """The keys the file set, by their TOML names (a mesh table as a plain dict)."""
    return config.model_dump(by_alias=True, exclude_unset=True, exclude_none=True)
