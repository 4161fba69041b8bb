"""The memos of one run: every speed-up that remembers an answer lives in a `RunMemos`.

Whoever starts a run (a CLI command, a library call such as `inspect_paths`) makes one
`RunMemos` and passes it down; a function given none makes its own, so nothing is remembered
across calls and no memo outlives its run. Each memo is a dict keyed by value (a string, a
tuple of shardings; `identity` tables for objects compared by identity, holding them) and
bounded: past its budget it starts over.

    memos = RunMemos()
    parsed = memos.table("gspmd.parse")          # a bounded dict, made on first use
    sharding = parsed.call(parse, text)          # parse(text) once per distinct text

`memos.last(name)` keeps only the last key's value; `memos.recent(name)` the last few
hundred keys' (a file that repeats one read a little before).

Counting entries bounds a memo only as far as each entry is small, and an entry keyed by a
parsed sharding holds the sharding, whose listed devices may be thousands (a run over 3,000
distinct 2,048-device lists held 280 MB of them, kept alive by every memo keyed by
sharding). So the run also counts what it parses (`hold`, asked by the scanner's memo for
each sharding and mesh it parses): past MAX_HELD_BYTES, every memo of the run starts over
(`start_over`), each memo made with a `clear()` for it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: entries a table keeps before it starts over (each entry may keep a module's values alive:
#: about 1 KB; a real program's every-pass dump has a few thousand distinct ones)
MAX_ENTRIES = 1 << 14
#: rows a content memo may hold before it starts over, and the largest module it memoises
#: (a row costs about 16 bytes plus what it keeps alive)
MAX_ROWS = 1 << 15
MAX_MODULE_ROWS = 1 << 14
#: bytes of parsed shardings and meshes (as `ir.scancache` weighs them) a run's memos may
#: hold before they all start over: a real program's every-pass dump parses a few MB of
#: them in all, but every distinct sharding of a 4,096-device pod listing its devices
#: costs 180 KB
MAX_HELD_BYTES = 32 << 20


class Table:
    """A dict bounded by its number of entries: full, it starts over."""

    __slots__ = ("data", "limit")

    def __init__(self, limit: int = MAX_ENTRIES) -> None:
        self.data: dict[Any, Any] = {}
        self.limit = limit

    def get(self, key: Any, default: Any = None) -> Any:
        return self.data.get(key, default)

    def put(self, key: Any, value: Any) -> Any:
        """Remember `value` under `key`; returns `value`."""
        data = self.data
        if len(data) >= self.limit:
            data.clear()
        data[key] = value
        return value

    def clear(self) -> None:
        self.data.clear()

    def call(self, fn: Callable, *args: Any) -> Any:
        """`fn(*args)` once per distinct arguments (for a pure `fn`; an exception is raised
        again at each call). Keyed by `fn` too, so several functions can share a table."""
        key = (fn, *args)
        hit = self.data.get(key, _MISSING)
        if hit is _MISSING:
            hit = self.put(key, fn(*args))
        return hit

    def __contains__(self, key: Any) -> bool:
        return key in self.data

    def __len__(self) -> int:
        return len(self.data)


_MISSING = object()


class IdentityTable:
    """A memo keyed by an object's identity, for objects that are not hashable by value (a
    scanned `Value` is a mutable dataclass; a module's column entries are compared by
    identity on purpose). Each entry holds its object, so an identity is never reused while
    its entry lives; `ids()` serves set algebra against a module's `item_ids()`."""

    __slots__ = ("data", "limit")

    def __init__(self, limit: int = MAX_ENTRIES) -> None:
        self.data: dict[int, tuple[Any, Any]] = {}
        self.limit = limit

    def get(self, obj: Any, default: Any = None) -> Any:
        hit = self.data.get(id(obj))
        return hit[1] if hit is not None and hit[0] is obj else default

    def put(self, obj: Any, value: Any) -> Any:
        data = self.data
        if len(data) >= self.limit:
            data.clear()
        data[id(obj)] = (obj, value)
        return value

    def pop(self, obj: Any) -> None:
        hit = self.data.get(id(obj))
        if hit is not None and hit[0] is obj:
            del self.data[id(obj)]

    def clear(self) -> None:
        self.data.clear()

    def ids(self):
        """The identities held (a set-like view)."""
        return self.data.keys()

    def __len__(self) -> int:
        return len(self.data)


