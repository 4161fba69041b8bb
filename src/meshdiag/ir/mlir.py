"""MLIR line handlers: sections, modules, `sdy.mesh`, function signatures, op annotations.

Pretty-printed MLIR keeps a function signature, an op and its attribute dictionary on one
line, so every annotation is read from the line it is on. Unknown dialects are just text.
"""

from __future__ import annotations

import re

from meshdiag.ir import annot, fields, linememo
from meshdiag.ir.builder import Builder, ManualRegion
from meshdiag.ir.model import Diagnostic, MeshDecl
from meshdiag.ir.text import (
    OP_NAME,
    RESULT,
    annotations_in,
    match_end,
    op_operands,
    op_result_types,
    split_group,
    split_top,
    string_end,
    unescape,
)

#: `// -----// IR Dump Before X (arg) ('op' operation: @sym) //----- //` and the newer
#: `// -----// IR Dump After X Failed: pipeline ... //----- //` (reference §5.1)
SECTION = re.compile(
    r"^// -----// (IR Dump (?:Before|After) \S+?(?: Failed)?(?: \([^)]*\)|: .*?))"
    r"(?: \('[^']+' operation(?:: @\S+)?\))? //----- //\s*$"
)
MODULE = re.compile(r"^\s*(?:builtin\.)?module(?:\s+@(\"(?:[^\"\\]|\\.)*\"|[\w.$\-]+))?(?=\s|\{|$)")
DIAG = re.compile(r"^(?:(\S+?):(\d+):(\d+): )?(error|warning|note|remark): (.*)$")
MESH_OP = re.compile(r"sdy\.mesh @(\"(?:[^\"\\]|\\.)*\"|[\w.$\-]+) = ")
FUNC = re.compile(r"\bfunc\.func\s+(?:(?:public|private|nested)\s+)?@(\"[^\"]*\"|[\w.$\-]+)\s*\(")
NUM_PARTITIONS = re.compile(r"mhlo\.num_partitions = (\d+)")


#: the stripped sharding after the operand of sdy.sharding_constraint / sdy.reshard
CONSTRAINT = re.compile(r"\bsdy\.(sharding_constraint|reshard) (%[\w.$#\-]+) <")
XLA_MESHES = re.compile(r'\bxla\.sdy\.meshes = "')
#: a signature entry's name and its type (the first tensor or tuple type in it)
ARG_NAME = re.compile(r"\s*(%[\w.$\-]+)\s*:")
ARG_TYPE = re.compile(r"tensor<[^>]*>|tuple<")


def handle(b: Builder, line: str, lineno: int) -> None:
    s = line.lstrip()
    indent = len(line) - len(s)
    if s.startswith("// -----"):
        m = SECTION.match(s)
        if m:
            b.start_section(m.group(1).rstrip())
        elif s.rstrip() == "// -----":
            b.split()
        return
    if _may_be_diagnostic(s) and (s.startswith(_KINDS) or ": error:" in s or ": warning:" in s):
        if diagnostic(b, s, lineno, indent + 1):
            return
    if b.manual and s.startswith("} : ") and indent == b.manual[-1].indent:
        _close_manual(b, line, lineno)
        return
    # a pass dump prints the same header in every file of a module: read once per run
    opens = s.startswith(("module", "builtin.module"))  # what `MODULE` matches first
    header = b.cache.structure(module_header, line) if opens else None
    if header is not None:
        name, num_partitions = header
        if indent == 0 or b.module is None:
            mod = b.start_module(name, lineno, "mlir")
            mod.num_partitions = num_partitions
        _xla_meshes(b, line, lineno)
        return
    if "sdy.mesh @" in line:
        _mesh_op(b, line, lineno)
        return
    fm = FUNC.search(line) if "func.func" in line else None
    if fm:
        linememo.run(_func, b, line, lineno, fm.end() - 1)
        return
    if "sharding" in line or "reshard" in line:
        if "sdy.manual_computation(" in line or "sdy.named_computation" in line:
            _op(b, line, lineno)  # opens a region: changes the builder's state
        else:
            linememo.run(_op, b, line, lineno)
    else:  # a word that marks structure, in a line that has none: nothing
        linememo.nothing(b)


