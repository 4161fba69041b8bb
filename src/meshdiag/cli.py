"""The `meshdiag` command line: a thin typer app. Commands live in `meshdiag.commands.*`.

The app is built per run with only the invoked command registered: typer (0.29+) builds a
pydantic validator for every parameter of every registered command when it runs, so building
all six commands to run one doubles the start-up. `meshdiag --help`, no command, or an
unknown one registers them all.

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


def version_text() -> str:
    """`meshdiag --version`: the version and which IR scanner this install runs."""
    from .ir.lines import scanner_kind

    return f"meshdiag {__version__} (scanner: {scanner_kind()})"


def _version(value: bool) -> None:
    if value:
        print(version_text())
        raise typer.Exit()


def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version and exit."
    ),
) -> None:
    """meshdiag: which slice of each tensor every device holds, and what is wrong with it."""


def invoked_command(argv: list[str]) -> str | None:
    """The command name `argv` invokes, or None (help, --version, no or unknown command).
    The root takes no option with a value, so the first non-option word is the command."""
    for arg in argv:
        if arg == "--":
            return None
        if not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def build_app(command: str | None = None) -> typer.Typer:
    """The typer app with `command` registered (every command when None)."""
    app = typer.Typer(
        name="meshdiag",
        help="Diagnose device-mesh sharding: per-device layouts, IR dumps, distorted meshes, "
        "uneven shards, host-to-device copies.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    app.callback()(_root)
    for name, module in COMMANDS.items():
        if command is None or name == command:
            importlib.import_module(f"meshdiag.commands.{module}").register(app)
    return app


def main(argv: list[str] | None = None) -> None:
    from .errors import MeshdiagError

    args = sys.argv[1:] if argv is None else argv
    debug = os.environ.get("MESHDIAG_DEBUG") == "1"
    try:
        app = build_app(invoked_command(args))
        rc = app(args=args, prog_name="meshdiag", standalone_mode=False)
    except typer.TyperException as e:  # usage errors: shown the way click shows them
        show = getattr(e, "show", None)
        if show is not None:
            show()
        else:
            print(f"meshdiag: error: {e.format_message()}", file=sys.stderr)
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