class ContentTable:
    """A memo keyed by a module's content (pass dumps print most modules again and again),
    bounded by the rows its answers cover: past `MAX_ROWS` it starts over, and a module with
    more than `MAX_MODULE_ROWS` rows is not memoised (its per-row work dominates anyway)."""

    __slots__ = ("data", "rows", "max_rows", "max_module_rows")

    def __init__(self, max_rows: int = MAX_ROWS, max_module_rows: int = MAX_MODULE_ROWS) -> None:
        self.data: dict[Any, Any] = {}
        self.rows = 0
        self.max_rows = max_rows
        self.max_module_rows = max_module_rows

    def get(self, key: Any) -> Any:
        return self.data.get(key)

    def put(self, key: Any, rows: int, value: Any) -> Any:
        """Remember `value` for a module of `rows` rows unless it is too big; returns `value`."""
        if rows > self.max_module_rows:
            return value
        if self.rows + rows > self.max_rows:
            self.data.clear()
            self.rows = 0
        self.data[key] = value
        self.rows += rows + 1
        return value

    def clear(self) -> None:
        self.data.clear()
        self.rows = 0

    def __len__(self) -> int:
        return len(self.data)


class Last:
    """The value computed for the last key, and nothing older: for a question asked
    several times in a row (a file's device assignment, asked by its checks, its summary
    and its JSON). The key is compared, never hashed; inputs that repeat one read a little
    before are `Recent`'s."""

    __slots__ = ("key", "value")

    def __init__(self) -> None:
        self.key: Any = _MISSING
        self.value: Any = None

    def get(self, key: Any, default: Any = None) -> Any:
        return self.value if self.key is not _MISSING and key == self.key else default

    def put(self, key: Any, value: Any) -> Any:
        self.key, self.value = key, value
        return value

    def clear(self) -> None:
        self.key, self.value = _MISSING, None


class Recent:
    """The values computed for the last `n` inputs, holding at most `max_bytes` of them: for
    inputs that often repeat one seen a little before. XLA's every-pass dumps write an
    unchanged module again under the next pass's name, mostly right after (`Last` would
    do), but also a few to a few hundred files later (a pass that changed nothing, a copied
    dump). An entry is found by a hash of every `STRIDE`th byte of the input and its
    length, then its whole key (holding the input) is compared. Found by size instead,
    near-identical passes of one size made each lookup compare long runs of equal bytes:
    slower than hashing. Python's hash of all the bytes (2 GB/s) took 0.15 s of a run over
    the cold bench's 231 MB, the sampled one 0.07 s with the same hits: a pass that changes
    a line mostly shifts every byte after it, and equal samples of different inputs only
    cost a comparison up to where they differ. Where more than `FEW` inputs share a bucket,
    their hashes of every byte (Python keeps a bytes object's hash once worked out) are
    compared before their keys: 4,000 files of one length that differed only in their last
    line each compared its bytes with those of the hundreds before it, 0.25 ms a 12 KB
    file. (A few are compared as they are: comparing bytes is faster than hashing them.)"""

    __slots__ = ("order", "buckets", "n", "max_bytes", "held", "asked")

    def __init__(self, n: int = 256, max_bytes: int = 32 << 20) -> None:
        self.order: deque[tuple[int, list]] = deque()  # (hash, entry), oldest first
        #: input hash -> entries [key, value, nbytes, input]
        self.buckets: dict[int, list[list]] = {}
        self.n = n
        self.max_bytes = max_bytes
        self.held = 0
        #: the input last asked for and its bucket: a miss is mostly put right after
        #: (sampling it again was half of a put)
        self.asked: tuple[bytes | None, int] = (None, 0)

    def _bucket_of(self, data: bytes) -> int:
        asked, bucket = self.asked
        if asked is not data:
            bucket = _bucket(data)
            self.asked = (data, bucket)
        return bucket

    def get(self, data: bytes, key: Any, default: Any = None) -> Any:
        """The value put under `key` for input `data` (which `key` holds)."""
        entries = self.buckets.get(self._bucket_of(data), ())
        whole = hash(data) if len(entries) > FEW else None
        for entry in entries:
            if (whole is None or hash(entry[3]) == whole) and entry[0] == key:
                return entry[1]
        return default

    def put(self, data: bytes, key: Any, value: Any) -> Any:
        """Remember `value` under `key` for input `data`; returns `value`."""
        nbytes = len(data)
        if nbytes > self.max_bytes:
            return value
        bucket = self._bucket_of(data)
        entry = [key, value, nbytes, data]
        self.buckets.setdefault(bucket, []).append(entry)
        self.order.append((bucket, entry))
        self.held += nbytes
        while len(self.order) > self.n or self.held > self.max_bytes:
            old_bucket, old = self.order.popleft()
            entries = self.buckets[old_bucket]
            del entries[0]  # a bucket's entries are in order too: the oldest is first
            if not entries:
                del self.buckets[old_bucket]
            self.held -= old[2]
        return value

    def clear(self) -> None:
        self.order.clear()
        self.buckets.clear()
        self.held = 0
        self.asked = (None, 0)


