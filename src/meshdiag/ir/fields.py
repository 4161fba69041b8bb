"""One-pass field readers for the annotated lines that make up most of a dump.

The general MLIR handlers (`mlir._op`, `mlir._func`) find a line's results, op name,
annotation tokens, and result types with several scans each, because any of them may be
missing, quoted or nested. Most annotated lines have one plain form, read here in one pass
each: the value's name, its type and its sharding span. A line
(or signature entry) that does not have that exact form returns False and goes to the
general reader, which gives the same values for these forms (tests/test_scan_differential.py
and tests/test_ir_fields.py compare them).

- `constraint`: `%5 = sdy.sharding_constraint %4 <@mesh, [{}, {"y"}]> : tensor<16x24xf32>`
  (and `sdy.reshard`), the line JAX prints for every `with_sharding_constraint`.
- `signature_entry`: `%arg3: tensor<24x32xf32> {sdy.sharding = #sdy.sharding<@mesh, ...>}`
  (or `{mhlo.sharding = "{...}"}`, XLA's export, its text without escapes), one entry of a
  `func.func` signature (a big program's entry function has thousands).
- `op_line`: an op whose one annotation is `sdy.sharding = #sdy.sharding_per_value<[<@mesh,
  ...>]>` (every op after Shardy's propagation) or `mhlo.sharding = "{...}"` (XLA's export),
  with one static result type: `%3 = stablehlo.tanh %2 {sdy.sharding = ...} : tensor<8xf32>`.
  Not one regex: the steps `mlir._op` takes for it, each as it takes them.
- `hlo_line`: an HLO instruction with one static array shape and one `sharding={...}`
  (`%d = f32[4,16]{1,0} dot(%x, %w), ..., sharding={devices=[2,4]<=[8]}`): the steps
  `hlo._instruction` takes for it. Every pass file of an XLA dump is mostly these.

Once a sharding text has given a plain value this way, its Value is kept as the prototype of
that text (`ScanCache.keep_proto`), and later plain values with it are copies of it with
their own name, line, column, shape, element type and role (`model.from_proto`): a streamed
file's constraint and op lines are made so by the candidate walker itself
(`lines.scan_plain`), a signature's entries by `entry_values`, both in C when built
(`fast/_values.c`), without a Python step per value.

The fields themselves come from `constraint_fields`, `entry_fields`, `op_fields` and
`hlo_fields`: native (`fast/_fields.c`, one pass in C) when the extension is built, else
their Python twins (`..._py`; tests/test_ir_fields.py holds each pair to the same
answers). The scan of a 60 MB file of distinct lines took 1.86 s with the regexes, 1.53 s
with the native fields.
"""

from __future__ import annotations

import re

from meshdiag.ir.annot import Parsed
from meshdiag.ir.builder import Builder
from meshdiag.ir.fast import native
from meshdiag.ir.model import Notation, Value, from_proto
from meshdiag.ir.text import (
    HLO_INSTR,
    HLO_OPCODE,
    OP_NAME,
    RESULT,
    annotations_in,
    hlo_shapes,
    hlo_sharding_braces,
    match_end,
    op_result_types,
    split_group_py,
    string_end,
)

#: the location MLIR prints after an op or an argument with debug info (`loc(#loc3)`,
#: `loc("x")`, `loc("a.py":3:1)`), which the values do not show
_LOC = r'(?: loc\((#[\w.$\-]+|"[^"\\]*"(?::\d+:\d+)?)\))?'
#: the whole line: indent, result, op, operand, the sharding (no nested `<`/`>`: a mesh
#: given inline goes to the general reader), the one static result type (its dims and
#: element type), its location and nothing after it
_CONSTRAINT = re.compile(
    r"[ \t]*(%[\w.$\-]+) = sdy\.(sharding_constraint|reshard) %[\w.$#\-]+ (<@[^<>]*>)"
    r" : tensor<((?:\d+x)*)([a-zA-Z!][\w.]*)>" + _LOC + r"[ \t]*"
)
#: one signature entry: its name, its static type (dims, element type), the attribute
#: dictionary holding only the sharding, its location
_ENTRY = re.compile(
    r"\s*(%[\w.$\-]+): tensor<((?:\d+x)*)([a-zA-Z!][\w.]*)> "
    r"\{sdy\.sharding = (#sdy\.sharding<@[^<>]*>)\}" + _LOC + r"\s*"
)
#: the same with a GSPMD sharding (XLA's export): the string's text, without escapes
_GSPMD_ENTRY = re.compile(
    r"\s*(%[\w.$\-]+): tensor<((?:\d+x)*)([a-zA-Z!][\w.]*)> "
    r'\{mhlo\.sharding = "([^"\\]*)"\}' + _LOC + r"\s*"
)


