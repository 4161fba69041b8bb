"""JAX / torch_xla PartitionSpecs: `P(None, 'model')`, `(None, ('x', 'y'))`, `["data", None]`.

Also home of `parse_py_literal`, a small safe reader for the Python literals these notations
and torch_xla's `Mesh.__str__` use (no `eval`).
"""

from __future__ import annotations

from collections.abc import Sequence

from meshdiag.errors import MeshdiagError, ParseError
from meshdiag.limits import MAX_NESTING
from meshdiag.model.mesh import Mesh
from meshdiag.model.sharding import AxisRef, DimSharding, NamedSharding
from meshdiag.notation._cursor import Cursor

__all__ = ["named_to_pspec", "parse_pspec", "parse_py_literal", "pspec_to_named"]

PSpec = tuple[tuple[str, ...] | None, ...]

_CALLS = ("jax.sharding.PartitionSpec", "PartitionSpec", "xs.PartitionSpec", "P")


def _literal(cur: Cursor, depth: int) -> object:
    """None / True / False / int / 'str' / "str" / (..) / [..] / {k: v} / array([...])."""
    if depth > MAX_NESTING:
        raise cur.error(f"at most {MAX_NESTING} levels of nesting")
    c = cur.peek()
    if c in ("'", '"'):
        return cur.quoted()
    if c == "-" or "0" <= c <= "9":
        return cur.integer("a number")
    if c and c in "([":  # ("" at the end of the text is in every string)
        close = ")" if c == "(" else "]"
        cur.pos += 1
        items: list[object] = []
        trailing_comma = False
        while not cur.accept(close):
            items.append(_literal(cur, depth + 1))
            trailing_comma = cur.accept(",")
            if not trailing_comma and not cur.startswith(close):
                raise cur.error(f"',' or '{close}'")
        if c == "(" and len(items) == 1 and not trailing_comma:
            return items[0]  # parenthesised expression, not a tuple
        return tuple(items) if c == "(" else list(items)
    if c == "{":
        cur.pos += 1
        d: dict[object, object] = {}
        while not cur.accept("}"):
            key_pos = cur.ws().pos
            k = _literal(cur, depth + 1)
            cur.expect(":", "':'")
            v = _literal(cur, depth + 1)
            try:
                d[k] = v  # type: ignore[index]
            except TypeError:  # a list as a key: unhashable, as in Python
                raise ParseError(
                    "a dict key that is None, a number, a string or a tuple", cur.text, key_pos
                ) from None
            if not cur.accept(",") and not cur.startswith("}"):
                raise cur.error("',' or '}'")
        return d
    word_pos = cur.ws().pos
    word = cur.ident("a Python literal")
    if word == "None":
        return None
    if word in ("True", "False"):
        return word == "True"
    if word in ("array", "np.array", "numpy.array", "tuple", "list") and cur.startswith("("):
        cur.expect("(")
        v = _literal(cur, depth + 1)
        if cur.accept(","):  # array([...], dtype=int32): ignore keyword arguments
            while not cur.startswith(")"):
                cur.ident("a keyword argument")
                cur.expect("=", "'='")
                cur.ident("a value") if cur.peek() not in "'\"" else cur.quoted()
                if not cur.accept(","):
                    break
        cur.expect(")", "')'")
        return v
    raise ParseError(
        "a Python literal (None, a number, a string, a tuple or a list)",
        cur.text,
        word_pos,
        found=repr(word),
    )


def parse_py_literal(text: str, pos: int = 0) -> object:
    cur = Cursor(text, pos)
    v = _literal(cur, 0)
    if not cur.at_end():
        raise cur.error("end of the value")
    return v


def parse_pspec(text: str) -> PSpec:
    """A PartitionSpec as a tuple with, per tensor dim, None or the tuple of mesh axis names.

    Accepts `P(...)`/`PartitionSpec(...)`, a tuple, a list, or a single name / `None`.
    Integer entries (torch_xla mesh axis indices) are kept as their decimal text.
    """
    cur = Cursor(text)
    called = False
    for name in _CALLS:
        if cur.startswith(name):
            save = cur.pos
            cur.pos += len(name)
            if cur.startswith("("):
                called = True
                break
            cur.pos = save
    if called:
        cur.expect("(")
        items: list[object] = []
        while not cur.accept(")"):
            items.append(_literal(cur, 1))
            if not cur.accept(",") and not cur.startswith(")"):
                raise cur.error("',' or ')'")
        if not cur.at_end():
            raise cur.error("end of the PartitionSpec")
        value: object = tuple(items)
    else:
        first = cur.peek()
        bare = text.strip()
        if bare.isidentifier() and bare not in ("None", "True", "False"):
            return ((bare,),)  # a single unquoted axis name
        value = parse_py_literal(text)
        if first not in "([":
            value = (value,)
    if not isinstance(value, (tuple, list)):
        raise ParseError("a PartitionSpec (a tuple or list of axis names)", text, 0)
    return tuple(_entry(e, text) for e in value)


def _name(v: object, text: str) -> str:
    if isinstance(v, bool) or not isinstance(v, (str, int)):
        raise ParseError("a mesh axis name (a string)", text, 0, found=repr(v))
    return str(v)


def _entry(e: object, text: str) -> tuple[str, ...] | None:
    if e is None:
        return None
    if isinstance(e, (tuple, list)):
        names = tuple(_name(x, text) for x in e)
        return names or None
    return (_name(e, text),)


def _resolve(name: str, mesh: Mesh) -> str:
    if mesh.has_axis(name):
        return name
    if name.isascii() and name.lstrip("-").isdigit() and 0 <= int(name) < len(mesh.axes):
        return mesh.names[int(name)]  # torch_xla refers to mesh axes by index
    raise MeshdiagError(f"PartitionSpec axis '{name}' is not an axis of the mesh ({mesh.short()})")


def pspec_to_named(spec: PSpec, mesh: Mesh) -> NamedSharding:
    """The named sharding a plain PartitionSpec means on `mesh` (closed dims)."""
    used: set[str] = set()
    dims = []
    for entry in spec:
        axes = []
        for raw in entry or ():
            name = _resolve(raw, mesh)
            if name in used:
                raise MeshdiagError(f"PartitionSpec uses mesh axis '{name}' more than once")
            used.add(name)
            axes.append(AxisRef(name))
        dims.append(DimSharding(tuple(axes)))
    return NamedSharding(mesh=mesh, dims=tuple(dims), mesh_ref=mesh.name)


def named_to_pspec(s: NamedSharding) -> str | None:
    """`P(None, 'model')`, or None when the sharding uses features a plain spec lacks
    (sub-axes, open dims, priorities, unreduced or manual axes, whole-tensor forms)."""
    if s.unreduced or s.manual or s.whole not in (None, "replicated"):
        return None
    if s.whole == "replicated":
        return "P()"
    parts = []
    for d in s.dims:
        if d.is_open or d.priority is not None or any(a.is_sub for a in d.axes):
            return None
        parts.append(print_pspec_entry([a.name for a in d.axes]))
    return "P(" + ", ".join(parts) + ")"


def print_pspec_entry(axes: Sequence[str]) -> str:
    """One PartitionSpec entry: `None`, `'model'` or `('x', 'y')`."""
    if not axes:
        return "None"
    if len(axes) == 1:
        return repr(axes[0])
    return "(" + ", ".join(map(repr, axes)) + ")"