#: every how many bytes `Recent` samples its inputs
STRIDE = 61
#: entries of a `Recent` bucket compared by their keys alone; more, by whole hashes first
FEW = 4


def _bucket(data: bytes) -> int:
    return hash((len(data), data[::STRIDE]))


class RunMemos:
    """Every memo of one run, by name (`"<module>.<what>"`), each made on first use."""

    __slots__ = ("_tables", "_held", "max_held")

    def __init__(self, max_held: int | None = None) -> None:
        self._tables: dict[str, Any] = {}
        self._held = 0  # bytes of parses counted since the memos last started over
        self.max_held = MAX_HELD_BYTES if max_held is None else max_held

    def hold(self, nbytes: int) -> None:
        """Count `nbytes` of parsed objects (shardings, meshes) that the run's memos may
        now hold; past `max_held` since they last started over, they all start over (and
        then hold these alone: the caller keeps what it is telling of, told first)."""
        held = self._held + nbytes
        if held > self.max_held:
            self.start_over()
            held = nbytes
        self._held = held

    def start_over(self) -> None:
        """Empty every memo of the run (each keeps its place: a caller holding one goes on
        with it, emptied)."""
        for t in self._tables.values():
            t.clear()
        self._held = 0

    def table(self, name: str, limit: int = MAX_ENTRIES) -> Table:
        t = self._tables.get(name)
        if t is None:
            t = self._tables[name] = Table(limit)
        return t  # type: ignore[return-value]

    def identity(self, name: str, limit: int = MAX_ENTRIES) -> IdentityTable:
        t = self._tables.get(name)
        if t is None:
            t = self._tables[name] = IdentityTable(limit)
        return t  # type: ignore[return-value]

    def slot(self, name: str, make: Callable[[], T]) -> T:
        """The memo called `name`, made by `make()` on first use: for memos bounded by
        something other than their entries (layouts, by the devices they hold). It must
        have a `clear()` (`start_over`)."""
        t = self._tables.get(name)
        if t is None:
            t = self._tables[name] = make()  # type: ignore[assignment]
        return t  # type: ignore[return-value]

    def last(self, name: str) -> Last:
        """The `Last` called `name`."""
        return self.slot(name, Last)

    def recent(self, name: str) -> Recent:
        """The `Recent` called `name`."""
        return self.slot(name, Recent)

    def content(self, name: str) -> ContentTable:
        t = self._tables.get(name)
        if t is None:
            t = self._tables[name] = ContentTable()
        return t  # type: ignore[return-value]