#: an op line holding one of these goes to the general reader: what `mlir.handle` reads
#: before an op (a mesh op, a function, a diagnostic), ops with readers of their own
#: (constraints, custom calls, manual and named computations), result types cut short
#: (` attributes `)
_NOT_PLAIN_OP = (
    "sdy.mesh @",
    "func.func",
    ": error:",
    ": warning:",
    "computation",
    "custom_call",
    "sdy.sharding_constraint ",
    "sdy.reshard ",
    " attributes ",
)
#: a plain op's annotation: one sharding whose mesh is named, nothing nested in it
_PER_VALUE = re.compile(r"#sdy\.sharding_per_value<\[<@[^<>]*>\]>")
#: a plain op's one result type, static
_RESULT_TYPE = re.compile(r"tensor<((?:\d+x)*)([a-zA-Z!][\w.]*)>")


def constraint(b: Builder, line: str, lineno: int) -> bool:
    """A plain `sdy.sharding_constraint` / `sdy.reshard` line, read whole; False (nothing
    done) for any other line."""
    f = constraint_fields(line)
    if f is None:
        return False
    add_constraint(b, line, lineno, f)
    return True


def add_constraint(b: Builder, line: str, lineno: int, f: tuple) -> None:
    """The value of a plain constraint line whose `constraint_fields` are `f`."""
    name, op, start, stop, shape, dtype = f
    text = line[start:stop]
    p = b.named(text)
    kind, op = _role(op)
    v = b.value(name, lineno, start + 1, text, "sdy", p, kind=kind, op=op, shape=shape, dtype=dtype)
    _keep_proto(b, text, p.error, v, shape)


def _parsed(b: Builder, text: str) -> tuple[Parsed, Notation] | None:
    """The one sharding of a plain line's text, parsed as the general reader parses it, with
    its notation: a Shardy per-value list (`#sdy.sharding_per_value<...>`), a Shardy
    sharding, or a GSPMD string's text; None when it is not exactly one (a list that does
    not parse, a tuple): the general reader then reads the line."""
    if text.startswith("#sdy.sharding_per_value"):
        items, err, _ = b.cache.per_value(text, b.mesh_key, b.manual_axes)
        return (items[0], "sdy") if err is None and len(items) == 1 else None
    if text.startswith("#sdy"):
        return b.named(text), "sdy"
    parsed = b.cache.hlo(text)
    return (parsed[0], "gspmd") if len(parsed) == 1 else None


def op_line(b: Builder, line: str, lineno: int) -> bool:
    """A plain op line (`op_fields`), read whole; False (nothing done) for any other line
    and for one whose sharding does not parse into one value (the general reader says
    why)."""
    f = op_fields(line)
    if f is None:
        return False
    name, opname, start, stop, shape, dtype = f
    return _add_plain(b, line, lineno, name, start, stop, shape, dtype, "op", opname)


def hlo_line(b: Builder, line: str, lineno: int) -> bool:
    """A plain HLO instruction (`hlo_fields`), read whole; False (nothing done) for any
    other line and for one whose sharding is not one GSPMD sharding."""
    f = hlo_fields(line)
    if f is None:
        return False
    name, opcode, start, stop, shape, dtype = f
    kind = "arg" if opcode == "parameter" else "op"
    # (no prototype kept: the walker copies plain MLIR lines only)
    return _add_plain(b, line, lineno, name, start, stop, shape, dtype, kind, opcode, keep=False)


