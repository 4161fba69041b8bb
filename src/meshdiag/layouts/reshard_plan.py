"""Plan a reshard: the collectives that take one named sharding to another on the same mesh.

Pure: shardings in, a list of steps out (no bytes, no devices; `reshard_cost` prices them).
The steps follow the semantics of Shardy's `sdy.reshard` → collectives lowering:

- **all-slice** on axes added to a dimension (no communication);
- **all-to-all** when axes move from the minor end of one dimension to another;
- **collective-permute** when only the device order differs (the per-dimension shard counts
  stay, the axes change), or to put axes in the order the following all-to-alls need;
- **all-gather** on axes removed from a dimension.

Each round tries them in Shardy's order of cheapness (all-slice, then all-to-all /
collective-permute, then all-gather). Axes are first cut into common atoms (a sub-axis
`"x":(1)2` and the whole `"x"` become `x:(1)2, x:(2)2`), so moving part of an axis is moving
atoms. Cases the rules do not resolve (e.g. swapping axes of different sizes between dims,
which needs splitting an axis) fall back to gathering the misplaced axes and slicing the target
ones: correct, never cheaper than what XLA finds, and marked `fallback` in the plan.

Example (Shardy's own test): mesh x=2,y=2,z=2, `[{"y"}, {"x","z"}, {}]` →
`[{}, {}, {"x","y","z"}]` is collective-permute to `[{"x"}, {"y","z"}, {}]`, all-to-all x
0→2, all-to-all y,z 1→2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from meshdiag.errors import MeshdiagError
from meshdiag.model.mesh import Mesh
from meshdiag.model.sharding import AxisRef, DimSharding, NamedSharding

Axes = tuple[AxisRef, ...]
State = tuple[Axes, ...]

#: kinds in the order a round tries them
SLICE, A2A, PERMUTE, GATHER = "all-slice", "all-to-all", "collective-permute", "all-gather"


@dataclass(frozen=True)
class Step:
    """One collective. `axes[d]` are the axes sliced/gathered on dim d (all-slice,
    all-gather), or, for an all-to-all, `axes[src_dim]` the axes moved to `tgt_dim`."""

    kind: str
    axes: State
    before: State
    after: State
    src_dim: int | None = None
    tgt_dim: int | None = None

    @property
    def group_axes(self) -> Axes:
        """The mesh atoms whose devices form one group (empty for a collective-permute)."""
        return tuple(a for d in self.axes for a in d)


@dataclass(frozen=True)
class Plan:
    mesh: Mesh
    #: the two shardings as atoms per dim
    source: State
    target: State
    steps: tuple[Step, ...]
    #: the gather-then-slice fallback was used for axes the rules could not place
    fallback: bool = False

    def named(self, state: State) -> NamedSharding:
        return state_to_named(self.mesh, state)


# -- atoms ---------------------------------------------------------------------------------


def _size(mesh: Mesh, a: AxisRef) -> int:
    return a.size if a.size is not None else mesh.axis_size(a.name)


def axes_size(mesh: Mesh, axes: Axes | list[AxisRef]) -> int:
    return math.prod(_size(mesh, a) for a in axes)


def _span(mesh: Mesh, a: AxisRef) -> tuple[int, int]:
    """(pre, pre*size) of an axis ref: the part of its axis it covers."""
    if a.is_sub:
        assert a.pre is not None and a.size is not None
        return a.pre, a.pre * a.size
    return 1, mesh.axis_size(a.name)


def mesh_cuts(mesh: Mesh, states: list[State]) -> dict[str, list[int]]:
    """Per axis, the sorted cut points every sub-axis in `states` needs (1 and the size)."""
    cuts: dict[str, set[int]] = {name: {1, size} for name, size in mesh.axes}
    for st in states:
        for axes in st:
            for a in axes:
                if a.name not in cuts:
                    raise MeshdiagError(f"axis {a.name!r} is not in mesh {mesh.short()}")
                cuts[a.name].update(_span(mesh, a))
    out: dict[str, list[int]] = {}
    for name, points in cuts.items():
        p = sorted(points)
        for lo, hi in zip(p, p[1:], strict=False):
            if hi % lo:
                raise MeshdiagError(
                    f"the sub-axes of {name!r} in the two shardings do not nest "
                    f"(cut at {lo} and {hi} of size {mesh.axis_size(name)})"
                )
        out[name] = p
    return out


def atoms_of(mesh: Mesh, a: AxisRef, cuts: dict[str, list[int]]) -> list[AxisRef]:
    lo, hi = _span(mesh, a)
    full = mesh.axis_size(a.name)
    points = [c for c in cuts[a.name] if lo <= c <= hi]
    return [
        AxisRef(a.name) if (p == 1 and q == full) else AxisRef(a.name, p, q // p)
        for p, q in zip(points, points[1:], strict=False)
    ]


def mesh_atoms(mesh: Mesh, cuts: dict[str, list[int]]) -> list[AxisRef]:
    """Every atom of the mesh, in mesh order (major axis first, each axis major part first)."""
    return [x for name, _ in mesh.axes for x in atoms_of(mesh, AxisRef(name), cuts)]


def merge_axes(mesh: Mesh, axes: Axes | list[AxisRef]) -> Axes:
    """Join adjacent atoms of one axis (`x:(1)2, x:(2)2` → `x` on a size-4 axis)."""
    out: list[AxisRef] = []
    for a in axes:
        if out and out[-1].name == a.name:
            plo, phi = _span(mesh, out[-1])
            lo, hi = _span(mesh, a)
            if phi == lo:
                full = mesh.axis_size(a.name)
                out[-1] = (
                    AxisRef(a.name) if plo == 1 and hi == full else AxisRef(a.name, plo, hi // plo)
                )
                continue
        out.append(a)
    return tuple(out)


def _cut_atom(mesh: Mesh, a: AxisRef, k: int) -> tuple[AxisRef, AxisRef]:
    """Atom `a` as its major part of size k and the minor rest."""
    lo, hi = _span(mesh, a)
    return AxisRef(a.name, lo, k), AxisRef(a.name, lo * k, hi // (lo * k))


def _replace(axes, a: AxisRef, parts: tuple[AxisRef, ...]) -> list[AxisRef]:
    return [y for x in axes for y in (parts if x == a else (x,))]


def state_to_named(mesh: Mesh, state: State) -> NamedSharding:
    dims = tuple(DimSharding(merge_axes(mesh, axes)) for axes in state)
    return NamedSharding(mesh, dims, mesh_ref=mesh.name)


def named_state(s: NamedSharding, mesh: Mesh, rank: int) -> State:
    """The closed per-dim axes of `s` (open dims, priorities and `replicated=` dropped)."""
    if s.unreduced or s.manual or s.whole in ("manual", "unreduced"):
        raise MeshdiagError(
            "reshard plans tiled and replicated shardings; this one has "
            + ("unreduced" if s.unreduced or s.whole == "unreduced" else "manual")
            + " axes"
        )
    if s.whole == "replicated":
        return tuple(() for _ in range(rank))
    if len(s.dims) != rank:
        raise MeshdiagError(f"the sharding has rank {len(s.dims)} but the shape has rank {rank}")
    return tuple(tuple(d.axes) for d in s.dims)


# -- the planner ----------------------------------------------------------------------------


def plan_reshard(
    source: NamedSharding,
    target: NamedSharding,
    mesh: Mesh,
    shape: tuple[int, ...] | None = None,
    *,
    eager_slice: bool = True,
    swap_axes: bool = True,
) -> Plan:
    """The collectives that take `source` to `target` (both on `mesh`, tensor `shape`).

    The defaults are Shardy's choices. `eager_slice` also slices free target axes onto dims
    where they are misplaced, to shrink the buffers later collectives move (without it only
    axes that land in place are sliced early); `swap_axes` lets a collective-permute swap two
    equal-size axes between dims. No setting is cheapest for every pair: `plan_candidates`
    gives the plan of each, for a cost model to choose from.
    """
    rank = len(shape) if shape is not None else max(len(source.dims), len(target.dims))
    src = named_state(source, mesh, rank)
    dst = named_state(target, mesh, rank)
    cuts = mesh_cuts(mesh, [src, dst])
    src = tuple(tuple(x for a in axes for x in atoms_of(mesh, a, cuts)) for axes in src)
    dst = tuple(tuple(x for a in axes for x in atoms_of(mesh, a, cuts)) for axes in dst)
    for name, st in (("source", src), ("target", dst)):
        flat = [a for axes in st for a in axes]
        if len(set(flat)) != len(flat):
            raise MeshdiagError(f"the {name} sharding uses a mesh axis more than once")
    p = _Planner(mesh, src, dst, shape, eager_slice, swap_axes)
    p.run()
    return Plan(mesh, src, dst, tuple(p.steps), p.fallback)


def plan_candidates(
    source: NamedSharding,
    target: NamedSharding,
    mesh: Mesh,
    shape: tuple[int, ...] | None = None,
) -> list[Plan]:
    """The distinct plans of every planner setting, Shardy's first."""
    out: list[Plan] = []
    for eager in (True, False):
        for swap in (True, False):
            p = plan_reshard(source, target, mesh, shape, eager_slice=eager, swap_axes=swap)
            if all(p.steps != q.steps for q in out):
                out.append(p)
    return out


