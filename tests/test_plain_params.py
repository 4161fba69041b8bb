"""The CLI's plain coercion (`meshdiag.cli.plain_params`) against typer's own: for every
parameter of every command, the same value back, or the same error, for values as the
command line gives them and for spellings it hands on to typer."""

from __future__ import annotations

import pytest
import typer
from typer import core
from typer.main import get_command

from meshdiag.cli import plain_params
from meshdiag.cli.app import build_app, main
from meshdiag.cli.commands import COMMANDS


def _params() -> list[tuple[str, object, object]]:
    """(command/param name, click command, param) of every command and subcommand."""
    out = []
    for name in COMMANDS:
        group = get_command(build_app(name))
        cmd = group.commands[name]  # type: ignore[attr-defined]
        todo = [(name, cmd)]
        while todo:
            label, c = todo.pop()
            todo.extend((f"{label} {n}", s) for n, s in getattr(c, "commands", {}).items())
            out.extend((f"{label} {p.name}", c, p) for p in c.params)
    return out


PARAMS = _params()

#: what a command line can hand a parameter, and spellings typer reads its own way
SAMPLES = [
    "",
    "x",
    "batch=2,model=4",
    "ü",
    "0",
    "7",
    "-3",
    "007",
    "+5",
    " 5",
    "1_000",
    "3.0",
    "99999999999999999999999",
    "-",
    b"bytes",
    3,
    True,
    False,
    ("a", "b"),
    ["MD1"],
    (),
    ("a", 3),
    3.5,
]


def _outcome(coerce, value, param, ctx):
    try:
        got = coerce(value, param=param, ctx=ctx)
    except Exception as e:  # the error a user would see
        return ("error", type(e).__name__, str(e))
    return ("value", type(got).__name__, got)


def test_the_hook_is_installed_and_covers_every_parameter():
    assert plain_params.install() is True
    assert getattr(core.build_runtime_param, "meshdiag_plain", False)
    kinds = {label: plain_params._kind(p.type_descriptor) for label, _, p in PARAMS}
    assert len(kinds) > 80
    # every parameter meshdiag has is one taken as it is: a new kind would quietly bring
    # back pydantic's adapters on every run
    assert {k for k, v in kinds.items() if v is None} == set()


@pytest.mark.parametrize(("label", "cmd", "param"), PARAMS, ids=[p[0] for p in PARAMS])
def test_same_answer_as_typer(label, cmd, param):
    plain_params.install()
    typer_build = core.build_runtime_param.typer_build
    desc = param.type_descriptor
    ours = core.build_runtime_param(desc)
    theirs = typer_build(desc)
    assert type(ours).__name__ == "PlainParam"
    ctx = typer._click.Context(cmd)
    for value in SAMPLES:
        assert _outcome(ours._coerce_value, value, param, ctx) == _outcome(
            theirs._coerce_value, value, param, ctx
        ), (label, value)


def test_an_unplain_value_gets_typers_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["lint", "fixtures/seed", "-j", "two"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "Invalid value for '--jobs' / '-j': Input should be a valid integer" in err


def test_an_older_typer_is_left_alone(monkeypatch):
    from typer import _coercion

    monkeypatch.delattr(core, "build_runtime_param")
    assert plain_params.install() is False
    monkeypatch.undo()
    monkeypatch.setattr(_coercion, "RuntimeParam", object)
    fresh = core.build_runtime_param.typer_build
    monkeypatch.setattr(core, "build_runtime_param", fresh)
    assert plain_params.install() is False
    assert core.build_runtime_param is fresh


@pytest.mark.parametrize(
    ("attr", "value"), [("min", 0), ("max", 0), ("min", 1), ("clamp", True), ("parser", int)]
)
def test_a_bounded_or_parsed_parameter_is_left_to_typer(attr, value):
    desc = next(p.type_descriptor for label, _, p in PARAMS if label.endswith(" jobs"))
    assert plain_params._kind(desc) is int
    info = desc.parameter_info
    saved = getattr(info, attr)
    setattr(info, attr, value)
    try:
        assert plain_params._kind(desc) is None
    finally:
        setattr(info, attr, saved)
