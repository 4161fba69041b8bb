"""Command-line values already of their parameter's type, taken as they are.

typer 0.29+ coerces every parameter of the invoked command through a pydantic TypeAdapter
it builds when the command runs (importing pydantic for it): about 50 ms of the 160 ms that
`meshdiag lint` of one small dump took, on every run of the CLI, most of it for options the
user did not give. meshdiag's parameters are all `str`, `int`, `bool` and `list[str]` with no
constraint (tests/test_plain_params.py holds that), and for those typer's adapters give back
what the command line holds: a str as it is, a bool flag's bool, each word of a list in a
list, a decimal integer's value. `install()` puts a coercion in front of typer's that does
just that for such values and hands anything else (`007`, `1_000`, bytes, ...) to typer's own
adapter, built then: its answers and error messages stay typer's.

It hooks one function of typer's (`typer.core.build_runtime_param`, which makes a
parameter's coercion when it is first used) and does nothing when the installed typer has
no such function (before 0.29) or its coercion contract is not the one read here: the CLI is
then as slow as typer makes it, never different.
"""

from __future__ import annotations

import re
from typing import Any

#: a decimal integer as `int()` and pydantic both read it (no sign `+`, no leading zeros,
#: no `_`, no spaces, short of any digit limit): anything else goes to typer
DECIMAL = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")

_LIST_STR = list[str]


def _plain(kind: object, value: Any) -> tuple[bool, Any]:
    """(True, what typer's adapter gives for `value`) when that is plain to see, else
    (False, None)."""
    t = type(value)
    if kind is str:
        return (True, value) if t is str else (False, None)
    if kind is bool:
        return (True, value) if t is bool else (False, None)
    if kind is int:
        if t is int:
            return True, value
        if t is str and DECIMAL.fullmatch(value):
            return True, int(value)
        return False, None
    if kind == _LIST_STR and (t is list or t is tuple):
        if all(type(x) is str for x in value):
            return True, list(value)
    return False, None


def _kind(descriptor: Any) -> object | None:
    """The parameter's type when it is one taken here as it is: `str`, `int`, `bool` or
    `list[str]`, with no parser, no file, no bounds; else None."""
    info = getattr(descriptor, "parameter_info", None)
    if info is None or getattr(descriptor, "file_annotation", True) is not None:
        return None
    for attr in ("parser", "min", "max", "clamp", "formats"):
        got = getattr(info, attr, None)
        if got is not None and got is not False:  # (a bound of 0 is a bound)
            return None
    annotation = getattr(descriptor, "annotation", None)
    if annotation in (str, int, bool) or annotation == _LIST_STR:
        return annotation
    return None


def install() -> bool:
    """Put the plain coercion in front of typer's, once; False when this typer's is not
    the one read here (nothing changed)."""
    try:
        from typer import _coercion, core
    except ImportError:
        return False
    build = getattr(core, "build_runtime_param", None)
    base = getattr(_coercion, "RuntimeParam", None)
    if build is None or base is None or getattr(build, "meshdiag_plain", False):
        return build is not None and base is not None
    import dataclasses

    if not dataclasses.is_dataclass(base) or not hasattr(base, "_coerce_value"):
        return False
    names = {f.name for f in dataclasses.fields(base)}
    if names != {"parameter_info", "annotation"}:
        return False

    @dataclasses.dataclass(frozen=True)
    class PlainParam(base):  # type: ignore[misc,valid-type]
        """typer's coercion of a plain parameter, built only for a value not plain."""

        kind: Any = None
        descriptor: Any = None

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            done, out = _plain(self.kind, value)
            if done:
                return out
            return build(self.descriptor)._coerce_value(value, param=param, ctx=ctx)

    def build_runtime_param(descriptor: Any) -> Any:
        kind = _kind(descriptor)
        if kind is None:
            return build(descriptor)
        return PlainParam(
            parameter_info=descriptor.parameter_info,
            annotation=descriptor.annotation,
            kind=kind,
            descriptor=descriptor,
        )

    build_runtime_param.meshdiag_plain = True  # type: ignore[attr-defined]
    build_runtime_param.typer_build = build  # type: ignore[attr-defined]
    core.build_runtime_param = build_runtime_param
    return True
