"""Tile assignments: which device holds each tile (XLA's `TileAssignment`).

Two forms, as in XLA: an iota form `[dims]<=[reshape]T(perm)` meaning
`arange(prod(reshape)).reshape(reshape).transpose(perm).reshape(dims)`, kept canonical
(size-1 reshape dims dropped, runs of adjacent in-order perm entries merged — XLA's
`CanonicalizeIotaDims`), and an explicit row-major device list. Two assignments are equal
when their dims and device arrays are equal, whatever the form (XLA's `operator==`).
The math lives here; printing is in `formats/gspmd.py`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from meshdiag.errors import MeshdiagError
from meshdiag.limits import check_device_count

if TYPE_CHECKING:
    import numpy as np


def canonicalize_iota(
    reshape: tuple[int, ...], perm: tuple[int, ...]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Drop size-1 reshape dims and merge dims that stay adjacent and in order under perm."""
    keep = [i for i, s in enumerate(reshape) if s != 1]
    if not keep:
        return (), ()
    # renumber perm over the kept dims
    rank_of = {old: new for new, old in enumerate(keep)}
    sizes = [reshape[i] for i in keep]
    p = [rank_of[i] for i in perm if i in rank_of]
    # merge runs p[j+1] == p[j] + 1: those reshape dims are contiguous in both orders
    merged = True
    while merged:
        merged = False
        for j in range(len(p) - 1):
            if p[j + 1] == p[j] + 1:
                a = p[j]
                sizes[a] *= sizes[a + 1]
                del sizes[a + 1]
                del p[j + 1]
                p = [x - 1 if x > a else x for x in p]
                merged = True
                break
    return tuple(sizes), tuple(p)


#: up to so many devices `TileAssignment.devices` lists an iota assignment in Python (a
#: picture of a few devices needs no numpy)
LISTED_IOTA_DEVICES = 1024


