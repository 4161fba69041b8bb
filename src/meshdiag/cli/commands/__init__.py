"""One module per CLI command. Each defines `register(app)` and imports only typer at module
level: heavy imports (numpy, rich) happen inside the command body, so
`meshdiag --help` stays fast. `inspect` and `lint` do not import typer either: they also run
without it (`cli.direct`), and bind what their signatures name when registered
(`common.bind_typer_names`). `app` is what a command registers with: typer's
`app.command`, as `cli.app` wraps it (`CommandApp`)."""

from collections.abc import Callable
from typing import Any, Protocol


class CommandApp(Protocol):
    """What `register(app)` is given: `app.command(name, ...)` decorates the command."""

    def command(self, *args: Any, **kwargs: Any) -> Callable[[Callable], Callable]: ...


#: command name -> its module, in the order `meshdiag --help` lists them. The CLI registers
#: only the invoked command (typer builds a validator per parameter of every registered
#: command at each run), all of them for `--help` and anything it does not recognise.
COMMANDS = {
    "layout": "layout",
    "inspect": "inspect",
    "simulate-copy": "simulate",
    "lint": "lint",
    "comms": "comms",
    "convert": "convert",
    "diff": "diff",
    "reshard": "reshard",
    "trace": "trace",
    "rule": "rule",
    "schema": "schema",
}
