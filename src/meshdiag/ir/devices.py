"""Which device runs each logical partition of an XLA dump (its device assignment).

GSPMD device numbers and Shardy `device_ids` inside a dump are logical partition ids. The
physical device of each partition is the executable's device assignment; JAX writes it, with
the rest of the compile options, to `module_NNNN.<name>/compile_options.textproto` in the
dump directory (`device_assignment { computation_devices { replica_device_ids: D } ... }`,
one entry per partition). JAX keeps the dump's mesh iota (logical) and puts a permuted
`Mesh(devices[perm])` order there, so a mesh stated with its physical device ids must go
through the assignment before it is compared with the dump.

Files of one dump find their module's textproto by name:

* `DIR/module_0003.jit_f.0007.spmd-cleanup....txt` → `DIR/module_0003.jit_f/`
* `DIR/shardy/module_0003.jit_f/02.after_propagation.mlir` → `DIR/module_0003.jit_f/`
* `DIR/module_0003.jit_f/module.mlir` → its own directory
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from meshdiag.memo import RunMemos

if TYPE_CHECKING:
    from meshdiag.model.mesh import Mesh
    from meshdiag.model.sharding import HloSharding

TEXTPROTO = "compile_options.textproto"
_MODULE = re.compile(r"module_\d+\.")
_BLOCK = re.compile(r"\bdevice_assignment\s*\{")
#: (without a leading `\b`, which made the engine try the names at every character: 2.4x
#: slower over a textproto's block; `_fields` checks the character before instead)
_FIELD = re.compile(r"(replica_count|computation_count|replica_device_ids)\s*:\s*(-?\d+)")


@dataclass(frozen=True)
class DeviceAssignment:
    """Physical device of each logical partition (replica 0), read from `source`."""

    devices: tuple[int, ...]
    source: str

    def logical_mesh(self, mesh: Mesh) -> Mesh | None:
        """`mesh` with its device ids (physical devices) turned into logical partition ids,
        or None when its ids are not exactly the assigned devices."""
        from meshdiag.model.mesh import Mesh

        if mesh.device_ids is None or sorted(mesh.ids) != sorted(self.devices):
            return None
        logical = {d: p for p, d in enumerate(self.devices)}
        return Mesh(mesh.axes, tuple(logical[d] for d in mesh.ids), mesh.name)

    def mapping_text(self, limit: int = 8) -> str:
        """`0→2, 1→3, ...` (logical → physical)."""
        pairs = [f"{p}→{d}" for p, d in enumerate(self.devices[:limit])]
        more = f", ... ({len(self.devices)} partitions)" if len(self.devices) > limit else ""
        return ", ".join(pairs) + more

    @property
    def is_identity(self) -> bool:
        return self.devices == tuple(range(len(self.devices)))

    @property
    def where(self) -> str:
        """`module_0002.jit_f/compile_options.textproto`."""
        return os.path.join(os.path.basename(os.path.dirname(self.source)), TEXTPROTO)

    def to_json(self) -> dict:
        return {"devices": list(self.devices), "source": self.source}


def ids_label(da: DeviceAssignment | None) -> str:
    """Which id space a dump's layouts show, for every rendering of them."""
    text = "device ids: logical partition ids"
    if da is None:
        return text
    if da.is_identity:
        return f"{text} (= physical devices, {da.where})"
    return f"{text}; {da.where} runs them on physical devices {da.mapping_text()}"


def parse_compile_options(text: str, source: str = "") -> DeviceAssignment | None:
    """The device assignment in a compile_options.textproto, or None when it has none (or
    it is not one device per partition)."""
    devices = _assigned_devices(text)
    return None if devices is None else DeviceAssignment(devices, source)


