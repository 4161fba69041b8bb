"""What each fuzz harness checks, as plain functions of one input (no atheris needed).

The harnesses (`fuzz_*.py`) feed fuzzer bytes here; `tests/test_fuzz_regressions.py` replays
the inputs that once crashed through the same functions. A function returns normally when
meshdiag behaved: it parsed the input (and what it parsed prints and reads back the same), or it
refused it with a `MeshdiagError` (a `ParseError` pointing inside the text). Anything else — a
bare Python exception, a failed round trip, a column off the text — propagates, and the fuzzer
records it as a crash.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os

from meshdiag.errors import MeshdiagError, ParseError

#: inputs longer than this are cut: the parsers' own length limit is tested elsewhere, and
#: short inputs keep the fuzzer fast
MAX_INPUT = 4096


@contextlib.contextmanager
def keep_on_crash(data: bytes):
    """Save the input before a crash propagates (libFuzzer does not always get to write its
    artifact when a Python exception ends the process): `$MESHDIAG_FUZZ_CRASHES/<hash>`."""
    try:
        yield
    except BaseException:
        out = os.environ.get("MESHDIAG_FUZZ_CRASHES")
        if out:
            os.makedirs(out, exist_ok=True)
            name = "crash-" + hashlib.sha1(data).hexdigest()
            with open(os.path.join(out, name), "wb") as f:
                f.write(data)
        raise


def decode(data: bytes) -> str:
    return data[:MAX_INPUT].decode("utf-8", errors="replace")


def _check_error(err: MeshdiagError, text: str) -> None:
    if isinstance(err, ParseError):
        if not 1 <= err.column <= len(err.text) + 1:
            raise AssertionError(f"ParseError column {err.column} outside its text: {err}")
    msg = str(err)
    if not msg or "\n" in msg.strip():
        raise AssertionError(f"error message is not one line: {msg!r}")


def _guard(fn, text: str):
    """`fn(text)`, or None when it raised a clean meshdiag error."""
    try:
        return fn(text)
    except MeshdiagError as err:
        _check_error(err, text)
        return None


# -- GSPMD (V1/V2/V3) and notation detection ------------------------------------------------


def check_gspmd(text: str) -> None:
    from meshdiag.notation.detect import parse_sharding
    from meshdiag.notation.gspmd import parse_gspmd, print_gspmd, validate_hlo

    s = _guard(
        parse_gspmd.__wrapped__ if hasattr(parse_gspmd, "__wrapped__") else parse_gspmd, text
    )
    if s is not None:
        printed = print_gspmd(s, metadata=True)
        again = parse_gspmd(printed)
        if again != s:
            raise AssertionError(f"round trip changed {text!r}: {printed!r} -> {again!r}")
        if print_gspmd(again, metadata=True) != printed:
            raise AssertionError(f"canonical text not stable for {text!r}: {printed!r}")
        v1 = print_gspmd(s, form="v1", metadata=True)
        if parse_gspmd(v1) != s:
            raise AssertionError(f"V1 form reads back different for {text!r}: {v1!r}")
        validate_hlo(s)
        if s.named is not None:
            from meshdiag.notation.gspmd_v3 import print_v3

            _guard(lambda _: print_v3(s.named), text)
    _guard(parse_sharding, text)


# -- Shardy -----------------------------------------------------------------------------------


def check_shardy(text: str) -> None:
    from meshdiag.notation.shardy import (
        parse_mesh_attr,
        parse_sdy_sharding,
        parse_sharding_per_value,
        print_mesh_attr,
        print_sdy_sharding,
        print_sharding_per_value,
        verify_mesh,
        verify_named,
    )

    s = _guard(parse_sdy_sharding, text)
    if s is not None:
        printed = print_sdy_sharding(s)
        again = parse_sdy_sharding(printed)
        if again != s:
            raise AssertionError(f"round trip changed {text!r}: {printed!r}")
        if print_sdy_sharding(again) != printed:
            raise AssertionError(f"canonical text not stable for {text!r}")
        if s.mesh is not None:
            verify_named(s, s.mesh)
            _guard(lambda _: _to_hlo(s), text)
    m = _guard(parse_mesh_attr, text)
    if m is not None:
        printed = print_mesh_attr(m)
        if parse_mesh_attr(printed) != m or print_mesh_attr(parse_mesh_attr(printed)) != printed:
            raise AssertionError(f"mesh round trip changed {text!r}: {printed!r}")
    verify_mesh(text)
    vs = _guard(parse_sharding_per_value, text)
    if vs is not None:
        printed = print_sharding_per_value(list(vs))
        if list(parse_sharding_per_value(printed)) != list(vs):
            raise AssertionError(f"per-value round trip changed {text!r}: {printed!r}")


def _to_hlo(s):
    from meshdiag.model.named_to_tiled import named_to_hlo

    return named_to_hlo(s)


# -- mesh text and PartitionSpecs -----------------------------------------------------------


def check_mesh(text: str) -> None:
    from meshdiag.inputs.mesh_input import parse_mesh
    from meshdiag.notation.pspec import named_to_pspec, parse_pspec, pspec_to_named

    # parse_mesh reads a file when the text looks like a path; the fuzzer must not go there
    if "/" in text or text.strip().lower().endswith((".toml", ".json")):
        text = text.replace("/", "|")
        if text.strip().lower().endswith((".toml", ".json")):
            text += "!"
    mesh = _guard(parse_mesh, text)
    if mesh is not None and mesh.axes and not mesh.is_maximal:
        from meshdiag.notation.shardy import parse_mesh_attr, print_mesh_attr

        if parse_mesh_attr(print_mesh_attr(mesh)) != mesh:
            raise AssertionError(f"mesh {text!r} does not survive the Shardy form")
    spec = _guard(parse_pspec, text)
    if spec is not None:
        names = sorted({n for e in spec if e for n in e})
        target = mesh if mesh is not None else None
        if target is None and names and all(n.isidentifier() for n in names):
            target = _guard(parse_mesh, ",".join(f"{n}=2" for n in names[:8]))
        if target is not None:
            named = _guard(lambda _: pspec_to_named(spec, target), text)
            if named is not None:
                printed = named_to_pspec(named)
                if printed is not None:
                    back = pspec_to_named(parse_pspec(printed), target)
                    if back != named:
                        raise AssertionError(f"PartitionSpec {text!r} -> {printed!r} differs")


# -- config and mesh files -----------------------------------------------------------------


def check_files(text: str) -> None:
    """The text as a `meshdiag.toml`, a TOML mesh file and a JSON mesh file: each is accepted
    or refused with one line, and a located error points at a line of the text."""
    import json
    import tomllib

    from meshdiag.inputs.config_model import validate_config
    from meshdiag.inputs.mesh_input import config_mesh, read_mesh_file
    from meshdiag.inputs.mesh_model import MeshTable
    from meshdiag.inputs.problems import FileError, Source

    # a mesh given as text may name a file; the fuzzer must not read any
    text = text.replace("/", "|").replace(".toml", ".t").replace(".json", ".j")
    n_lines = text.count("\n") + 1

    def located(fn) -> None:
        try:
            fn()
        except FileError as err:
            _check_error(err, text)
            if not 1 <= err.line <= n_lines:
                raise AssertionError(f"error line {err.line} outside the text: {err}") from None
        except MeshdiagError as err:
            _check_error(err, text)

    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        table = None
    if table is not None:
        source = Source("meshdiag.toml", text)

        def config() -> None:
            cfg = validate_config(table, source)
            if isinstance(cfg.mesh, MeshTable):
                config_mesh(cfg, source, ".")

        located(config)
    raw = text.encode("utf-8", errors="replace")
    located(lambda: read_mesh_file("m.toml", raw))
    with contextlib.suppress(ValueError):
        json.loads(text)
        located(lambda: read_mesh_file("m.json", raw))


# -- the IR scanner ---------------------------------------------------------------------------


def check_scan(data: bytes) -> None:
    """Scan the bytes as a dump file, run every module check, build the inspect JSON, and
    each module's text summary and directory-summary rows (the native grouping and rows)."""
    import json

    from meshdiag.ir.scan import scan_file
    from meshdiag.memo import RunMemos
    from meshdiag.model.mesh import Mesh
    from meshdiag.pipeline.dump_summary import module_rows
    from meshdiag.pipeline.inspect import file_json, run_checks
    from meshdiag.pipeline.module_summary import summarise_module
    from meshdiag.report.file_text import render_module
    from meshdiag.report.plain_console import PlainConsole

    data = data[: MAX_INPUT * 4]
    runs = (
        ("fuzz.mlir", None, None, "xla"),
        (
            "module.after_spmd-partitioning.txt",
            Mesh((("batch", 2), ("model", 4))),
            "tt-mlir",
            "chunk",
        ),
    )
    for name, mesh, target, split in runs:
        try:
            report = scan_file(name, io.BytesIO(data))
            run_checks(report, mesh, target, split)
            json.dumps(file_json(report, mesh=mesh, split=split, layouts=True))
            memos, console = RunMemos(), PlainConsole(io.StringIO(), 100, 25)
            for m in report.modules:
                module_rows(m, mesh, memos)
                render_module(summarise_module(m, mesh=mesh, split=split, memos=memos), console)
        except MeshdiagError as err:
            _check_error(err, "")


