"""HLO text line handlers: `HloModule` headers, `ENTRY` computations, instructions with
`sharding={...}` (and the `xla.sdy.sharding` frontend attribute XLA keeps next to it)."""

from __future__ import annotations

import re

from meshdiag.ir import annot, fields, linememo
from meshdiag.ir.builder import Builder
from meshdiag.ir.mlir import declare_mesh, diagnostic
from meshdiag.ir.text import (
    HLO_INSTR,
    HLO_OPCODE,
    brace_end,
    hlo_sharding_braces,
    keyed,
    match_end,
    split_group,
    string_end,
    unescape,
)

HLO_MODULE = re.compile(r"^HloModule\s+([^\s,]+)")
DIGITS = re.compile(r"\d+")
ENTRY = re.compile(r"^ENTRY\s+%?([^\s(]+)")
SDY_ATTR = re.compile(r'\bxla\.sdy\.(sharding|in_shardings|out_shardings)="')
SDY_MESHES = re.compile(r'([\w.$\-]+|"[^"]*") = #sdy\.mesh<')


def handle(b: Builder, line: str, lineno: int) -> None:
    if line.startswith("HloModule "):
        _start(b, _header(line), lineno)
        return
    if line.startswith("ENTRY "):
        _entry(b, line, lineno)
        return
    s = line.lstrip()
    if s.startswith(("error:", "warning:")) or ": error:" in line:
        diagnostic(b, s, lineno, 1)
        return
    if "sharding=" in line or 'shardings="' in line:
        linememo.run(_instruction, b, line, lineno)
    else:  # `sharding` in a name or in metadata: nothing, however often it comes
        linememo.nothing(b)


def _num_partitions(header: str) -> int | None:
    """`num_partitions=N` of an HloModule header (the header holds the whole entry layout:
    found through the literal key)."""
    m = keyed(header, "num_partitions=", DIGITS, 0)
    return int(m.group()) if m else None


def header(b: Builder, raw: bytes, lineno: int) -> None:
    """An ASCII `HloModule` line as the scanner reads it (memoised by its bytes)."""
    _start(b, b.cache.module_header(_header_raw, raw), lineno)


def entry(b: Builder, raw: bytes, lineno: int) -> None:
    """An ASCII `ENTRY` line: only its computation's name matters (up to the `(`)."""
    cut = raw.find(b"(")
    _entry(b, (raw[:cut] if cut >= 0 else raw).decode("ascii"), lineno)


def _start(b: Builder, header: tuple, lineno: int) -> None:
    name, num_partitions, meshes = header
    mod = b.start_module(name, lineno, "hlo")
    mod.num_partitions = num_partitions
    for mesh_name, text, col in meshes:
        if text is None:
            b.problem(f"xla.sdy.meshes: mesh {mesh_name} is not closed", lineno, col)
        else:
            declare_mesh(b, mesh_name, text, lineno, col, "xla.sdy.meshes")


def _entry(b: Builder, line: str, lineno: int) -> None:
    m = ENTRY.match(line)
    if m and m.group(1).endswith("_spmd"):
        b.ensure_module(lineno).partitioned = True


def _header_raw(raw: bytes) -> tuple:
    return _header(raw.decode("ascii"))


def _header(line: str) -> tuple[str | None, int | None, tuple[tuple[str, str | None, int], ...]]:
    """(name, num_partitions, meshes) of an HloModule header; each mesh of
    `xla.sdy.meshes={...}` as (name, `#sdy.mesh<...>` text or None when not closed, column).
    Memoised: every pass of a module prints the same header (with the whole entry layout)."""
    m = HLO_MODULE.match(line)
    meshes = []
    at = line.find("xla.sdy.meshes")
    if at >= 0:
        for mm in SDY_MESHES.finditer(line, at):
            start = mm.end() - len("#sdy.mesh<")
            end = match_end(line, mm.end() - 1)
            name = mm.group(1).strip('"')
            meshes.append((name, line[start:end] if end >= 0 else None, start + 1))
    return (m.group(1) if m else None), _num_partitions(line), tuple(meshes)


def _instruction(b: Builder, line: str, lineno: int) -> None:
    if fields.hlo_line(b, line, lineno):  # the plain form, read in one pass
        return
    im = HLO_INSTR.match(line)
    if im is None:
        return  # `sharding=` in something that is not an instruction (metadata, comments)
    name = im.group(1)
    rest = im.end()
    # the shape: a tuple `(...)` or `f32[4,8]{1,0}` up to the opcode
    if line.startswith("(", rest):
        send = match_end(line, rest)
        shape_text = line[rest:send] if send > 0 else ""
        after = send if send > 0 else rest
    else:
        sp = line.find(" ", rest)
        shape_text = line[rest:sp] if sp > 0 else ""
        after = sp if sp > 0 else rest
    shapes = b.cache.hlo_shapes(shape_text)
    om = HLO_OPCODE.match(line, after)
    opcode = om.group(1) if om else None
    kind = "arg" if opcode == "parameter" else "op"
    op = opcode
    if opcode == "custom-call":
        t = re.search(r'custom_call_target="([^"]*)"', line)
        if t:
            op = f"custom-call {t.group(1)}"
            kind = "custom_call"
    for start in hlo_sharding_braces(line, after):
        end = brace_end(line, start)
        if end < 0:
            b.value(
                name,
                lineno,
                start + 1,
                line[start:],
                "gspmd",
                annot.Parsed(None, None, "expected '}' closing the sharding (the line ends first)"),
                kind=kind,
                op=op,
            )
            continue
        text = line[start:end]
        parsed = b.cache.hlo(text)
        _emit(b, name, parsed, shapes, lineno, start + 1, text, "gspmd", kind, op)
    sdy_attrs = SDY_ATTR.finditer(line, after) if "xla.sdy." in line else ()
    for m in sdy_attrs:
        cstart = m.end()
        cend = string_end(line, cstart)
        if cend < 0:
            b.problem(f"xla.sdy.{m.group(1)}: unterminated string", lineno, cstart)
            continue
        text = unescape(line[cstart:cend])
        if text.startswith("#sdy.sharding_per_value"):
            items, err, off = b.cache.per_value(text, b.mesh_key)
            if err is not None:
                items = [annot.Parsed(None, None, err, off)]
        else:
            items = [b.named(text, ())]
        if m.group(1) == "in_shardings":
            # XLA's shard_map round trip (`xla.sdy.GlobalToLocalShape`): the shardings of
            # the operands, global tensors entering the manual region (their shapes are
            # not on this line)
            names = _operands(line, om.end() - 1) if om else []
            for k, p in enumerate(items):
                vname = names[k] if k < len(names) else f"{name}.in#{k}"
                b.value(vname, lineno, cstart + 1, text, "sdy", p, kind="manual_in", op=op)
            continue
        out_kind = "manual_out" if m.group(1) == "out_shardings" else kind
        _emit(b, name, items, shapes, lineno, cstart + 1, text, "sdy", out_kind, op)


def _operands(line: str, paren: int) -> list[str]:
    """The operand names of an instruction whose operand list opens at `paren`."""
    return [line[a:e].strip() for a, e in split_group(line, paren)[1]]


def _emit(b, name, parsed, shapes, lineno, col, text, notation, kind, op) -> None:
    tuple_like = len(parsed) > 1 or len(shapes) > 1
    for k, p in enumerate(parsed):
        vname = f"{name}#{k}" if tuple_like else name
        shape, dtype = shapes[k] if k < len(shapes) else (None, None)
        b.value(vname, lineno, col, text, notation, p, kind=kind, op=op, shape=shape, dtype=dtype)
