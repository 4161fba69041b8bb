"""The work behind `meshdiag convert`: notation → model → other notation."""

from __future__ import annotations

import json
from dataclasses import replace

from meshdiag.errors import MeshdiagError
from meshdiag.model.derive import derive_mesh, hlo_to_named, import_sharding, meshes_fitting
from meshdiag.model.mesh import Mesh
from meshdiag.model.sharding import HloSharding, NamedSharding
from meshdiag.notation.detect import parse_sharding, to_hlo
from meshdiag.notation.gspmd import print_gspmd
from meshdiag.notation.gspmd_v3 import print_v3
from meshdiag.notation.pspec import named_to_pspec
from meshdiag.notation.shardy import print_mesh_attr, print_sdy_sharding


def _named_on_mesh(s: HloSharding | NamedSharding, mesh: Mesh | None) -> tuple[NamedSharding, str]:
    """A named form of `s`: on `mesh` if given, else on the mesh XLA's import would derive."""

    if isinstance(s, NamedSharding):
        return s, "as given"
    if mesh is not None:
        named = hlo_to_named(s, mesh)
        if named is None:
            raise MeshdiagError(f"the sharding is not expressible on mesh {mesh.short()}")
        # refer to the mesh by name, as a module would (`sdy.mesh @mesh = ...` is printed too)
        return replace(named, mesh=mesh, mesh_ref=named.mesh_ref or "mesh"), (
            f"on mesh {mesh.short()}"
        )
    derived = derive_mesh([s])
    if derived is None:  # replicated / maximal: no axes needed
        return import_sharding(s, Mesh(())), "on an empty mesh"
    return import_sharding(s, derived.mesh), f"on the derived mesh {derived.mesh.short()}"


def convert(text: str, to: str, mesh: Mesh | None = None) -> tuple[str, str]:
    """`text` in notation `to`; returns (converted text, a note on the mesh used)."""

    s = parse_sharding(text, mesh=mesh)
    if to in ("gspmd", "gspmd-v1"):
        return print_gspmd(to_hlo(s, mesh), form="v1" if to == "gspmd-v1" else "v2"), ""
    named, note = _named_on_mesh(s, mesh)
    if to == "gspmd-v3":
        return print_v3(named), note
    if to == "sdy":
        out = print_sdy_sharding(named)
        if named.mesh is not None:
            out = f"sdy.mesh @{named.mesh_ref or 'mesh'} = {print_mesh_attr(named.mesh)}\n{out}"
        return out, note
    if to == "pspec":
        out = named_to_pspec(named)
        if out is None:
            raise MeshdiagError(
                f"no PartitionSpec expresses this sharding {note} (it needs sub-axes or "
                "replicated/unreduced axes a PartitionSpec cannot hold); try --to sdy"
            )
        return out, note
    raise MeshdiagError(f"unknown target notation {to!r}")


def derive_report(text: str, mesh: Mesh | None = None) -> dict:
    """The mesh XLA's import derives from this one sharding, and every mesh it fits."""

    hlo = to_hlo(parse_sharding(text, mesh=mesh), mesh)
    derived = derive_mesh([hlo])
    report: dict = {"gspmd": print_gspmd(hlo)}
    if derived is None:
        report["derived_mesh"] = None
        report["derived_sharding"] = None
    else:
        report["derived_mesh"] = print_mesh_attr(derived.mesh)
        report["derived_sharding"] = print_sdy_sharding(import_sharding(hlo, derived.mesh))
    report["fits"] = [m.short() for m in meshes_fitting(hlo)] if hlo.is_tiled else []
    return report


def run_convert(text: str, *, to: str | None, mesh: Mesh | None, derive: bool, fmt: str) -> None:
    doc: dict = {"version": 1, "input": text}
    if to is not None:
        out, note = convert(text, to, mesh)
        doc.update({"to": to, "output": out, "note": note or None})
    if derive:
        doc["derive"] = derive_report(text, mesh)
    if fmt == "json":
        print(json.dumps(doc, indent=2))
        return
    if to is not None:
        print(doc["output"])
        if doc["note"]:
            print(f"# {doc['note']}")
    if derive:
        d = doc["derive"]
        if d["derived_mesh"] is None:
            print("# XLA's import needs no mesh axes for this sharding (not tiled)")
        else:
            print(f"# mesh XLA's Shardy import derives from {d['gspmd']}:")
            print(f"sdy.mesh @mesh = {d['derived_mesh']}")
            print(f"# the sharding on it: {d['derived_sharding']}")
        if d["fits"]:
            print("# plain PartitionSpecs express it on these meshes: " + "; ".join(d["fits"]))
        else:
            print("# no mesh with iota device order expresses it as a plain PartitionSpec")