# -- the collective scan -------------------------------------------------------------------------


def check_comms(data: bytes | str) -> None:
    """Scan the bytes for collectives, measure and check them on a mesh, build the JSON and
    the text: nothing may raise, every problem points inside the text, no byte count is
    negative."""
    import json

    from meshdiag.checks.context import CheckContext
    from meshdiag.comms.report import JsonWriter
    from meshdiag.comms.scan import scan_stream
    from meshdiag.model.mesh import Mesh
    from meshdiag.pipeline.comms_checks import run_collective_checks
    from meshdiag.report.comms_text import TextWriter

    raw = (data.encode() if isinstance(data, str) else data)[: MAX_INPUT * 4]
    lines = raw.split(b"\n")
    for mesh in (None, Mesh((("batch", 2), ("model", 4)))):
        f = scan_stream("fuzz.txt", io.BytesIO(raw))
        for p in f.problems:
            if p.line and not (
                1 <= p.line <= len(lines) and 1 <= p.column <= len(lines[p.line - 1]) + 1
            ):
                raise AssertionError(f"problem outside the text: {p}")
        ctx = CheckContext("fuzz.txt", mesh=mesh, collective_budget=0, remat_min_bytes=0)
        measured, findings = run_collective_checks(f, ctx)
        for mc in measured.modules:
            for r in mc.rows:
                if r.traffic is not None and min(r.traffic.sent, r.traffic.received) < 0:
                    raise AssertionError(f"negative bytes: {r}")
        doc: list[str] = []  # what `meshdiag comms` writes, JSON and text
        for w in (JsonWriter(doc.append, mesh), TextWriter([].append)):
            w.file(measured)
            w.end(findings)
        json.loads("".join(doc))  # one valid document


