"""Targets: what mesh shapes a backend or a machine accepts (`--target NAME[@VERSION]`).

Three kinds, data in `data/targets.toml`:

- `tt-mlir` (a compiler): `AnalyzeMeshPass` first normalises the module's single mesh to 2-D
  (`normalizeMeshTo2D`: 0-D → 1x1, `["x"=N]` → 1xN, more than two axes rejected), then
  `checkValidMesh` looks the `[dim0, dim1]` pair up in the ordered `SupportedMeshes` list —
  an exact match, so 2x4 passes and 4x2 fails. The list grew over time; `tt-mlir@2025-07`
  pins the list in force at the end of that month, `tt-mlir@2025-07-23` at that day,
  `tt-mlir@#4046` the list a PR introduced; no version means HEAD.
- a Tenstorrent system (`n300`, `t3k`, `galaxy`, ...): accepts any mesh whose device count is
  its chip count; its canonical shape comes first in `shapes`.
- `generic`: no limit.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from meshdiag.errors import MeshdiagError
from meshdiag.model.mesh import Mesh

Shape = tuple[int, ...]
TTMLIR = "tt-mlir"


@dataclass(frozen=True)
class Target:
    name: str  # "tt-mlir", "t3k", "generic"
    kind: Literal["compiler", "system", "generic"]
    #: compiler: the ordered list of accepted 2-D shapes (exact match after normalisation)
    supported: tuple[Shape, ...] | None = None
    #: compiler: date the list took effect and where it comes from
    version: str | None = None
    ref: str | None = None
    #: system: number of chips and mesh shapes in use (canonical first)
    chips: int | None = None
    shapes: tuple[Shape, ...] = ()
    about: str = ""

    @property
    def label(self) -> str:
        """`tt-mlir@2026-03-12` / `t3k` / `generic`."""
        return f"{self.name}@{self.version}" if self.version else self.name

    @property
    def canonical_shape(self) -> Shape | None:
        return self.shapes[0] if self.shapes else None

    # -- the check ------------------------------------------------------------------------
    def normalize(self, shape: Shape) -> Shape | None:
        """The shape the backend actually checks; None when it rejects the rank outright."""
        shape = tuple(int(s) for s in shape)
        if self.kind != "compiler":
            return shape
        if len(shape) == 0:
            return (1, 1)
        if len(shape) == 1:
            return (1, shape[0])
        if len(shape) == 2:
            return shape
        return None

    def rejection(self, shape: Shape) -> str | None:
        """Why the target rejects a mesh of this shape (one clause), or None if it accepts it."""
        shape = tuple(int(s) for s in shape)
        if self.kind == "generic":
            return None
        if self.kind == "system":
            n = math.prod(shape)
            if n == self.chips:
                return None
            return f"{self.name} has {self.chips} chips but the mesh has {n} devices"
        norm = self.normalize(shape)
        if norm is None:
            return (
                f"{self.label} expects a 0-D, 1-D or 2-D mesh, got {len(shape)}-D "
                f"({shape_text(shape)})"
            )
        assert self.supported is not None
        if norm in self.supported:
            return None
        shown = shape_text(norm)
        if norm != shape:
            shown += f" (normalised from {shape_text(shape)})"
        return f"{shown} is not in {self.label}'s supported meshes ({self.supported_text()})"

    def accepts(self, shape: Shape) -> bool:
        return self.rejection(shape) is None

    def suggest(self, shape: Shape) -> list[Shape]:
        """Accepted shapes to use instead: the transpose first, then same-device-count reshapes.

        Empty when the shape is accepted or nothing fits. For a system whose chip count differs
        from the mesh's device count, its own shapes (canonical first).
        """
        shape = tuple(int(s) for s in shape)
        if self.accepts(shape) or self.kind == "generic":
            return []
        if self.kind == "system":
            return list(self.shapes)
        n = math.prod(shape)
        out: list[Shape] = []

        def add(s: Shape) -> None:
            if s not in out and s != shape and self.accepts(s):
                out.append(s)

        norm = self.normalize(shape)
        if norm is not None:
            add(tuple(reversed(norm)))
        else:  # too many axes: dropping the size-1 ones may be enough
            squeezed = tuple(s for s in shape if s != 1)
            if len(squeezed) <= 2:
                add(self.normalize(squeezed) or squeezed)
                if len(squeezed) == 2:
                    add(tuple(reversed(squeezed)))
        for s in self.supported or ():
            if math.prod(s) == n:
                add(s)
        return out

    def supported_text(self) -> str:
        return ", ".join(shape_text(s) for s in self.supported or ())

    def describe(self) -> str:
        if self.kind == "compiler":
            return f"{self.label} ({self.ref}): supported meshes {self.supported_text()}"
        if self.kind == "system":
            shapes = ", ".join(shape_text(s) for s in self.shapes)
            return f"{self.name}: {self.about}, {self.chips} chips, mesh {shapes}"
        return "generic: any mesh"


def shape_text(shape: Shape) -> str:
    return "x".join(map(str, shape)) if shape else "0-D"


def _shape(text: str) -> Shape:
    return tuple(int(p) for p in text.split("x"))


def _data() -> dict:
    import tomllib
    from importlib import resources

    raw = resources.files("meshdiag").joinpath("data/targets.toml").read_bytes()
    return tomllib.loads(raw.decode())


def _ttmlir_versions() -> list[dict]:
    return _data()["tt-mlir"]["versions"]


def _systems() -> dict[str, tuple[str, dict]]:
    """Every system name and alias → (canonical name, entry)."""
    out: dict[str, tuple[str, dict]] = {}
    for name, entry in _data()["systems"].items():
        out[name] = (name, entry)
        for alias in entry.get("aliases", ()):
            out[alias] = (name, entry)
    return out


def preset_names() -> list[str]:
    """Every system name and alias: each is also a mesh (`--mesh t3k`)."""
    return sorted(_systems())


def preset_mesh(name: str) -> Mesh | None:
    """The system called `name` as a mesh: its canonical shape, axes `rows` and `cols`
    (None when no system has that name)."""
    hit = _systems().get(name.lower())
    if hit is None:
        return None
    rows, cols = _shape(hit[1]["shapes"][0])
    return Mesh((("rows", rows), ("cols", cols)), name=name.lower())


def target_names() -> list[str]:
    """Every accepted target name (aliases included), for help texts and errors."""
    return [TTMLIR, "generic", *sorted(_systems())]


_DATE = re.compile(r"^(\d{4})-(\d{2})(?:-(\d{2}))?$")


def _ttmlir(version: str | None) -> Target:
    versions = _ttmlir_versions()
    if version is None or version.lower() in ("head", "latest"):
        entry = versions[-1]
    elif m := re.fullmatch(r"(?:#|pr)(\d+)", version.lower()):
        entry = next((v for v in versions if f"#{m.group(1)} " in v["ref"] + " "), None)
        if entry is None:
            prs = ", ".join(re.search(r"#\d+", v["ref"]).group(0) for v in versions)  # type: ignore[union-attr]
            raise MeshdiagError(
                f"unknown tt-mlir version {version!r}; the supported-mesh list changed in PRs {prs}"
            )
    elif m := _DATE.match(version):
        # a month means its last day: `2025-07` is the list in force at the end of July
        day = version if m.group(3) else f"{version}-31"
        known = [v for v in versions if v["since"] <= day]
        if not known:
            raise MeshdiagError(
                f"no tt-mlir supported-mesh list is known before {versions[0]['since']} "
                f"(asked for {version})"
            )
        entry = known[-1]
    else:
        raise MeshdiagError(
            f"bad tt-mlir version {version!r}; expected a date (2025-07, 2025-07-23), "
            "a PR (#4046) or 'head'"
        )
    return Target(
        name=TTMLIR,
        kind="compiler",
        supported=tuple(_shape(s) for s in entry["meshes"]),
        version=entry["since"],
        ref=entry["ref"],
    )


def get_target(name: str) -> Target:
    """The target called `name` (`tt-mlir`, `tt-mlir@2025-07`, `t3k`, `galaxy`, `generic`)."""
    text = name.strip()
    base, _, version = text.partition("@")
    base = base.lower()
    if base in ("tt-mlir", "ttmlir", "tt_mlir"):
        return _ttmlir(version or None)
    if version:
        raise MeshdiagError(f"target {base!r} takes no version (got {text!r})")
    if base in ("generic", "none"):
        return Target(name="generic", kind="generic")
    systems = _systems()
    if base in systems:
        canonical, entry = systems[base]
        return Target(
            name=canonical,
            kind="system",
            chips=int(entry["chips"]),
            shapes=tuple(_shape(s) for s in entry["shapes"]),
            about=entry.get("about", ""),
        )
    raise MeshdiagError(f"unknown target {text!r}; expected one of {', '.join(target_names())}")