_KINDS = ("error:", "warning:", "note:", "remark:")


def _may_be_diagnostic(s: str) -> bool:
    """False where `DIAG` cannot match `s`: it starts with a kind, or else the prefix
    `file:line:col: ` it allows holds no whitespace but its last space, the first in `s`,
    which a kind follows. Asked before looking for `: error:` in the whole line: a function
    signature is one line of up to megabytes (two searches of each were 2% of `lint`)."""
    if s.startswith(_KINDS):
        return True
    sp = s.find(" ")
    return sp > 0 and s[sp - 1] == ":" and s.startswith(_KINDS, sp + 1)


def module_header(line: str) -> tuple[str | None, int | None] | None:
    """(name, mhlo.num_partitions) when `line` opens a module, else None (memoised: every
    pass dump prints the same header again)."""
    mm = MODULE.match(line)
    if not mm or not (mm.group(1) or _MODULE_BODY.match(line)):
        return None
    name = mm.group(1)
    if name and name.startswith('"'):
        name = unescape(name[1:-1])
    np_ = NUM_PARTITIONS.search(line)
    return name, int(np_.group(1)) if np_ else None


_MODULE_BODY = re.compile(r"\s*(?:builtin\.)?module\s*(attributes\b|\{)")


def diagnostic(b: Builder, s: str, lineno: int, column: int) -> bool:
    """Record `s` (the line without its indent) as a compiler diagnostic when it is one:
    `error: ...` or `file:line:col: warning: ...`."""
    dm = DIAG.match(s)
    if dm is None:
        return False
    loc = f"{dm.group(1)}:{dm.group(2)}:{dm.group(3)}" if dm.group(1) else None
    b.diagnostic(Diagnostic(dm.group(4), dm.group(5), lineno, column, loc))
    return True


# -- meshes --------------------------------------------------------------------------------


def _mesh_op(b: Builder, line: str, lineno: int) -> None:
    for name, text, col, closed in b.cache.structure(_mesh_ops_in, line):
        if not closed:
            b.mesh(MeshDecl(name, None, lineno, col, text))
            b.problem(f"mesh @{name}: expected a mesh attribute '<[...]>'", lineno, col)
            continue
        declare_mesh(b, name, text, lineno, col, "sdy.mesh")


def _mesh_ops_in(line: str) -> tuple[tuple[str, str, int, bool], ...]:
    """(name, attribute text, column, closed) of each `sdy.mesh @name = <...>` on `line`."""
    out = []
    for m in MESH_OP.finditer(line):
        name = m.group(1)
        if name.startswith('"'):
            name = unescape(name[1:-1])
        start = m.end()
        end = match_end(line, start) if line.startswith("<", start) else -1
        if end < 0:
            out.append((name, line[start:].strip(), start + 1, False))
        else:
            out.append((name, line[start:end], start + 1, True))
    return tuple(out)


def declare_mesh(b: Builder, name: str, text: str, lineno: int, col: int, source: str) -> None:
    mesh, err, off = b.cache.call(annot.parse_named_mesh, text, name)
    b.mesh(MeshDecl(name, mesh, lineno, col, text, source))  # type: ignore[arg-type]
    if err is not None:
        b.problem(f"mesh @{name}: {err}", lineno, col + off)


def _xla_meshes(b: Builder, line: str, lineno: int) -> None:
    """`mhlo.frontend_attributes = {xla.sdy.meshes = "{mesh = #sdy.mesh<[\\22x\\22=8]>}"}`."""
    if "xla.sdy.meshes" not in line:  # on every module header; the regex scan is slower
        return
    for name, text, col in b.cache.structure(_xla_meshes_in, line):
        if name is None:  # a problem: `text` says what
            b.problem(text, lineno, col)
        else:
            declare_mesh(b, name, text, lineno, col, "xla.sdy.meshes")