def _add_plain(
    b: Builder,
    line: str,
    lineno: int,
    name: str,
    start: int,
    stop: int,
    shape: tuple[int, ...],
    dtype: str,
    kind: str,
    op: str | None,
    *,
    keep: bool = True,
) -> bool:
    """The value of a plain line whose one sharding is `line[start:stop]` (`_parsed`),
    added with these fields and, with `keep`, kept as its sharding's prototype; False
    (nothing done) when the sharding is not one value."""
    text = line[start:stop]
    got = _parsed(b, text)
    if got is None:
        return False
    p, notation = got
    v = b.value(
        name, lineno, start + 1, text, notation, p, kind=kind, op=op, shape=shape, dtype=dtype
    )
    if keep:
        _keep_proto(b, text, p.error, v, shape)
    return True


def _role(op: str) -> tuple[str, str]:
    """The kind and op of a constraint line's value, from its op (`sharding_constraint`,
    `reshard`)."""
    return ("constraint" if op == "sharding_constraint" else "reshard"), "sdy." + op


def signature_entry(b: Builder, line: str, lineno: int, start: int, end: int) -> bool:
    """One plain `func.func` signature entry in `line[start:end]`; False (nothing done)
    for any other form."""
    f = entry_fields(line, start, end)
    if f is None:
        return False
    name, a, e, shape, dtype = f
    return _add_plain(b, line, lineno, name, a, e, shape, dtype, "arg", None)


def _keep_proto(b: Builder, text: str, error: str | None, v: Value, shape: tuple) -> None:
    """Keep `v` as its sharding's prototype when every plain value with `text` in this
    state is `v` but for its own fields: parsed without error, outside manual regions
    (which make shapes per device), with the shape it was given."""
    if error is None and not b.manual and v.shape is shape and v.local_shape is None:
        b.cache.keep_proto(b.mesh_token, text, v)


def entry_values(b: Builder, line: str, spans: list[tuple[int, int]], k: int, lineno: int) -> int:
    """The signature entries `line[a:e]` of `spans[k:]` appended to the module as values made
    from their shardings' prototypes, up to the first one that is not plain or has no
    prototype yet (the caller reads that one the general way); returns its index, or
    `len(spans)`. Nothing outside a module or inside a manual region."""
    protos = _entry_protos(b)
    if protos is None:
        return k
    m = b.module
    assert m is not None
    if _native_entry_values is not None and line.isascii():
        return _native_entry_values(line, spans, k, lineno, protos, m.lines, m.items)
    return entry_values_py(line, spans, k, lineno, protos, m.lines, m.items)


def entry_group(
    b: Builder, line: str, pos: int, lineno: int
) -> tuple[int, int, list[tuple[int, int]] | None] | None:
    """A signature's parameters, the group opening at `line[pos]`, split and its plain
    entries made as `entry_values` makes them, in one native call (a signature's spans stay
    in C unless some entry is left): (the index after the group, the first entry not made,
    the spans when one is left, else None); (-1, 0, []) when the group does not close. None
    when this way does not apply (no module or a manual region, no prototype yet, a line
    not ASCII, no native code): the caller splits the group and reads its entries itself."""
    protos = _entry_protos(b) if _native_entry_group is not None and line.isascii() else None
    if protos is None:
        return None
    m = b.module
    assert m is not None
    got = _native_entry_group(line, pos, lineno, protos, m.lines, m.items)
    return None if got is NotImplemented else got


def _entry_protos(b: Builder) -> dict[str, Value] | None:
    """The prototypes signature entries are made from where they can be: None outside a
    module, inside a manual region, or before any prototype of the mesh state."""
    if b.module is None or b.manual:
        return None
    return b.cache.protos(b.mesh_token) or None


def entry_group_py(
    line: str,
    pos: int,
    lineno: int,
    protos: dict[str, Value],
    lines_out: list,
    items_out: list,
) -> tuple[int, int, list[tuple[int, int]] | None]:
    """`entry_group` on the columns themselves: `split_group` then `entry_values_py` from
    the first entry. The reference for the native one."""
    end, spans = split_group_py(line, pos)
    if end < 0:
        return -1, 0, spans
    k = entry_values_py(line, spans, 0, lineno, protos, lines_out, items_out)
    return end, k, spans if k < len(spans) else None


