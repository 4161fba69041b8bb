"""`meshdiag lint PATH...`: the checks over IR dumps and mesh configs, for CI.

Exit status: 0 no findings at or above --fail-on, 1 findings, 2 usage or internal error.
"""

from __future__ import annotations

from typing import Annotated

import typer

from .common import MeshOpt, SplitOpt, TargetOpt

_CODES_HELP = "Comma-separated codes or prefixes (MD103, MD1, ALL); repeatable."


def register(app: typer.Typer) -> None:
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
        typer.Option("--format", "-f", help="text or json (alias of --output-format)."),
    ] = None,
    output_format: Annotated[
        str | None,
        typer.Option(
            "--output-format",
            help="full, concise, json, json-lines, sarif, github, junit, gitlab [default: full]",
        ),
    ] = None,
    output_file: Annotated[
        str | None, typer.Option("--output-file", "-o", help="Write the report here.")
    ] = None,
    select: Annotated[list[str] | None, typer.Option("--select", help=_CODES_HELP)] = None,
    extend_select: Annotated[
        list[str] | None, typer.Option("--extend-select", help="Codes to add. " + _CODES_HELP)
    ] = None,
    ignore: Annotated[
        list[str] | None, typer.Option("--ignore", help="Codes to skip. " + _CODES_HELP)
    ] = None,
    per_file_ignores: Annotated[
        list[str] | None,
        typer.Option(
            "--per-file-ignores",
            help="GLOB:CODE[,CODE] (globs relative to the working directory); repeatable.",
        ),
    ] = None,
    exclude: Annotated[
        list[str] | None,
        typer.Option("--exclude", help="Globs of files to skip (replaces the config's)."),
    ] = None,
    fail_on: Annotated[
        str | None,
        typer.Option("--fail-on", help="Lowest severity that fails: error, warning, info."),
    ] = None,
    exit_zero: Annotated[
        bool, typer.Option("--exit-zero", help="Exit 0 even when there are findings.")
    ] = False,
    statistics: Annotated[
        bool, typer.Option("--statistics", help="Count findings per code instead.")
    ] = False,
    baseline: Annotated[
        str | None,
        typer.Option("--baseline", help="Ignore findings recorded in this baseline file."),
    ] = None,
    write_baseline: Annotated[
        str | None,
        typer.Option("--write-baseline", help="Record every current finding here; exit 0."),
    ] = None,
    config: Annotated[
        str | None,
        typer.Option("--config", help="Config file (meshdiag.toml or pyproject.toml)."),
    ] = None,
    isolated: Annotated[bool, typer.Option("--isolated", help="Ignore every config file.")] = False,
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", "-j", help="Worker processes [default: all cores]; 1 = serial."),
    ] = None,
    collective_budget: Annotated[
        str | None,
        typer.Option(
            "--collective-budget",
            help="Bytes one collective may move per device (MD201): 65536, 64KiB, 1GB.",
        ),
    ] = None,
    remat_min_bytes: Annotated[
        str | None,
        typer.Option(
            "--remat-min-bytes",
            help="Smallest tensor whose full gather MD202 reports [default: 1MiB].",
        ),
    ] = None,
) -> int:
    """Lint IR dumps and mesh configs: ruff-style selection, suppressions, CI outputs."""
    import os
    import sys

    from ..checks.registry import all_rules
    from ..errors import MeshdiagError
    from ..lint import lint_paths
    from ..lint.config import CliOptions, resolve_settings
    from ..lint.outputs import FORMATS
    from ..lint.result import LintResult, OutputContext
    from ..lint.select import split_selectors

    fmt_name = _output_format(output_format, fmt, FORMATS)
    if config and isolated:
        raise MeshdiagError("--config and --isolated cannot be used together")
    paths = paths or ["."]
    if paths.count("-") > 1:
        raise MeshdiagError("'-' (stdin) can be given once")
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
    )
    settings = resolve_settings(cli, rules)
    cwd = os.getcwd()

    if write_baseline:
        from ..lint.suppress import write_baseline as write_bl

        result = lint_paths(paths, settings, jobs=jobs)
        n = write_bl(write_baseline, result.findings)
        print(f"meshdiag: wrote {n} finding(s) to baseline {write_baseline}", file=sys.stderr)
        return 0

    result: LintResult = lint_paths(paths, settings, jobs=jobs, baseline=baseline)
    ctx = OutputContext(
        cwd=cwd,
        rules={c: r for c, r in rules.items() if c in settings.codes},
        version=_version(),
        color=False if output_file else None,
    )
    _emit(result, fmt_name, statistics, output_file, ctx)
    failing = result.at_or_above(settings.fail_on)
    return 1 if failing and not exit_zero else 0


def _output_format(output_format: str | None, fmt: str | None, formats) -> str:
    from ..errors import MeshdiagError

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

    from ..errors import MeshdiagError
    from ..lint import outputs
    from ..lint.outputs import statistics as stats

    def render(stream) -> None:
        if statistics:
            stats.write(result, stream, ctx, as_json=fmt in ("json", "json-lines"))
        else:
            outputs.write(fmt, result, stream, ctx)

    if output_file is None:
        render(sys.stdout)
        sys.stdout.flush()
        return
    try:
        with open(output_file, "w", encoding="utf-8", newline="\n") as fh:
            render(fh)
    except OSError as e:
        raise MeshdiagError(f"cannot write {output_file}: {e.strerror or e}") from None


def _version() -> str:
    from .. import __version__

    return __version__