def preload() -> None:
    """Import every meshdiag module the checks reach (harnesses call this while atheris
    instruments imports, so coverage guides the fuzzer through meshdiag's code)."""
    import importlib

    for name in (
        "meshdiag.errors",
        "meshdiag.limits",
        "meshdiag.model.mesh",
        "meshdiag.model.tiles",
        "meshdiag.model.sharding",
        "meshdiag.notation._cursor",
        "meshdiag.notation.gspmd",
        "meshdiag.notation.gspmd_v3",
        "meshdiag.notation.shardy",
        "meshdiag.notation.pspec",
        "meshdiag.notation.meshtext",
        "meshdiag.notation.detect",
        "meshdiag.model.named_to_tiled",
        "meshdiag.model.derive",
        "meshdiag.layouts.engine",
        "meshdiag.ir.text",
        "meshdiag.ir.lines",
        "meshdiag.ir.annot",
        "meshdiag.ir.builder",
        "meshdiag.ir.mlir",
        "meshdiag.ir.hlo",
        "meshdiag.ir.scan",
        "meshdiag.pipeline.inspect",
        "meshdiag.checks.registry",
        "meshdiag.inputs.keyline",
        "meshdiag.inputs.problems",
        "meshdiag.inputs.mesh_model",
        "meshdiag.inputs.config_model",
        "meshdiag.comms.groups",
        "meshdiag.comms.scan",
        "meshdiag.comms.cost",
        "meshdiag.comms.axes",
        "meshdiag.comms.report",
        "meshdiag.pipeline.comms_checks",
        "meshdiag.report.comms_text",
    ):
        importlib.import_module(name)
    from meshdiag.checks.registry import module_checks

    module_checks()  # loads the check modules