def _assigned_devices(text: str) -> tuple[int, ...] | None:
    """`parse_compile_options`' devices."""
    m = None
    at = text.find("device_assignment")  # in C: the pattern alone scans char by char
    while m is None and at >= 0:
        m = _BLOCK.match(text, at)  # `\b` still sees the character before `at`
        at = text.find("device_assignment", at + 1)
    if m is None:
        return None
    start = m.end()
    replicas, count, ids = 1, None, []
    for key, value in _fields(text, start, _block_end(text, start)):
        if key == "replica_device_ids":
            ids.append(value)
        elif key == "replica_count":
            replicas = value
        else:
            count = value
    if replicas < 1 or not ids or len(ids) % replicas:
        return None
    devices = tuple(ids[::replicas])  # each partition lists its device per replica
    if (count is not None and len(devices) != count) or len(set(devices)) != len(devices):
        return None
    return devices


def _block_end(text: str, start: int) -> int:
    """Where the block whose `{` is just before `start` ends (after its `}`; the text's
    end when it is not closed). A close brace at a time, with the opens before it counted:
    a regex match per brace cost twice as much over a dump's textprotos."""
    depth = 1
    while True:
        close = text.find("}", start)
        if close < 0:
            return len(text)
        depth += text.count("{", start, close) - 1
        start = close + 1
        if not depth:
            return start


def _fields(text: str, start: int = 0, end: int = sys.maxsize) -> list[tuple[str, int]]:
    """The (name, value) of each `_FIELD` in `text[start:end]` whose name starts a word."""
    out = []
    for f in _FIELD.finditer(text, start, end):
        at = f.start()
        if at and (text[at - 1].isalnum() or text[at - 1] == "_"):
            continue  # (`\b` is not there: part of a longer name)
        out.append((f.group(1), int(f.group(2))))
    return out


def _read(path: str, memos: RunMemos) -> DeviceAssignment | None:
    """The textproto at `path`, parsed once per run (a dump's files share one per module;
    a file is read as it is when the run first asks)."""
    table = memos.table("devices.parsed", 1024)
    read = table.get(path, _UNKNOWN)
    if read is _UNKNOWN:
        read = table.put(path, _read_textproto(path, memos))
    return read


#: a textproto up to this size is parsed once per run by its bytes (below)
SHARED_TEXTPROTO_BYTES = 1 << 16


def _read_textproto(path: str, memos: RunMemos) -> DeviceAssignment | None:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if len(data) > SHARED_TEXTPROTO_BYTES:
        return parse_compile_options(data.decode("utf-8", "replace"), path)
    # the programs of one job mostly compile with the same options: the cold bench's
    # 780 module directories hold 14 distinct textprotos, and reading and parsing each
    # took 70 ms of a one-core run, 29 ms with each text parsed once (decoded here: a
    # text stream cost 4x the read)
    devices = memos.table("devices.by_bytes", 256).call(_devices_of_bytes, data)
    return None if devices is None else DeviceAssignment(devices, path)


def _devices_of_bytes(data: bytes) -> tuple[int, ...] | None:
    return _assigned_devices(data.decode("utf-8", "replace"))


def _module_dirs(root: str) -> list[str]:
    """The module directories of a dump root that hold a textproto, longest name first
    (the longest matching name wins)."""
    try:
        with os.scandir(root) as entries:  # directories known without a stat each
            names = [e.name for e in entries if e.is_dir() and _MODULE.match(e.name)]
    except OSError:
        return []
    found = (n for n in names if os.path.isfile(os.path.join(root, n, TEXTPROTO)))
    return sorted(found, key=len, reverse=True)


def assignment_for(path: str, memos: RunMemos | None = None) -> DeviceAssignment | None:
    """The device assignment of the dump module `path` belongs to, when its dump directory
    has one (see the module docstring for the layouts searched). Pass the run's `memos`:
    a directory of thousands of files is listed and each textproto parsed once per run."""
    memos = RunMemos() if memos is None else memos
    return memos.slot("devices.assignment_for", _Lookup).of(path, memos)


def ids_label_for(path: str, memos: RunMemos | None = None) -> str:
    """`ids_label` of the assignment of `path`'s dump (`assignment_for`), made once for a
    run of files sharing one assignment (every file's report says it)."""
    memos = RunMemos() if memos is None else memos
    return memos.slot("devices.assignment_for", _Lookup).label(path, memos)