def entry_values_py(
    line: str,
    spans: list[tuple[int, int]],
    k: int,
    lineno: int,
    protos: dict[str, Value],
    lines_out: list,
    items_out: list,
) -> int:
    """`entry_values` on the columns themselves: the reference for the native one."""
    k = max(k, 0)
    while k < len(spans):
        a, e = spans[k]
        f = entry_fields_py(line, a, e)
        if f is None:
            break
        name, sa, se, shape, dtype = f
        proto = protos.get(line[sa:se])
        if proto is None:
            break
        lines_out.append(lineno)
        items_out.append(from_proto(proto, name, lineno, sa + 1, shape, dtype, "arg", None))
        k += 1
    return k


def plain_value_py(line: str, lineno: int, protos: dict[str, Value]) -> Value | None:
    """The value of a plain constraint or op line made from its sharding's prototype in
    `protos`, or None: another line, no prototype, or a line `mlir.handle` must see first
    (one naming a mesh op or a function). The reference for `_values.c`'s, which the
    walker calls (`lines.scan_plain`)."""
    if not line.isascii() or "sdy.mesh @" in line or "func.func" in line:
        return None
    f = constraint_fields_py(line)
    if f is not None:
        name, op, start, stop, shape, dtype = f
        kind, op = _role(op)
    else:
        f = op_fields_py(line)
        if f is None:
            return None
        name, op, start, stop, shape, dtype = f
        kind = "op"
    proto = protos.get(line[start:stop])
    if proto is None:
        return None
    return from_proto(proto, name, lineno, start + 1, shape, dtype, kind, op)


# -- the fields: native when built, these Python twins otherwise (and for non-ASCII lines) -


def constraint_fields(line: str) -> tuple[str, str, int, int, tuple[int, ...], str] | None:
    """(name, op, sharding start, sharding stop, shape, element type) of a plain constraint
    line, or None for any other line."""
    if _native_constraint is not None and line.isascii():
        return _native_constraint(line)
    return constraint_fields_py(line)


def entry_fields(
    line: str, start: int, end: int
) -> tuple[str, int, int, tuple[int, ...], str] | None:
    """(name, sharding start, sharding stop, shape, element type) of a plain signature
    entry in `line[start:end]`, or None for any other form."""
    if _native_entry is not None and line.isascii():
        return _native_entry(line, start, end)
    return entry_fields_py(line, start, end)


def op_fields(line: str) -> tuple[str, str, int, int, tuple[int, ...], str] | None:
    """(name, op, sharding start, sharding stop, shape, element type) of a plain op line,
    or None for any other line."""
    if _native_op is not None and line.isascii():
        return _native_op(line)
    return op_fields_py(line)


def hlo_fields(line: str) -> tuple[str, str, int, int, tuple[int, ...], str] | None:
    """(name, opcode, sharding start, sharding stop, shape, element type) of a plain HLO
    instruction, or None for any other line."""
    if _native_hlo is not None and line.isascii():
        return _native_hlo(line)
    return hlo_fields_py(line)


def constraint_fields_py(line: str) -> tuple[str, str, int, int, tuple[int, ...], str] | None:
    """`constraint_fields` in Python: the reference for the native one."""
    m = _CONSTRAINT.fullmatch(line)
    if m is None or "computation" in line:  # a region op's name quoted in it: general
        return None
    start, stop = m.span(3)
    if match_end(line, start) != stop:  # quoted brackets: the general reader decides
        return None
    name, op, dims, dtype, loc = m.group(1, 2, 4, 5, 6)
    if "sharding" in dtype or loc and "sharding" in loc:  # a token after the sharding: general
        return None
    return name, op, start, stop, _dims(dims), dtype


def entry_fields_py(
    line: str, start: int, end: int
) -> tuple[str, int, int, tuple[int, ...], str] | None:
    """`entry_fields` in Python: the reference for the native one."""
    m = _ENTRY.fullmatch(line, start, end)
    tokens = 1  # the annotation tokens its sharding holds: `#sdy.sharding<`
    if m is None:
        m = _GSPMD_ENTRY.fullmatch(line, start, end)
        tokens = 0  # (the string's text; its token is before it)
        if m is None:
            return None
    a, e = m.span(4)
    if tokens and match_end(line, a + 13) != e:  # `#sdy.sharding` is 13 characters: its `<`
        return None
    name, dims, dtype, text, loc = m.group(1, 2, 3, 4, 5)
    if text.count("sharding") != tokens or "sharding" in dtype or loc and "sharding" in loc:
        return None  # more annotation tokens in it: general
    return name, a, e, _dims(dims), dtype