@dataclass(frozen=True, eq=False)
class TileAssignment:
    dims: tuple[int, ...]
    #: iota form (canonical): reshape dims and transpose perm; None for explicit lists
    reshape: tuple[int, ...] | None = None
    perm: tuple[int, ...] | None = None
    #: explicit form: row-major device ids over `dims`
    explicit: tuple[int, ...] | None = None
    _array: object = field(default=None, repr=False, compare=False)

    # -- construction --------------------------------------------------------------------
    @classmethod
    def iota(
        cls,
        dims: tuple[int, ...] | list[int],
        reshape: tuple[int, ...] | list[int] | None = None,
        perm: tuple[int, ...] | list[int] | None = None,
    ) -> TileAssignment:
        dims = tuple(int(d) for d in dims)
        n = _checked_count(dims)
        reshape = tuple(int(r) for r in (reshape if reshape is not None else (n,)))
        perm = tuple(int(p) for p in (perm if perm is not None else range(len(reshape))))
        if sorted(perm) != list(range(len(reshape))):
            raise MeshdiagError(
                f"iota transpose T({','.join(map(str, perm))}) is not a permutation of "
                f"0..{len(reshape) - 1}"
            )
        if math.prod(reshape) != n:
            raise MeshdiagError(
                f"tile assignment dims [{','.join(map(str, dims))}] hold {n} devices but iota "
                f"reshape [{','.join(map(str, reshape))}] holds {math.prod(reshape)}"
            )
        r, p = canonicalize_iota(reshape, perm)
        if not r:
            r, p = (n,), (0,)
        return cls(dims, r, p, None)

    @classmethod
    def from_devices(
        cls, dims: tuple[int, ...] | list[int], devices: tuple[int, ...] | list[int]
    ) -> TileAssignment:
        dims = tuple(int(d) for d in dims)
        n = _checked_count(dims)
        devices = tuple(int(d) for d in devices)
        if len(devices) != n:
            raise MeshdiagError(
                f"tile assignment dims [{','.join(map(str, dims))}] need {n} devices, "
                f"the list has {len(devices)}"
            )
        return cls(dims, None, None, devices)

    @classmethod
    def from_array(cls, array: np.ndarray) -> TileAssignment:
        return cls.from_devices(tuple(array.shape), tuple(int(x) for x in array.reshape(-1)))

    # -- queries -------------------------------------------------------------------------
    @property
    def is_iota(self) -> bool:
        return self.reshape is not None

    @property
    def num_devices(self) -> int:
        return math.prod(self.dims)

    @property
    def rank(self) -> int:
        return len(self.dims)

    def array(self) -> np.ndarray:
        """Device ids as an int64 array of shape `dims` (computed once; read-only)."""
        if self._array is None:
            import numpy as np

            if self.is_iota:
                a = (
                    np.arange(self.num_devices, dtype=np.int64)
                    .reshape(self.reshape)
                    .transpose(self.perm)
                    .reshape(self.dims)
                )
            else:
                a = np.asarray(self.explicit, dtype=np.int64).reshape(self.dims)
            a = np.ascontiguousarray(a)
            a.flags.writeable = False
            object.__setattr__(self, "_array", a)
        return self._array  # type: ignore[return-value]

    def devices(self) -> tuple[int, ...]:
        """Row-major device list (V1 form)."""
        if self.explicit is not None:
            return self.explicit
        if self._array is None and self.num_devices <= LISTED_IOTA_DEVICES:  # (no numpy for a few)
            return self._first_devices(self.num_devices)
        return tuple(int(x) for x in self.array().reshape(-1))

    def as_iota(self) -> TileAssignment | None:
        """This assignment in iota form if one exists (checks the few candidate forms cheaply)."""
        return iota_form_of(self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TileAssignment):
            return NotImplemented
        if self.dims != other.dims:
            return False
        if self.is_iota and other.is_iota:
            return (self.reshape, self.perm) == (other.reshape, other.perm)
        if self.explicit is not None and other.explicit is not None:
            return self.explicit == other.explicit
        import numpy as np

        return bool(np.array_equal(self.array(), other.array()))

    def __hash__(self) -> int:
        # equal assignments must hash equal across forms: hash the dims and a prefix of devices
        # (computed once: shardings are dict keys in every per-distinct-sharding memo)
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash((self.dims, self._first_devices(16)))
            object.__setattr__(self, "_hash", h)
        return h

    def _first_devices(self, k: int) -> tuple[int, ...]:
        """The first `k` devices in row-major order, without building the array (hashing
        must not need numpy: the scanner hashes every distinct sharding)."""
        if self.explicit is not None:
            return self.explicit[:k]
        assert self.reshape is not None and self.perm is not None
        # position i of the transposed iota: unravel i over the permuted shape, then weigh
        # each coordinate by the stride its axis has in the untransposed array
        strides = [1] * len(self.reshape)
        for d in range(len(self.reshape) - 2, -1, -1):
            strides[d] = strides[d + 1] * self.reshape[d + 1]
        axes = [(self.reshape[p], strides[p]) for p in self.perm][::-1]
        out = []
        for i in range(min(k, self.num_devices)):
            device = 0
            for size, stride in axes:
                i, c = divmod(i, size)
                device += c * stride
            out.append(device)
        return tuple(out)


def _checked_count(dims: tuple[int, ...]) -> int:
    for d in dims:
        if d < 1:
            raise MeshdiagError(
                f"tile assignment dims [{','.join(map(str, dims))}] must all be positive"
            )
    return check_device_count(math.prod(dims), "tile assignment")


def iota_form_of(tile: TileAssignment) -> TileAssignment | None:
    """The canonical iota form of an explicit tile assignment, or None when there is none.

    An iota array is affine in a mixed radix: read from the minor end, each device-order dim
    is a run `0, s, 2s, ...` of its stride s, repeated. Peeling the runs off one at a time
    gives the (size, stride) of every dim; the strides must then be the row-major strides of
    the reshape dims. The greedy run is exact for canonical forms (a run that continues past a
    dim boundary means the two dims would have been merged by canonicalisation).
    """
    if tile.is_iota:
        return tile
    if tile._array is None and tile.num_devices <= LISTED_IOTA_DEVICES:
        return _iota_form_of_list(tile.dims, tile.explicit)  # type: ignore[arg-type]
    return iota_form_of_array(tile.array())