def _xla_meshes_in(line: str) -> tuple[tuple[str | None, str, int], ...]:
    """(mesh name, `#sdy.mesh<...>` text, column) per mesh of the `xla.sdy.meshes` strings
    on `line`, and (None, message, column) where one cannot be read."""
    out: list[tuple[str | None, str, int]] = []
    for m in XLA_MESHES.finditer(line):
        start = m.end()
        end = string_end(line, start)
        if end < 0:
            out.append((None, "xla.sdy.meshes: unterminated string", start))
            continue
        text = unescape(line[start:end])
        for e in re.finditer(r'("[^"]*"|[\w.$\-]+) = (#sdy\.mesh)<', text):
            name = e.group(1).strip('"')
            mend = match_end(text, e.end() - 1)
            if mend < 0:
                out.append((None, f"xla.sdy.meshes: mesh {name} is not closed", start + 1))
                continue
            out.append((name, text[e.start(2) : mend], start + 1))
    return tuple(out)


# -- functions -----------------------------------------------------------------------------


def _func(b: Builder, line: str, lineno: int, lparen: int) -> None:
    """`func.func @f(%arg0: t {attrs}, ...) -> (t {attrs}, ...)`."""
    if "sharding" not in line:
        return
    # its plain entries whose sharding has a prototype: made as the group is split
    got = fields.entry_group(b, line, lparen, lineno)
    if got is None:
        rparen, spans = split_group(line, lparen)
        k = 0
    else:
        rparen, k, spans = got  # (spans None: every entry made)
    if rparen < 0:  # garbled or truncated: read each `%argN:` piece up to the next one
        starts = [m.start() for m in re.finditer(r"%[\w.$\-]+\s*:", line)] + [len(line)]
        for a, e in zip(starts, starts[1:], strict=False):
            name = re.match(r"%[\w.$\-]+", line[a:]).group(0)  # type: ignore[union-attr]
            _annotations(b, line, lineno, a, e, [name], "arg")
        if not annotations_in(line, 0, len(line)):  # nothing to pin the problem on
            b.problem("function signature: unbalanced parentheses", lineno, lparen + 1)
        return
    entry = fields.signature_entry
    # worth asking for plain entries made from prototypes (entry_group asked already: its
    # entry k is not one)
    batch = got is None
    while spans is not None and k < len(spans):
        if batch:  # the plain entries whose sharding has a prototype: made in one call
            k = fields.entry_values(b, line, spans, k, lineno)
            if k >= len(spans):
                break
        a, e = spans[k]
        k += 1
        # the plain form, read in one match (its sharding has a prototype from now on); a
        # line of other forms (`loc(...)` after each entry, say) is not asked again
        batch = entry(b, line, lineno, a, e)
        if batch:
            continue
        mn = ARG_NAME.match(line, a, e)
        name = mn.group(1) if mn else f"%arg{a}"
        _annotations(b, line, lineno, a, e, [name], "arg")
    rest = line[rparen:]
    arrow = rest.find("->")
    if arrow < 0:
        return
    p = rparen + arrow + 2
    while p < len(line) and line[p] == " ":
        p += 1
    if line.startswith("(", p):
        rend, spans = split_group(line, p)
        if rend < 0:
            b.problem("function results: unbalanced parentheses", lineno, p + 1)
            return
    else:  # a single result type, possibly with attributes
        brace = line.find("{", p)
        end = match_end(line, brace) if brace >= 0 else -1
        spans = [(p, end if end > 0 else len(line))]
    for k, (a, e) in enumerate(spans):
        _annotations(b, line, lineno, a, e, [f"result#{k}"], "result")


# -- ops -----------------------------------------------------------------------------------