_UNKNOWN = object()


class _Lookup:
    """`assignment_for` of one run: the last file's answer (its checks, its summary and its
    JSON all ask), and the last directory and module number looked in. A dump's files come
    a directory at a time, and mostly a module at a time: splitting each path and finding
    its directory and module in the run's tables cost 7 us a file, 0.3 s of a one-core
    `inspect` of the cold bench's 39,519 files."""

    __slots__ = ("path", "value", "dir", "entry", "prefix", "module_dir", "labelled", "text")

    def __init__(self) -> None:
        self.path: str | None = None
        self.value: DeviceAssignment | None = None
        self.dir = ""  # the last directory with its separator ("" before any)
        self.entry: _Directory | None = None  # what that directory's files share
        #: the last module directory a file of a dump root found (`_Directory.textprotos`'
        #: entry) and its name prefix, when that name is its number's longest: no other
        #: directory can win a file it prefixes
        self.prefix = ""
        self.module_dir: list | None = None
        self.labelled: object = _UNKNOWN  # the assignment `text` is the label of
        self.text = ""

    def of(self, path: str, memos: RunMemos) -> DeviceAssignment | None:
        if path == self.path:
            return self.value
        value = self._find(path, memos)
        self.path, self.value = path, value
        return value

    def label(self, path: str, memos: RunMemos) -> str:
        da = self.of(path, memos)
        if da is not self.labelled:
            self.labelled, self.text = da, ids_label(da)
        return self.text

    def clear(self) -> None:
        self.__init__()  # type: ignore[misc]

    def _find(self, path: str, memos: RunMemos) -> DeviceAssignment | None:
        d = self.entry
        n = len(self.dir)
        if d is not None and len(path) > n and path.startswith(self.dir) and "/" not in path[n:]:
            name = path[n:]  # a file of the last directory (`os.path.split`'s answer)
        else:
            here, name = os.path.split(path)
            dirs = memos.table("devices.dirs", 4096)  # what a directory's files share
            d = dirs.get(here)
            if d is None:
                d = dirs.put(here, _directory(os.path.abspath(here), memos))
            # (a later path of this directory spelled otherwise, as `a//b`, goes this way)
            self.dir = "" if not here else here if here.endswith("/") else here + "/"
            self.entry = d
            self.prefix, self.module_dir = "", None
        if d.textprotos is None:  # a module directory: one assignment for all its files
            return d.assignment
        if self.prefix and name.startswith(self.prefix):
            module_dir = self.module_dir
        else:
            module_dir = self._module_dir(d.textprotos, name)
            if module_dir is None:
                return None
        read = module_dir[2]  # type: ignore[index]
        if read is _UNKNOWN:  # read when its first file asks, kept for the others
            read = module_dir[2] = _read(module_dir[1], memos)  # type: ignore[index]
        return read

    def _module_dir(self, textprotos: dict[str, list[list]], name: str) -> list | None:
        m = _MODULE.match(name)
        if m is None:
            return None
        for k, module_dir in enumerate(textprotos.get(name[: m.end()], ())):
            if name.startswith(module_dir[0]):
                if k == 0:  # the number's longest name: it wins for every file it prefixes
                    self.prefix, self.module_dir = module_dir[0], module_dir
                return module_dir
        return None


class _Directory(NamedTuple):
    """What the files of one directory share: a module directory's assignment, or, in a
    dump root, its module directories by their `module_NNNN.` as [file name prefix,
    textproto, its assignment once read] (longest name first; None in a module
    directory). By number, not one list for all: a root of a thousand modules would try
    each name on every file."""

    assignment: DeviceAssignment | None
    textprotos: dict[str, list[list]] | None