def op_fields_py(line: str) -> tuple[str, str, int, int, tuple[int, ...], str] | None:
    """`op_fields` in Python: the reference for the native one. A plain op line is what
    `mlir._op` reads as one value through the same steps: one result, an op name, exactly
    one annotation token in the line (`annotations_in`): a one-element per-value sharding
    (`_PER_VALUE`) or a GSPMD string without escapes (`mhlo.sharding = "{...}"`), and one
    static result type (`op_result_types`). The span is the sharding's text."""
    if not line.isascii() or any(w in line for w in _NOT_PLAIN_OP):
        return None
    rm = RESULT.match(line)
    if rm is None or rm.group(2) is not None:
        return None
    body = rm.end()
    om = OP_NAME.match(line, body)
    if om is None:
        return None
    opname = om.group(1) or om.group(2)
    if opname.endswith(("sharding_constraint", "reshard")):
        return None
    tokens = annotations_in(line, body, len(line))
    if len(tokens) != 1:
        return None
    start, tok_end, tok = tokens[0]
    if tok == "#sdy.sharding_per_value<":
        if start > body and line[start - 1] == '"':
            return None  # inside a string attribute: the string is the annotation
        stop = match_end(line, tok_end - 1)
        if stop < 0 or _PER_VALUE.fullmatch(line, start, stop) is None:
            return None
    elif tok == 'mhlo.sharding = "':  # the string's text, with no escape in it
        start = tok_end
        stop = string_end(line, start)
        if stop < 0 or "\\" in line[start:stop]:
            return None
    else:
        return None
    types = op_result_types(line, body)
    tm = _RESULT_TYPE.fullmatch(types[0]) if len(types) == 1 else None
    if tm is None:
        return None
    return rm.group(1), opname, start, stop, _dims(tm.group(1)), tm.group(2)


def hlo_fields_py(line: str) -> tuple[str, str, int, int, tuple[int, ...], str] | None:
    """`hlo_fields` in Python: the reference for the native one. A plain HLO instruction is
    what `hlo._instruction` reads as one value through the same steps: its name, an array
    shape (one `dtype[dims]`, static) up to the first space, an opcode (not a custom call),
    exactly one `sharding={...}` with nothing nested or quoted in it, and no Shardy
    attribute (`xla.sdy.`)."""
    if not line.isascii() or "xla.sdy." in line:
        return None
    im = HLO_INSTR.match(line)
    if im is None or line.startswith("(", im.end()):
        return None  # (a tuple shape)
    rest = im.end()
    sp = line.find(" ", rest)
    shape_text = line[rest:sp] if sp > 0 else ""
    if shape_text.count("[") != 1:
        return None
    shapes = hlo_shapes(shape_text)
    if len(shapes) != 1 or shapes[0][0] is None:
        return None
    om = HLO_OPCODE.match(line, sp)
    if om is None or om.group(1) == "custom-call":
        return None
    braces = hlo_sharding_braces(line, sp)
    if len(braces) != 1:
        return None
    start = braces[0]
    close = line.find("}", start)
    if close < 0 or line.find("{", start + 1, close) >= 0 or line.find('"', start, close) >= 0:
        return None
    return im.group(1), om.group(1), start, close + 1, shapes[0][0], shapes[0][1]


def _dims(dims: str) -> tuple[int, ...]:
    """`16x24x` → (16, 24), as `text.tensor_shape` reads a static tensor type's dims."""
    return tuple(map(int, dims.split("x")[:-1])) if dims else ()


_native_constraint = native("constraint_fields")
_native_op = native("op_fields")
_native_hlo = native("hlo_fields")
_native_entry = native("entry_fields")
_native_entry_values = native("entry_values")
_native_entry_group = native("entry_group")