def _op(b: Builder, line: str, lineno: int) -> None:
    if "sdy.sharding_constraint " in line or "sdy.reshard " in line:
        if fields.constraint(b, line, lineno):  # the plain form, read in one match
            return
    elif fields.op_line(b, line, lineno):  # an op's one plain annotation, read in one pass
        return
    rm = RESULT.match(line)
    if rm:
        names = _result_names(b, rm, line, lineno)
        body = rm.end()
    else:
        names = ["_"]  # an op without results that still carries an annotation
        body = len(line) - len(line.lstrip())
    om = OP_NAME.match(line, body)
    opname = (om.group(1) or om.group(2)) if om else None
    if opname and "custom_call" in opname:
        cm = re.match(r"\s*@([\w.$\-]+)", line[om.end() :])
        if cm:
            opname = f"{opname} @{cm.group(1)}"
    if "sdy.manual_computation(" in line or "sdy.named_computation" in line:
        _region_op(b, line, lineno, names, opname or "")
        return
    kind = "op"
    if opname and opname.endswith(("sharding_constraint", "reshard")):
        kind = "reshard" if opname.endswith("reshard") else "constraint"
    elif opname and "custom_call" in opname:
        kind = "custom_call"
    cm = (
        CONSTRAINT.search(line, body)
        if "sdy.sharding_constraint " in line or "sdy.reshard " in line
        else None
    )
    if cm:
        start = cm.end() - 1
        end = match_end(line, start)
        types = op_result_types(line, body)
        shape, dtype = b.cache.tensor_type(types[0] if types else "")
        if end < 0:
            b.problem(f"{cm.group(0)[:-2]}: the sharding is not closed", lineno, start + 1)
            b.value(names[0], lineno, start + 1, line[start:], "sdy", annot.Parsed(None), kind=kind)
            return
        text = line[start:end]
        p = b.named(text)
        b.value(
            names[0],
            lineno,
            start + 1,
            text,
            "sdy",
            p,
            kind=kind,
            op=opname,
            shape=shape,
            dtype=dtype,
        )
        _annotations(b, line, lineno, end, len(line), names, kind, opname, body=body)
        return
    _annotations(b, line, lineno, body, len(line), names, kind, opname, body=body)


def _result_names(b: Builder, rm: re.Match, line: str, lineno: int) -> list[str]:
    """The names of an op's results (`%x`, or `%x#0`, `%x#1`, ... for `%x:N`): at most one a
    character of the line (no line names more values; `%x:999999999999` asked for a list of
    a trillion names), and a problem for `%x:0` (a group of no results, read as `%x`)."""
    base, count = rm.group(1), rm.group(2)
    n = 1 if count is None else int(count) if len(count) < 12 else len(line)
    if n == 0:
        b.problem(f"result group {base}:0 holds no values", lineno, rm.start(1) + 1)
        n = 1
    return [base] if n == 1 else [f"{base}#{k}" for k in range(min(n, len(line)))]


