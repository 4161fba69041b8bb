"""How the model names things in messages: MLIR-escaped strings and Shardy axis refs
(`"x":(1)2`), the spelling the verifiers' messages use. The notations print with these too."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from meshdiag.model.sharding import AxisRef


def mlir_escape(s: str) -> str:
    """MLIR's `printEscapedString`: `\\` doubled, `"` and non-printables as `\\XX` hex."""
    out = []
    for c in s:
        if c == "\\":
            out.append("\\\\")
        elif c == '"' or not c.isprintable() or ord(c) > 126:
            out.extend(f"\\{b:02X}" for b in c.encode())
        else:
            out.append(c)
    return "".join(out)


def axis_ref_text(a: AxisRef) -> str:
    """An axis ref as Shardy prints it: `"x"`, or `"x":(pre)size` for a sub-axis."""
    s = f'"{mlir_escape(a.name)}"'
    if a.pre is not None:
        s += f":({a.pre}){a.size}"
    return s
