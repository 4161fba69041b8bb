"""The `meshdiag` command line: a thin typer app. Commands live in `meshdiag.commands.*`.

Errors a user can cause (`MeshdiagError`) print one line on stderr and exit 2; anything else
is reported as an internal error in one line too, with the traceback only under
MESHDIAG_DEBUG=1.
"""

from __future__ import annotations

import importlib
import os
import sys

import typer

from . import __version__
from .commands import COMMANDS

app = typer.Typer(
    name="meshdiag",
    help="Diagnose device-mesh sharding: per-device layouts, IR dumps, distorted meshes, "
    "uneven shards, host-to-device copies.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        print(f"meshdiag {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version and exit."
    ),
) -> None:
    """meshdiag: which slice of each tensor every device holds, and what is wrong with it."""


for _name in COMMANDS:
    try:
        _mod = importlib.import_module(f"meshdiag.commands.{_name}")
    except ModuleNotFoundError as _e:  # a command not written yet
        if _e.name != f"meshdiag.commands.{_name}":
            raise
        continue
    _mod.register(app)


def main(argv: list[str] | None = None) -> None:
    from typer._click.exceptions import ClickException

    from .errors import MeshdiagError

    debug = os.environ.get("MESHDIAG_DEBUG") == "1"
    try:
        rc = app(args=argv, prog_name="meshdiag", standalone_mode=False)
    except ClickException as e:  # usage errors: typer prints them like click does
        e.show()
        sys.exit(2)
    except typer.Abort:
        print("meshdiag: aborted", file=sys.stderr)
        sys.exit(2)
    except MeshdiagError as e:
        if debug:
            raise
        print(f"meshdiag: error: {e}", file=sys.stderr)
        sys.exit(2)
    except BrokenPipeError:
        sys.exit(0)
    except KeyboardInterrupt:
        print("meshdiag: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as e:  # a bug: one line, traceback on request
        if debug:
            raise
        print(
            f"meshdiag: internal error: {type(e).__name__}: {e} "
            "(set MESHDIAG_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        sys.exit(2)
    sys.exit(rc if isinstance(rc, int) else 0)