def _directory(here: str, memos: RunMemos) -> _Directory:
    if _MODULE.match(os.path.basename(here)):
        return _Directory(_inside_module_dir(here, memos), None)
    by_number: dict[str, list[list]] = {}
    for d in _module_dirs(here):  # longest first, kept in each number's list
        number = _MODULE.match(d)
        assert number is not None  # `_module_dirs` keeps only such names
        by_number.setdefault(d[: number.end()], []).append(
            [d + ".", os.path.join(here, d, TEXTPROTO), _UNKNOWN]
        )
    return _Directory(None, by_number)


def _inside_module_dir(here: str, memos: RunMemos) -> DeviceAssignment | None:
    """The device assignment of the files of a module directory `here`."""
    own = os.path.join(here, TEXTPROTO)
    if os.path.isfile(own):
        return _read(own, memos)
    parent = os.path.dirname(here)
    if os.path.basename(parent) == "shardy":  # DIR/shardy/<module>/NN.pass.mlir
        module_dir = os.path.join(os.path.dirname(parent), os.path.basename(here))
        return _read(os.path.join(module_dir, TEXTPROTO), memos)
    return None


def load_assignment(text: str) -> DeviceAssignment:
    """`--device-assignment`: a list of physical devices by logical partition
    (`2,3,6,7,0,1,4,5`, `[2, 3, ...]`), a compile_options.textproto, or a file of a dump
    directory that has one. Raises MeshdiagError (one line) when it gives none."""
    from meshdiag.errors import MeshdiagError

    t = text.strip()
    if re.fullmatch(r"\[?\s*\d+(\s*,\s*\d+)*\s*,?\s*\]?", t):
        devices = tuple(int(x) for x in re.findall(r"\d+", t))
        if len(set(devices)) != len(devices):
            raise MeshdiagError(f"--device-assignment {text!r} lists a device more than once")
        return DeviceAssignment(devices, "--device-assignment")
    if os.path.isdir(t) and os.path.isfile(os.path.join(t, TEXTPROTO)):
        t = os.path.join(t, TEXTPROTO)
    if os.path.basename(t) == TEXTPROTO:
        if not os.path.isfile(t):
            raise MeshdiagError(f"--device-assignment: cannot read {t}")
        da = _read(t, RunMemos())
        if da is None:
            raise MeshdiagError(f"--device-assignment: {t} has no device_assignment")
        return da
    if os.path.isfile(t):
        da = assignment_for(t)
        if da is None:
            raise MeshdiagError(
                f"--device-assignment: no {TEXTPROTO} found for {t} (expected in its dump "
                "directory, in module_NNNN.<name>/)"
            )
        return da
    raise MeshdiagError(
        f"--device-assignment {text!r} is neither a device list like 2,3,0,1 nor a "
        f"{TEXTPROTO} or dump file"
    )


def relabel(s: HloSharding, da: DeviceAssignment, rank: int) -> HloSharding:
    """`s` (logical partition ids) with each id replaced by its physical device; a
    replicated sharding of a rank-`rank` tensor becomes a tiling that replicates over the
    assigned devices."""
    from dataclasses import replace

    from meshdiag.errors import MeshdiagError
    from meshdiag.model.sharding import HloSharding as Hlo
    from meshdiag.model.tiles import TileAssignment

    n = len(da.devices)
    if s.kind == "tuple":
        return replace(s, elements=tuple(relabel(e, da, rank) for e in s.elements))
    if s.kind == "maximal" and s.device is not None:
        if s.device >= n:
            raise MeshdiagError(f"device {s.device} is not among the {n} assigned partitions")
        return replace(s, device=da.devices[s.device])
    if s.kind == "replicated":
        tile = TileAssignment.from_devices([1] * rank + [n], da.devices)
        return Hlo.tiled(tile, replicate_on_last=True)
    if s.kind != "tiled" or s.tile is None:
        return s
    ids = s.tile.devices()
    if len(ids) != n:
        raise MeshdiagError(
            f"the sharding tiles over {len(ids)} devices but the device assignment has {n}"
        )
    tile = TileAssignment.from_devices(s.tile.dims, [da.devices[i] for i in ids])
    return replace(s, tile=tile, named=None)
