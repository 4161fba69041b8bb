"""What decides a per-value rule's verdict, stated as fields of the value (`Decides`): the
key under which `checks.values` remembers values found clean, worked out for a whole module
at once (`new_keys`: in C when built, `ir/fast/_keys.c`, else `new_keys_py`, its twin).

Values with equal keys are both clean or both not: a rule names the fields its judgement
reads, never a value's name or place, which only its messages show. A big file of new lines
has a million values whose keys mostly repeat; working each key out in Python, about 0.1 to
0.4 us a value and rule, was the floor of the checks.

The fields (`FIELDS`):

- `notation`, `mesh_name`: the value's own.
- `#sharding`, `#hlo`: its parsed sharding and its tiled form, by identity (`id`): hashing a
  parsed object is a Python call per key, and a run parses each distinct text once per
  module state, so equal ones are mostly the same object (one that is not is only judged
  again). The verdicts keep each clean key's value, so no identity in a kept key is reused.
- `rank`: the rank of its shape (the global one, else the per-device one); None without.
- `uneven_shape`: its global shape when its tiled form does not split it evenly
  (`splits_evenly`), else None: most values split evenly, and keyed by their shapes every
  value of a file whose shapes never repeat would be judged.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING

from meshdiag.ir.fast import native
from meshdiag.ir.model import Value

if TYPE_CHECKING:
    from meshdiag.model.sharding import HloSharding

FIELDS = ("notation", "mesh_name", "#sharding", "#hlo", "rank", "uneven_shape")


def splits_evenly(h: HloSharding, shape: tuple[int, ...]) -> bool:
    """Whether the tiled form `h` is sure to split `shape` evenly: not a tiling of a tensor
    of this rank, or every data dimension divisible by its tile count (MD105 finds nothing
    then). Asked for every value: the sharding's split dims are its own, worked out once
    (`split_data_dims`)."""
    split = h.split_data_dims
    if split is None or split[0] != len(shape):
        return True
    for d, k in split[1]:
        if shape[d] % k:
            return False
    return True


def _rank(v: Value) -> int | None:
    shape = v.shape if v.shape is not None else v.local_shape
    return None if shape is None else len(shape)


def _uneven_shape(v: Value) -> tuple[int, ...] | None:
    h, shape = v.hlo, v.shape
    if h is None or shape is None or splits_evenly(h, shape):
        return None
    return shape


_GETTERS = {
    "notation": lambda v: v.notation,
    "mesh_name": lambda v: v.mesh_name,
    "#sharding": lambda v: id(v.sharding),
    "#hlo": lambda v: id(v.hlo),
    "rank": _rank,
    "uneven_shape": _uneven_shape,
}


class Decides:
    """A rule's key of a value: the tuple of the named `FIELDS` (`decides(v)` in Python;
    `codes` for the native `new_keys`; None: Python only)."""

    __slots__ = ("fields", "codes", "_getters", "of_full")

    def __init__(self, *fields: str) -> None:
        unknown = [f for f in fields if f not in FIELDS]
        if not fields or unknown:
            raise ValueError(f"a key is one or more of {FIELDS}, not {fields}")
        self.fields = fields
        self.codes: tuple[int, ...] | None = tuple(FIELDS.index(f) for f in fields)
        self._getters = tuple(_GETTERS[f] for f in fields)
        #: this key of a value whose key of every field (`ALL`) is the tuple given: picked
        #: by an itemgetter (each rule picks its key of each of a module's distinct values)
        self.of_full: Callable[[tuple], Hashable] = (
            itemgetter(*self.codes) if len(self.codes) > 1 else _one(self.codes[0])
        )

    def __call__(self, v: Value) -> Hashable:
        return tuple([g(v) for g in self._getters])

    def __repr__(self) -> str:
        return f"Decides{self.fields!r}"


def _one(code: int) -> Callable[[tuple], Hashable]:
    """`of_full` of a key of one field: a tuple of it (an itemgetter of one index gives the
    item itself)."""
    return lambda full: (full[code],)


#: every field: a value's full key, from which each rule's key is picked (`distinct`)
ALL = Decides(*FIELDS)


def distinct(items: Sequence) -> list[tuple[tuple, Value]]:
    """The first `Value` of each distinct full key (`ALL`) in `items`, with it, in order:
    worked out once for all the rules that judge one list (five per-value rules keyed a
    big file's values five times over, most of the checks' time), each rule's first value
    of a key is then the first of these with that key (`new_keys`' `among`)."""
    return new_keys(items, ALL, {})  # type: ignore[return-value]


def new_keys(
    items: Sequence,
    decides: Decides,
    clean: dict[Hashable, Value],
    among: list[tuple[tuple, Value]] | None = None,
) -> list[tuple[Hashable, Value]]:
    """Of the `Value`s in `items` (column entries of other kinds are left out), the first of
    each key that is not in `clean`, with its key, in order. `among`: `distinct(items)`,
    when the caller has it: the keys are then picked from those few."""
    if among is not None and decides.codes is not None:
        firsts: dict[Hashable, Value] = {}
        of_full = decides.of_full
        for full, v in among:
            k = of_full(full)
            if k not in clean and k not in firsts:
                firsts[k] = v
        return list(firsts.items())
    if _native_new_keys is not None and decides.codes is not None:
        got = _native_new_keys(items, Value, decides.codes, clean)
        if got is not None:  # None: a value the native fields do not know
            return got
    return new_keys_py(items, decides, clean)


def new_keys_py(
    items: Sequence, decides: Decides, clean: dict[Hashable, Value]
) -> list[tuple[Hashable, Value]]:
    """`new_keys` in Python: the reference for the native one."""
    firsts: dict[Hashable, Value] = {}
    for v in items:
        if v.__class__ is not Value:
            continue
        k = decides(v)
        if k not in clean and k not in firsts:
            firsts[k] = v
    return list(firsts.items())


_native_new_keys = native("new_keys")