class _Planner:
    def __init__(
        self,
        mesh: Mesh,
        cur: State,
        out: State,
        shape: tuple[int, ...] | None,
        eager: bool,
        swap: bool,
    ) -> None:
        self.mesh = mesh
        self.cur: list[list[AxisRef]] = [list(a) for a in cur]
        self.out = out
        self.shape = shape
        self.steps: list[Step] = []
        self.fallback = False
        self.eager = eager
        self.swap = swap
        self.out_dim = {a: d for d, axes in enumerate(out) for a in axes}

    # state helpers
    def state(self) -> State:
        return tuple(tuple(a) for a in self.cur)

    def done(self) -> bool:
        return self.state() == self.out

    def rest(self, d: int) -> tuple[list[AxisRef], list[AxisRef]]:
        """(current axes, target axes) of dim d past their common prefix."""
        cur, out = self.cur[d], self.out[d]
        p = 0
        while p < len(cur) and p < len(out) and cur[p] == out[p]:
            p += 1
        return cur[p:], list(out[p:])

    def used(self) -> set[AxisRef]:
        return {a for axes in self.cur for a in axes}

    def size(self, axes) -> int:
        return axes_size(self.mesh, axes)

    def emit(self, kind: str, axes: list[list[AxisRef]], before: State, **dims) -> None:
        self.steps.append(Step(kind, tuple(tuple(a) for a in axes), before, self.state(), **dims))

    def run(self) -> None:
        rank = len(self.cur)
        for _ in range(2 * rank + 2):
            if self.done():
                return
            before = len(self.steps)
            self.all_slice()
            self.all_to_alls()
            if self.permute():
                self.all_to_alls()
            self.all_to_alls_out_of_order()
            self.all_gather()
            if len(self.steps) == before:
                break
        if not self.done():
            self.gather_then_slice()

    # all-slice
    def _divides(self, d: int, extra: list[AxisRef]) -> bool:
        if self.shape is None:
            return True
        return self.shape[d] % (self.size(self.cur[d]) * self.size(extra)) == 0

    def all_slice(self) -> None:
        before = self.state()
        used = self.used()
        sliced: list[list[AxisRef]] = [[] for _ in self.cur]
        # 1. axes a later all-to-all moves along with the source dim's axes (slice them
        #    first at the source, as Shardy does: the all-to-all then moves a smaller buffer)
        for s in range(len(self.cur)):
            in_s, out_s = self.rest(s)
            if not in_s or out_s:
                continue
            t = self.out_dim.get(in_s[-1])
            if t is None or t == s or self.rest(t)[0]:
                continue
            out_t = self.rest(t)[1]
            if in_s[-1] not in out_t:
                continue
            k = out_t.index(in_s[-1])
            j = 0
            while j < len(in_s) and k - j >= 0 and in_s[-1 - j] == out_t[k - j]:
                j += 1
            if any(a in out_t for a in in_s[: len(in_s) - j]):
                continue
            extra = []
            for a in out_t[k + 1 :]:
                if a in used:
                    break
                extra.append(a)
            if extra and self._divides(s, extra):
                self.cur[s].extend(extra)
                sliced[s].extend(extra)
                used.update(extra)
        # 2. axes free to slice, on the dim the target wants them: in place while the dim
        #    holds nothing misplaced and they come in target order; else as misplaced axes
        #    up to the dim's capacity (how much more the target shards it), which a
        #    collective-permute or an all-to-all then puts in place. An axis bigger than the
        #    capacity is cut to fit.
        capacity: list[int] = []
        leftover: list[AxisRef] = []
        for d in range(len(self.cur)):
            in_d, out_d = self.rest(d)
            cap = self.size(out_d) // math.gcd(self.size(in_d), self.size(out_d))
            in_place = not in_d
            for a in list(out_d):
                if a in used:
                    in_place = False
                    continue
                n = self.size([a])
                if in_place:
                    take = a
                elif not self.eager:
                    continue
                elif cap > 1 and cap % n == 0:
                    take = a
                    cap //= n
                elif cap > 1 and n % cap == 0:
                    major, minor = _cut_atom(self.mesh, a, cap)
                    self._split(a, cap)
                    take, cap = major, 1
                    leftover.append(minor)
                else:
                    leftover.append(a)
                    continue
                self.cur[d].append(take)
                sliced[d].append(take)
                used.add(take)
            capacity.append(cap if not in_place else 1)
        # 3. the rest on the first dim with capacity left
        for a in leftover:
            if a in used:
                continue
            n = self.size([a])
            for d, cap in enumerate(capacity):
                if cap > 1 and cap % n == 0:
                    self.cur[d].append(a)
                    sliced[d].append(a)
                    used.add(a)
                    capacity[d] //= n
                    break
        if any(sliced):
            self.emit(SLICE, sliced, before)

    # all-to-all
    def all_to_alls(self) -> None:
        progress = True
        while progress:
            progress = False
            for t in range(len(self.cur)):
                in_t, need = self.rest(t)
                if in_t or not need:
                    continue
                for s in range(len(self.cur)):
                    if s == t:
                        continue
                    in_s = self.rest(s)[0]
                    j = next(
                        (
                            j
                            for j in range(min(len(in_s), len(need)), 0, -1)
                            if in_s[-j:] == need[:j]
                        ),
                        0,
                    )
                    if not j:
                        continue
                    self.move_trailing(s, t, j)
                    progress = True
                    break
                if progress:
                    break

    def move_trailing(self, s: int, t: int, j: int) -> None:
        """An all-to-all: dim `s`'s last `j` axes move to the end of dim `t`."""
        before = self.state()
        moved = self.cur[s][-j:]
        del self.cur[s][-j:]
        self.cur[t].extend(moved)
        axes: list[list[AxisRef]] = [[] for _ in self.cur]
        axes[s] = moved
        self.emit(A2A, axes, before, src_dim=s, tgt_dim=t)

    def all_to_alls_out_of_order(self) -> None:
        """Move a dim's trailing axes to the dim that wants them even where they do not land
        in order there (Shardy's second all-to-all pass); a later collective-permute reorders
        that dim."""
        for s in range(len(self.cur)):
            in_s = self.rest(s)[0]
            if not in_s:
                continue
            t = self.out_dim.get(in_s[-1])
            if t is None or t == s:
                continue
            j = 1
            while j < len(in_s) and self.out_dim.get(in_s[-1 - j]) == t:
                j += 1
            self.move_trailing(s, t, j)
            return

    # collective-permute
    def _split(self, a: AxisRef, k: int) -> None:
        """Cut atom `a` into its major part of size k and the rest, everywhere."""
        parts = _cut_atom(self.mesh, a, k)
        self.cur = [_replace(axes, a, parts) for axes in self.cur]
        self.out = tuple(tuple(_replace(axes, a, parts)) for axes in self.out)
        self.out_dim = {x: d for d, axes in enumerate(self.out) for x in axes}

    def _prefix(self, axes: list[AxisRef], m: int, *, split: bool) -> list[AxisRef] | None:
        """The leading atoms of `axes` of total size m (cutting one atom when `split`)."""
        got: list[AxisRef] = []
        acc = 1
        for a in axes:
            if acc == m:
                break
            n = self.size([a])
            if m % (acc * n) == 0:
                got.append(a)
                acc *= n
                continue
            k = m // acc
            if n % k or not split:
                return None
            self._split(a, k)
            return self._prefix(_replace(axes, a, _cut_atom(self.mesh, a, k)), m, split=False)
        return got if acc == m else None

    def permute(self) -> bool:
        before = self.state()
        # 1. a dim with misplaced axes: replace the leading ones by the target's leading axes
        #    of the same size (the smaller of the two sizes; an atom may be cut to fit)
        swaps: dict[int, int] = {}
        reorder: dict[int, list[AxisRef]] = {}
        for d in range(len(self.cur)):
            in_d, out_d = self.rest(d)
            if not in_d:
                continue
            # 0. reorder a dim's own axes (all-to-alls found nothing to move): the target's
            #    next axes first, axes leaving for other dims grouped by target dim in target
            #    order, axes no dim of the target has last (so an all-gather can pop them)
            #    A dim whose target wants other axes next, or as many devices as the dim
            #    has, gets them by case 1 instead.
            if not out_d or (out_d[0] in in_d and self.size(in_d) != self.size(out_d)):
                first = [a for a in out_d if a in in_d]
                drop = [a for a in in_d if a not in self.out_dim]
                middle = [a for a in in_d if a not in first and a not in drop]
                if not out_d:  # all of them leave: group them by target dim, in target order
                    middle.sort(key=lambda a: (self.out_dim[a], self.out[self.out_dim[a]].index(a)))
                order = first + middle + drop
                if order != in_d:
                    reorder[d] = order
                continue
            m = min(self.size(in_d), self.size(out_d))
            if self._prefix(in_d, m, split=True) is None:
                continue
            if self._prefix(self.rest(d)[1], m, split=True) is None:
                continue
            swaps[d] = m
        options: list[list[list[AxisRef]]] = []
        for dims in ([*swaps], *([d] for d in swaps)) if swaps else ():
            new = [list(a) for a in self.cur]
            for d in dims:
                in_d, out_d = self.rest(d)
                pin = self._prefix(in_d, swaps[d], split=False)
                pout = self._prefix(out_d, swaps[d], split=False)
                if pin is None or pout is None:
                    break
                keep = len(self.cur[d]) - len(in_d)
                new[d] = self.cur[d][:keep] + pout + in_d[len(pin) :]
                # the axis coming in sits on another dim: it takes the one going out there
                if (
                    self.swap
                    and len(pin) == 1
                    and len(pout) == 1
                    and self.size(pin) == self.size(pout)
                ):
                    for e in range(len(new)):
                        if e != d and pout[0] in new[e]:
                            new[e][new[e].index(pout[0])] = pin[0]
            else:
                options.append(new)
        new = next((o for o in options if self._valid(o)), [list(a) for a in self.cur])
        for d, axes in reorder.items():
            if new[d] == self.cur[d]:  # not already changed by a swap of case 1
                new[d] = self.cur[d][: len(self.cur[d]) - len(axes)] + axes
        # 2. dims whose axes all go to one target dim, in an order all-to-alls cannot keep:
        #    regroup them so the all-to-alls (lowest source dim first) append in order
        for t in range(len(new)):
            in_t, need = self.rest(t)
            if in_t or not need:
                continue
            srcs = [
                s
                for s in range(len(new))
                if s != t
                and self.rest(s)[0]
                and not self.rest(s)[1]
                and all(a in need for a in self.rest(s)[0])
            ]
            if not srcs:
                continue
            moving = [a for s in srcs for a in self.rest(s)[0]]
            if set(moving) != set(need[: len(moving)]):
                continue
            pos, chunks = 0, []
            for s in srcs:
                want, got = self.size(self.rest(s)[0]), []
                while pos < len(moving) and self.size(got) < want:
                    got.append(need[pos])
                    pos += 1
                if self.size(got) != want:
                    break
                chunks.append(got)
            else:
                for s, chunk in zip(srcs, chunks, strict=True):
                    keep = len(self.cur[s]) - len(self.rest(s)[0])
                    new[s] = self.cur[s][:keep] + chunk
        if new == self.cur or not self._valid(new):
            return False
        self.cur = new
        self.emit(PERMUTE, [[] for _ in new], before)
        return True

    def _valid(self, new: list[list[AxisRef]]) -> bool:
        """A collective-permute target: each atom once, the same shard count per dim."""
        flat = [a for axes in new for a in axes]
        if len(set(flat)) != len(flat):
            return False
        return all(self.size(a) == self.size(b) for a, b in zip(new, self.cur, strict=True))

    # all-gather
    def all_gather(self) -> None:
        before = self.state()
        wanted = set(self.out_dim)
        gathered: list[list[AxisRef]] = [[] for _ in self.cur]
        for d in range(len(self.cur)):
            in_d = self.rest(d)[0]
            k = len(in_d)
            while k and in_d[k - 1] not in wanted:
                k -= 1
            if k < len(in_d):
                gathered[d] = in_d[k:]
                del self.cur[d][len(self.cur[d]) - (len(in_d) - k) :]
        if any(gathered):
            self.emit(GATHER, gathered, before)

    def gather_then_slice(self) -> None:
        self.fallback = True
        before = self.state()
        gathered = []
        for d in range(len(self.cur)):
            in_d = self.rest(d)[0]
            gathered.append(in_d)
            del self.cur[d][len(self.cur[d]) - len(in_d) :]
        if any(gathered):
            self.emit(GATHER, gathered, before)
        before = self.state()
        sliced = []
        for d in range(len(self.cur)):
            out_d = self.rest(d)[1]
            sliced.append(out_d)
            self.cur[d].extend(out_d)
        if any(sliced):
            self.emit(SLICE, sliced, before)
