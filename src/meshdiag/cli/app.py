"""The `meshdiag` command line: a thin typer app. Commands live in `meshdiag.cli.commands.*`.

The app is built per run with only the invoked command registered: typer (0.29+) builds a
pydantic validator for every parameter of every registered command when it runs, so building
all six commands to run one doubles the start-up. `meshdiag --help`, no command, or an
unknown one registers them all. `inspect` and `lint` command lines that typer would read
plainly run without importing typer at all (`cli.direct`).

Errors a user can cause (`MeshdiagError`) print one line on stderr and exit 2; anything else
is reported as an internal error in one line too, with the traceback only under
MESHDIAG_DEBUG=1.
"""

from __future__ import annotations

import errno
import functools
import importlib
import os
import signal
import sys
from typing import TYPE_CHECKING, Annotated

from meshdiag import __version__
from meshdiag.cli.commands import COMMANDS

if TYPE_CHECKING:
    import typer


def version_text() -> str:
    """`meshdiag --version`: the version and which IR scanner this install runs."""
    from meshdiag.ir.lines import scanner_kind

    return f"meshdiag {__version__} (scanner: {scanner_kind()})"


def _version(value: bool) -> None:
    if value:
        import typer

        print(version_text())
        raise typer.Exit()


def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
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
    import typer

    from meshdiag.cli.commands.common import bind_typer_names
    from meshdiag.cli.plain_params import install

    bind_typer_names(globals())  # what `_root`'s annotation names

    install()  # plain values taken as they are, not through pydantic (see the module)
    app = typer.Typer(
        name="meshdiag",
        help="Diagnose device-mesh sharding: per-device layouts, IR dumps, distorted meshes, "
        "uneven shards, host-to-device copies.",
        no_args_is_help=True,
        add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish
        context_settings={"help_option_names": ["-h", "--help"]},
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    app.callback()(_root)
    for name, module in COMMANDS.items():
        if command is None or name == command:
            importlib.import_module(f"meshdiag.cli.commands.{module}").register(_Commands(app))
    return app


class _OutputClosed(BaseException):
    """Standard output's reader went away (`meshdiag ... | head`) while a command wrote:
    its BrokenPipeError, carried to `_run` (which exits 0 for it). The command-line library
    turns a BrokenPipeError raised in a command into exit 1, so a pipe closed mid-output
    exited 1 and one closed at the last flush 0."""


class _Commands:
    """What a command module registers its command with (`register(app)`): the app's
    `command`, each command run so that its BrokenPipeError comes out as `_OutputClosed`."""

    def __init__(self, app: typer.Typer) -> None:
        self._app = app

    def command(self, *args, **kwargs):
        register = self._app.command(*args, **kwargs)

        def decorator(fn):
            register(closing_output(fn))
            return fn

        return decorator


def closing_output(fn):
    """`fn`, with a BrokenPipeError it raises coming out as `_OutputClosed`."""

    @functools.wraps(fn)  # (typer reads the parameters through `__wrapped__`)
    def run(*a, **kw):
        try:
            return fn(*a, **kw)
        except BrokenPipeError as e:
            raise _OutputClosed from e

    return run


class _Signalled(BaseException):
    """SIGINT (Ctrl-C) or SIGTERM, raised in the main thread so `finally` blocks clean up
    (spool directories, worker pools, temporary files) before the one-line exit. Not a
    KeyboardInterrupt: the command-line library would turn that into a silent exit 130."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _on_signal(signum, frame) -> None:
    raise _Signalled(signum)


class _ClosedStream:
    """Stands in for a standard output that was closed (`>&-`): writing to it is an error
    the CLI reports in one line, like a full disk."""

    encoding = "utf-8"
    errors = "strict"

    @property
    def buffer(self) -> _ClosedStream:
        return self

    def _fail(self, *args, **kwargs):
        raise OSError(errno.EBADF, "standard output is closed")

    write = fileno = _fail

    def flush(self) -> None:  # nothing was written: nothing to lose
        pass

    def isatty(self) -> bool:
        return False


def _prepare_streams() -> None:
    """Standard output that is closed, or whose encoding cannot show the drawings (an
    ASCII-only terminal), still gets one-line errors and legible output: unencodable
    characters become '?' (rich draws ASCII boxes for such a stream). File names that are
    not UTF-8 are written back as the bytes they are."""
    if sys.stdout is None:
        sys.stdout = _ClosedStream()  # type: ignore[assignment]
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        encoding = (getattr(stream, "encoding", None) or "utf-8").lower().replace("_", "-")
        if not hasattr(stream, "reconfigure"):
            continue
        if not encoding.startswith("utf"):
            stream.reconfigure(errors="replace")
        elif getattr(stream, "errors", None) == "strict":
            stream.reconfigure(errors="surrogateescape")  # non-UTF-8 file names, as they are


def _silence_stdout() -> None:
    """After a failed write to stdout, point it at /dev/null so the interpreter's final
    flush does not fail again with a second message."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _error(message: str) -> None:
    """One line on stderr, whatever characters `message` holds (file names that are not
    UTF-8 come as surrogate escapes)."""
    line = f"meshdiag: {message}"
    try:
        print(line, file=sys.stderr)
    except UnicodeEncodeError:
        print(line.encode("utf-8", "backslashreplace").decode("ascii", "replace"), file=sys.stderr)
    except (OSError, ValueError, AttributeError):  # no stderr either: the exit code says it
        pass


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; exits with its status. Ctrl-C and SIGTERM are handled while it runs
    (the caller's handlers are restored afterwards: tests call this in-process)."""
    _prepare_streams()
    saved = {}
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(signum) in (signal.default_int_handler, signal.SIG_DFL):
                saved[signum] = signal.signal(signum, _on_signal)
    except ValueError:  # not the main thread (embedded): leave signals alone
        pass
    own_process = argv is None  # the `meshdiag` command itself, not a call in-process
    if own_process:
        from meshdiag.cli.runtime import single_threaded_blas, tune_gc

        tune_gc()
        single_threaded_blas()
    try:
        _run(argv)
    except SystemExit as e:
        if own_process:
            from meshdiag.cli.runtime import exit_now

            exit_now(e.code)  # ends here unless the output cannot be flushed
        raise
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


def _run(argv: list[str] | None) -> None:
    from meshdiag.cli.direct import Aborted, run
    from meshdiag.errors import MeshdiagError

    args = sys.argv[1:] if argv is None else argv
    debug = os.environ.get("MESHDIAG_DEBUG") == "1"
    try:
        ran, rc = run(args, closing_output)
        if not ran:
            rc = _run_typer(args)
        sys.stdout.flush()  # a full disk shows here, not at interpreter exit
    except Aborted:
        _error("aborted")
        sys.exit(2)
    except MeshdiagError as e:
        if debug:
            raise
        _error(f"error: {e}")
        sys.exit(2)
    except (BrokenPipeError, _OutputClosed):  # the reader has what it wanted: not an error
        _silence_stdout()
        sys.exit(0)
    except (KeyboardInterrupt, _Signalled) as e:
        signum = e.signum if isinstance(e, _Signalled) else signal.SIGINT
        _error("interrupted" if signum == signal.SIGINT else "terminated")
        sys.exit(128 + signum)
    except OSError as e:  # the environment failed us: a full disk, a closed stdout
        if debug:
            raise
        from meshdiag.fileio import describe_os_error

        if e.filename:  # a file the command opened itself
            name = e.filename
            name = os.fsdecode(name) if isinstance(name, (str, bytes)) else name
            _error(f"error: {name}: {describe_os_error(e)}")
        else:  # standard output: the only stream written without a name
            _error(f"error: cannot write output: {describe_os_error(e)}")
        _silence_stdout()
        sys.exit(2)
    except RecursionError:  # input nested beyond what a parser could follow
        if debug:
            raise
        _error("error: the input is nested too deeply to read")
        sys.exit(2)
    except Exception as e:  # a bug: one line, traceback on request
        if debug:
            raise
        _error(f"internal error: {type(e).__name__}: {e} (set MESHDIAG_DEBUG=1 for the traceback)")
        sys.exit(2)
    sys.exit(rc if isinstance(rc, int) else 0)


def _run_typer(args: list[str]) -> object:
    """The command line run by typer: its usage errors shown the way it shows them."""
    import typer

    try:
        return build_app(invoked_command(args))(
            args=args, prog_name="meshdiag", standalone_mode=False
        )
    except typer.TyperException as e:
        show = getattr(e, "show", None)
        if show is not None:
            show()
        else:
            _error(f"error: {e.format_message()}")
        sys.exit(2)
    except typer.Abort:
        _error("aborted")
        sys.exit(2)
