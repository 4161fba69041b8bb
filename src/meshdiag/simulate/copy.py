"""`simulate_copy`: map → allocate → copy → read back, each step a call to its module (the
steps are described in `meshdiag.simulate`'s docstring)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from meshdiag.checks.md106_uniform_spec import uniform_spec_findings
from meshdiag.limits import check_simulated_devices
from meshdiag.model.splits import check_rule
from meshdiag.notation.ttnn import Dest, TtnnMapper, parse_composer, parse_mapper
from meshdiag.simulate.allocate import allocate, load_dest
from meshdiag.simulate.compose import compose as compose_readback
from meshdiag.simulate.data import choose_symbolic, materialise
from meshdiag.simulate.options import ERAS, STALES, WRITES, check_choice, check_shape
from meshdiag.simulate.readback import judge_readback, read_positions
from meshdiag.simulate.result import CopySimulation, device_results
from meshdiag.simulate.transfer import copy_specs
from meshdiag.simulate.ttnn_placement import ttnn_placement

if TYPE_CHECKING:
    from meshdiag.model.copy import DeviceCopy, Readback, Shape
    from meshdiag.model.findings import Finding
    from meshdiag.model.mesh import Mesh
    from meshdiag.simulate.placement import Placement


def simulate_copy(
    mesh: Mesh,
    shape,
    mapper: str = "replicate",
    *,
    split: str | None = None,
    dest: str | Dest = "fresh",
    write: str = "by-reference",
    compose: str | None = None,
    stale: str = "sentinel",
    era: str = "current",
    symbolic: bool | None = None,
) -> CopySimulation:
    """Simulate mapper → allocate → copy → read back of `arange(prod(shape))` on `mesh`.

    `split` defaults to `chunk` for TTNN mappers and `xla` for compiler notations. `symbolic`:
    None decides by size (`limits.MAX_MATERIALISED_ELEMENTS`), True never materialises, False
    always does (refused when too large).
    """
    check_simulated_devices(mesh.size)
    shape = check_shape(shape)
    write = check_choice(write, WRITES, "write mode")
    stale = check_choice(stale, STALES, "stale fill")
    era = check_choice(era, ERAS, "TTNN era")
    ttnn = parse_mapper(mapper)
    split = check_rule(split if split is not None else ("chunk" if ttnn else "xla"))
    dest_spec = load_dest(dest)

    # everything is decided on index ranges first (that is the symbolic mode) ...
    placement = map_source(mesh, shape, mapper, ttnn, split, era)
    comp = parse_composer(compose) if compose is not None else placement.default_composer
    regions = placement.regions
    allocated = allocate(mesh, shape, dest_spec, regions)
    final = copy_specs(mesh, shape, regions, allocated, write)
    out_shape, placed = compose_readback(mesh, shape, comp, final, placement.layout)
    readback = judge_readback(mesh.ids, shape, regions, final, out_shape, placed, comp.text)

    # ... then data mode moves the elements
    is_symbolic = choose_symbolic(shape, allocated, out_shape, symbolic)
    data = (
        None
        if is_symbolic
        else materialise(shape, regions, allocated, final, placed, out_shape, stale, mesh)
    )

    devices = device_results(
        mesh,
        shape,
        regions,
        placement.empty_shapes,
        allocated,
        final,
        read_positions(placed),
        readback,
        None if data is None else data[0],
    )
    sim = CopySimulation(
        mesh=mesh,
        shape=shape,
        mapper=mapper.strip(),
        split=split,
        dest=dest_spec.text,
        write=write,
        era=era,
        stale_fill=stale,
        symbolic=is_symbolic,
        devices=devices,
        readback=readback,
        findings=copy_findings(placement, devices, readback, shape, write),
    )
    if data is not None:
        sim.buffers, sim.readback_data = data
    return sim


def map_source(
    mesh: Mesh, shape: Shape, mapper: str, ttnn: TtnnMapper | None, split: str, era: str
) -> Placement:
    """Step 1: place `mapper` (parsed as `ttnn` when it is TTNN notation) on `mesh`."""
    if ttnn is not None:
        return ttnn_placement(mesh, shape, ttnn, split, era)
    # imported on this path only: the layout engine and the notation parsers add 20-45 ms to
    # the start-up of every simulate-copy run, which TTNN mappers do not need
    from meshdiag.simulate.compiler_placement import compiler_placement

    return compiler_placement(mesh, shape, mapper, split)


def copy_findings(
    placement: Placement,
    devices: tuple[DeviceCopy, ...],
    readback: Readback,
    shape: Shape,
    write: str,
) -> tuple[Finding, ...]:
    """MD105 (from the placement) and MD106 (from the devices and the read-back), errors
    (MD106) before warnings (MD105)."""
    findings: list[Finding] = list(placement.findings)
    findings += uniform_spec_findings(devices, readback, shape, write=write, where={})
    findings.sort(key=lambda f: f.code, reverse=True)
    return tuple(findings)