def _annotations(
    b: Builder,
    line: str,
    lineno: int,
    start: int,
    end: int,
    names: list[str],
    kind: str,
    opname: str | None = None,
    *,
    body: int | None = None,
) -> None:
    """Every annotation in `line[start:end]`, one value per result / tuple element.

    `body` is where an op's text starts (the result types are read from there); without it
    the span is a signature entry whose own type gives the shape.
    """
    types: list[str] | None = None
    skip = -1  # end of a string attribute already read: annotations inside belong to it
    for tok_start, tok_end, tok in annotations_in(line, start, end):
        if tok_start < skip:
            continue
        if types is None:
            if body is not None:
                types = op_result_types(line, body)
            else:
                mt = ARG_TYPE.search(line, start, end)
                types = [mt.group(0)] if mt else []
        if tok.endswith('"'):  # a string attribute: mhlo.sharding / xla.sdy.sharding
            cstart = tok_end
            cend = string_end(line, cstart)
            if cend < 0 or cend > end:
                b.problem(f"{tok.split(' ')[0]}: unterminated string", lineno, cstart)
                continue
            skip = cend
            text = unescape(line[cstart:cend])
            if tok.startswith("mhlo"):
                parsed = b.cache.hlo(text)
                _emit(b, names, parsed, types, lineno, cstart + 1, text, "gspmd", kind, opname)
            else:
                _emit_sdy(b, names, types, lineno, cstart + 1, text, kind, opname)
            continue
        if tok_start > start and line[tok_start - 1] == '"':
            # inside a string attribute (`xla.sdy.in_shardings = "#sdy...<[{\22x\22}]>"`):
            # the string is the annotation, MLIR escapes and all
            cend = string_end(line, tok_start)
            if cend < 0 or cend > end:
                b.problem(
                    f"{_string_attr(line, tok_start)}: unterminated string", lineno, tok_start
                )
                continue
            skip = cend
            text = unescape(line[tok_start:cend])
            attr = _string_attr(line, tok_start)
            if attr == "xla.sdy.in_shardings" and body is not None:
                # XLA's shard_map round trip (`@xla.sdy.GlobalToLocalShape`): the shardings
                # of the custom call's operands, global tensors entering the manual region
                operands = op_operands(line, body)
                _emit_sdy(
                    b,
                    [n for n, _ in operands] or names,
                    [t for _, t in operands],
                    lineno,
                    tok_start + 1,
                    text,
                    "manual_in",
                    opname,
                )
            else:  # `xla.sdy.out_shardings` (`@xla.sdy.LocalToGlobalShape`): its results
                out_kind = "manual_out" if attr == "xla.sdy.out_shardings" else kind
                _emit_sdy(b, names, types, lineno, tok_start + 1, text, out_kind, opname)
            continue
        astart = tok_end - 1 if tok.endswith("=<") else tok_start
        aend = match_end(line, tok_end - 1)
        if aend < 0 or aend > end:  # not closed on this line: let the parser say where
            text = line[astart:end].rstrip()
            p = b.named(text)
            if p.error is None:
                p = annot.Parsed(None, None, "expected '>' closing the sharding", len(text))
            b.value(names[0], lineno, astart + 1, text, "sdy", p, kind=kind, op=opname)
            continue
        _emit_sdy(b, names, types, lineno, astart + 1, line[astart:aend], kind, opname)


_STRING_ATTR = re.compile(r'([\w.$\-]+) = "$')


def _string_attr(line: str, quote_end: int) -> str:
    """The name of the string attribute whose opening quote ends at `quote_end`."""
    m = _STRING_ATTR.search(line, max(0, quote_end - 80), quote_end)
    return m.group(1) if m else "string attribute"


def _emit_sdy(b, names, types, lineno, col, text, kind, opname) -> None:
    """A Shardy annotation (`#sdy.sharding<...>` or `#sdy.sharding_per_value<[...]>`): one
    value per sharding; a per-value list that does not parse is one value with the error."""
    if text.startswith("#sdy.sharding_per_value"):
        items, err, off = b.cache.per_value(text, b.mesh_key, b.manual_axes)
        if err is not None:
            p = annot.Parsed(None, None, err, off)
            b.value(names[0], lineno, col, text, "sdy", p, kind=kind, op=opname)
            return
    else:
        items = [b.named(text)]
    _emit(b, names, items, types, lineno, col, text, "sdy", kind, opname)


def _result_name(names: list[str], k: int) -> str:
    """The name of an op's `k`th annotated result, of its several `names` (`%x#0`, ...):
    an annotation past the last result (more shardings than results) is named as the next
    one would be."""
    return names[k] if k < len(names) else f"{names[0].split('#')[0]}#{k}"


def _emit(b, names, parsed, types, lineno, col, text, notation, kind, opname) -> None:
    single = len(parsed) == 1 and len(names) <= 1
    for k, p in enumerate(parsed):
        if single:
            name = names[0]
        elif len(names) > 1:
            name = _result_name(names, k)
        else:
            name = f"{names[0]}#{k}"
        shape, dtype = b.cache.tensor_type(types[k]) if types and k < len(types) else (None, None)
        b.value(
            name, lineno, col, text, notation, p, kind=kind, op=opname, shape=shape, dtype=dtype
        )