def _iota_form_of_list(dims: tuple[int, ...], flat: tuple[int, ...]) -> TileAssignment | None:
    """`iota_form_of_array` on a short device list, in plain Python: a directory summary
    asks it of every listed sharding it names, and importing numpy costs more than all of
    them."""
    return _iota_form(dims, flat, _peel_listed)


def iota_form_of_array(array: np.ndarray) -> TileAssignment | None:
    """`iota_form_of` for a device array (no tuple of a million Python ints on the way)."""
    import numpy as np

    dims = tuple(int(d) for d in array.shape)
    return _iota_form(dims, np.ascontiguousarray(array, dtype=np.int64).reshape(-1), _peel_array)


def _iota_form(dims: tuple[int, ...], flat, peel) -> TileAssignment | None:
    """`iota_form_of` of the devices `flat` (a tuple or a 1-D array), peeling the runs off
    with `peel` (`_peel_listed`, `_peel_array`): each run's (size, stride, the first
    device of each of its blocks), or None when the devices are not such runs."""
    if len(flat) == 1:
        return TileAssignment.iota(dims) if flat[0] == 0 else None
    if flat[0] != 0:
        return None
    runs: list[tuple[int, int]] = []  # (size, stride), minor first
    cur = flat
    while len(cur) > 1:
        got = peel(cur)
        if got is None:
            return None
        m, stride, cur = got
        runs.append((m, stride))
    return _iota_of_runs(dims, runs, flat)


def _peel_listed(cur: tuple[int, ...]) -> tuple[int, int, tuple[int, ...]] | None:
    stride = cur[1]
    if stride <= 0:
        return None
    size = len(cur)
    m = next((i for i in range(size) if cur[i] != i * stride), size)
    if size % m:
        return None
    for b in range(0, size, m):
        first = cur[b]
        if any(cur[b + i] != first + i * stride for i in range(1, m)):
            return None
    return m, stride, cur[::m]


def _peel_array(cur: np.ndarray) -> tuple[int, int, np.ndarray] | None:
    import numpy as np

    stride = int(cur[1])
    if stride <= 0:
        return None
    bad = np.flatnonzero(cur != np.arange(cur.size, dtype=np.int64) * stride)
    m = int(bad[0]) if bad.size else cur.size
    if cur.size % m:
        return None
    blocks = cur.reshape(-1, m)
    if not np.array_equal(blocks, blocks[:, :1] + np.arange(m, dtype=np.int64) * stride):
        return None
    return m, stride, blocks[:, 0]


def _iota_of_runs(
    dims: tuple[int, ...], runs: list[tuple[int, int]], flat
) -> TileAssignment | None:
    """The iota assignment whose device-order dims are `runs` ((size, stride), minor
    first), if its devices are `flat` (a device list or array)."""
    # strides in increasing order must be 1, s1, s1*s2, ... (row-major over the reshape)
    by_stride = sorted(runs, key=lambda r: r[1])
    expect = 1
    for size, stride in by_stride:
        if stride != expect:
            return None
        expect *= size
    reshape_order = sorted(range(len(runs)), key=lambda k: -runs[k][1])  # major first
    reshape = [runs[k][0] for k in reshape_order]
    rank_of = {k: r for r, k in enumerate(reshape_order)}
    perm = [rank_of[k] for k in reversed(range(len(runs)))]  # device order, major first
    cand = TileAssignment.iota(dims, reshape, perm)
    if isinstance(flat, tuple):
        return cand if cand.devices() == flat else None
    import numpy as np

    return cand if np.array_equal(cand.array().reshape(-1), flat) else None
