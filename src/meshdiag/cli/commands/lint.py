"""`meshdiag lint PATH...`: the checks over IR dumps and mesh configs, for CI.

Exit status: 0 no findings at or above --fail-on, 1 findings, 2 usage or internal error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from meshdiag.cli.commands import CommandApp
from meshdiag.cli.commands.common import bind_typer_names

if TYPE_CHECKING:  # bound when registered (`bind_typer_names`): run directly without typer
    import typer

    from meshdiag.cli.commands.options import BudgetOpt, MeshOpt, RematOpt, SplitOpt, TargetOpt

_CODES_HELP = "Comma-separated codes or prefixes (MD103, MD1, ALL); repeatable."


def register(app: CommandApp) -> None:
    bind_typer_names(globals())
    app.command(name="lint")(lint)


def lint(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            help="Dump files and directories, mesh configs, '-' for a dump on stdin [default: .]"
        ),
    ] = None,
    mesh: MeshOpt = None,
    target: TargetOpt = None,
    split: SplitOpt = None,
    fmt: Annotated[
        str | None,
        typer.Option("--format", "-f", metavar="FORMAT", help="text, json or any --output-format."),
    ] = None,
    output_format: Annotated[
        str | None,
        typer.Option(
            "--output-format",
            metavar="[full|concise|json|json-lines|sarif|github|junit|gitlab]",
            help="Report format [default: full].",
        ),
    ] = None,
    output_file: Annotated[
        str | None,
        typer.Option("--output-file", "-o", metavar="FILE", help="Write the report here."),
    ] = None,
    select: Annotated[
        list[str] | None, typer.Option("--select", metavar="CODES", help=_CODES_HELP)
    ] = None,
    extend_select: Annotated[
        list[str] | None,
        typer.Option("--extend-select", metavar="CODES", help="Codes to add. " + _CODES_HELP),
    ] = None,
    ignore: Annotated[
        list[str] | None,
        typer.Option("--ignore", metavar="CODES", help="Codes to skip. " + _CODES_HELP),
    ] = None,
    per_file_ignores: Annotated[
        list[str] | None,
        typer.Option(
            "--per-file-ignores",
            metavar="GLOB:CODES",
            help="GLOB:CODE[,CODE] (globs relative to the working directory); repeatable.",
        ),
    ] = None,
    exclude: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude", metavar="GLOB", help="Globs of files to skip (replaces the config's)."
        ),
    ] = None,
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            metavar="[error|warning|info]",
            help="Lowest severity that fails [default: warning].",
        ),
    ] = None,
    exit_zero: Annotated[
        bool, typer.Option("--exit-zero", help="Exit 0 even when there are findings.")
    ] = False,
    statistics: Annotated[
        bool, typer.Option("--statistics", help="Count findings per code instead.")
    ] = False,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline", metavar="FILE", help="Ignore findings recorded in this baseline file."
        ),
    ] = None,
    write_baseline: Annotated[
        str | None,
        typer.Option(
            "--write-baseline", metavar="FILE", help="Record every current finding here; exit 0."
        ),
    ] = None,
    config: Annotated[
        str | None,
        typer.Option(
            "--config", metavar="FILE", help="Config file (meshdiag.toml or pyproject.toml)."
        ),
    ] = None,
    isolated: Annotated[bool, typer.Option("--isolated", help="Ignore every config file.")] = False,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs", "-j", metavar="N", help="Worker processes [default: all cores]; 1 = serial."
        ),
    ] = None,
    color: Annotated[
        str,
        typer.Option(
            "--color",
            metavar="[auto|always|never]",
            help="Colour the full output: auto (terminals, unless NO_COLOR is set), always, never.",
        ),
    ] = "auto",
    stdin_filename: Annotated[
        str | None,
        typer.Option(
            "--stdin-filename",
            metavar="PATH",
            help="What to call a dump read from '-' in reports and --per-file-ignores.",
        ),
    ] = None,
    collective_budget: BudgetOpt = None,
    remat_min_bytes: RematOpt = None,
) -> int:
    """Lint IR dumps and mesh configs: ruff-style selection, suppressions, CI outputs."""
    import os
    import sys

    from meshdiag.checks.registry import all_rules
    from meshdiag.errors import MeshdiagError
    from meshdiag.lint import lint_paths
    from meshdiag.lint.config import CliOptions, resolve_settings
    from meshdiag.lint.result import LintResult, OutputContext
    from meshdiag.lint.select import split_selectors
    from meshdiag.report.lint import FORMATS

    fmt_name = _output_format(output_format, fmt, FORMATS)
    if config and isolated:
        raise MeshdiagError("--config and --isolated cannot be used together")
    paths = paths or ["."]
    if paths.count("-") > 1:
        raise MeshdiagError("'-' (stdin) can be given once")
    if color not in _COLORS:
        raise MeshdiagError(f"unknown --color {color!r}; expected one of {', '.join(_COLORS)}")
    if stdin_filename is not None and "-" not in paths:
        raise MeshdiagError("--stdin-filename names a dump read from '-'; no '-' was given")
    _refuse_overwriting_inputs(
        {"--output-file": output_file, "--write-baseline": write_baseline},
        [*paths, *(p for p in (baseline, config) if p)],
    )
    rules = {r.code: r for r in all_rules()}
    cli = CliOptions(
        select=split_selectors(select),
        extend_select=split_selectors(extend_select) or (),
        ignore=split_selectors(ignore) or (),
        per_file_ignores=tuple(per_file_ignores or ()),
        exclude=tuple(exclude or ()),
        mesh=mesh,
        target=target,
        split=split,
        fail_on=fail_on,
        config=config,
        isolated=isolated,
        collective_budget=collective_budget,
        remat_min_bytes=remat_min_bytes,
        stdin_filename=stdin_filename,
    )
    settings = resolve_settings(cli, rules)
    cwd = os.getcwd()

    if write_baseline:
        from meshdiag.lint.suppress import write_baseline as write_bl

        result = lint_paths(paths, settings, jobs=jobs)
        n = write_bl(write_baseline, result.findings)
        print(f"meshdiag: wrote {n} finding(s) to baseline {write_baseline}", file=sys.stderr)
        return 0

    result: LintResult = lint_paths(paths, settings, jobs=jobs, baseline=baseline)
    ctx = OutputContext(
        cwd=cwd,
        rules={c: r for c, r in rules.items() if c in settings.codes},
        version=_version(),
        color=False if output_file or color == "never" else (True if color == "always" else None),
    )
    _emit(result, fmt_name, statistics, output_file, ctx)
    failing = result.at_or_above(settings.fail_on)
    return 1 if failing and not exit_zero else 0


_COLORS = ("auto", "always", "never")


def _refuse_overwriting_inputs(outputs: dict[str, str | None], inputs: list[str]) -> None:
    """An output file that is one of the inputs would destroy what is being read."""
    from meshdiag.errors import MeshdiagError
    from meshdiag.fileio import same_file

    for option, out in outputs.items():
        if not out:
            continue
        for p in inputs:
            if p != "-" and same_file(out, p):
                raise MeshdiagError(f"{option} {out} is an input ({p}); write the report elsewhere")


def _output_format(output_format: str | None, fmt: str | None, formats) -> str:
    from meshdiag.errors import MeshdiagError

    if output_format is not None:
        if output_format not in formats:
            raise MeshdiagError(
                f"unknown --output-format {output_format!r}; expected one of {', '.join(formats)}"
            )
        return output_format
    if fmt is None or fmt == "text":
        return "full"
    if fmt in formats:  # --format json, --format sarif, ...
        return fmt
    raise MeshdiagError(f"unknown --format {fmt!r}; expected text, json or an --output-format")


def _emit(result, fmt: str, statistics: bool, output_file: str | None, ctx) -> None:
    import sys

    from meshdiag.report import lint as outputs

    def render(stream) -> None:
        if statistics:
            from meshdiag.report.lint import statistics as stats

            stats.write(result, stream, ctx, as_json=fmt in ("json", "json-lines"))
        else:
            outputs.write(fmt, result, stream, ctx)

    if output_file is None:
        render(sys.stdout)
        sys.stdout.flush()
        return
    from meshdiag.fileio import atomic_writer

    # the old report stays whole until the new one is
    with atomic_writer(output_file, "--output-file") as fh:
        render(fh)


def _version() -> str:
    from meshdiag import __version__

    return __version__