# -- manual / named computations ----------------------------------------------------------


def _region_op(b: Builder, line: str, lineno: int, names: list[str], opname: str) -> None:
    """`%0 = sdy.manual_computation(%a, %b) in_shardings=[...] out_shardings=[...]
    manual_axes={...} (%arg2: tensor<8x8xf32>, ...) {` — the body follows on later lines."""
    manual = "manual_computation" in opname
    indent = len(line) - len(line.lstrip())
    axes: tuple[str, ...] = ()
    ma = re.search(r"manual_axes=\{([^}]*)\}", line)
    if ma:
        axes = tuple(x.strip().strip('"') for x in ma.group(1).split(",") if x.strip())
    region = ManualRegion(indent, axes if manual else ())
    paren = line.find("(", line.find("computation"))
    operands = [line[a:e].strip() for a, e in split_group(line, paren)[1]]  # ([] at -1)
    # region arguments: the parenthesised list after the shardings / manual_axes
    after = max(
        line.rfind("manual_axes="), line.rfind("out_shardings=["), line.rfind("in_shardings=[")
    )
    local: list[tuple[tuple[int, ...] | None, str | None]] = []
    rp = line.find("(", after) if after >= 0 else -1
    if rp >= 0:
        local = [b.cache.tensor_type(line[a:e]) for a, e in split_group(line, rp)[1]]
    kinds = ("manual_in", "manual_out") if manual else ("named_in", "named_out")
    for key, kind in zip(("in_shardings=[", "out_shardings=["), kinds, strict=True):
        i = line.find(key)
        if i < 0:
            continue
        lb = i + len(key) - 1
        le, spans = split_group(line, lb)
        if le < 0:
            b.problem(f"{key[:-2]}: the list is not closed", lineno, lb + 1)
            continue
        for k, (a, e) in enumerate(spans):
            while a < e and line[a] == " ":
                a += 1
            text = line[a:e].strip()
            if not text:
                continue
            p = b.named(text)
            if kind.endswith("_in"):
                vname = operands[k] if k < len(operands) else f"{names[0]}.in#{k}"
            elif len(names) > 1:
                vname = _result_name(names, k)
            else:
                vname = names[0] if k == 0 else f"{names[0]}#{k}"
            v = b.value(vname, lineno, a + 1, text, "sdy", p, kind=kind, op=opname)
            if kind.endswith("_in"):
                if manual and k < len(local):
                    v.local_shape, v.dtype = local[k]
                region.ins.append(v)
            else:
                region.outs.append(v)
    b.manual.append(region)


def _close_manual(b: Builder, line: str, lineno: int) -> None:
    """`} : (tensor<16x32xf32>, ...) -> tensor<16x32xf32>` closes the innermost region."""
    region = b.manual.pop()
    s = line.strip()
    arrow = s.find("->")
    if arrow < 0:
        return
    ins_text = s[s.find(":") + 1 : arrow].strip()
    if ins_text.startswith("("):
        ins_text = ins_text[1:-1]
    in_types = [ins_text[a:e] for a, e in split_top(ins_text, 0, len(ins_text))]
    outs_text = s[arrow + 2 :].strip()
    if outs_text.startswith("("):
        end = match_end(outs_text, 0)
        outs_text = outs_text[1 : end - 1] if end > 0 else outs_text[1:]
    out_types = [outs_text[a:e] for a, e in split_top(outs_text, 0, len(outs_text))]
    outer = bool(b.manual)  # nested: the enclosing body is per-device too
    for vals, types in ((region.ins, in_types), (region.outs, out_types)):
        for k, v in enumerate(vals):
            if k < len(types):
                shape, dtype = b.cache.tensor_type(types[k])
                if outer:
                    if v.local_shape is None:
                        v.local_shape = shape
                else:
                    v.shape = shape
                v.dtype = v.dtype or dtype
