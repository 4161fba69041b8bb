"""Benchmark: meshdiag.layout vs JAX's devices_indices_map, and `meshdiag --help` startup.

    .venv/bin/python bench/bench_layout.py [--jax-devices N] [--repeat R]

Case: a rank-4 tensor (256, 256, 512, 7) on a 16x16x32 mesh (8192 devices), sharded
P('x', 'y', 'z', None). JAX needs one fake CPU device per mesh device; creating 8192 of them
takes too long on a small machine, so JAX runs the same case on a smaller mesh (default
16x16x4 = 1024 devices, set with --jax-devices) and the per-device times are compared as well
as the raw times. The two are checked to agree on the JAX-sized case first.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import time


def _best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _mesh_shape(n: int) -> tuple[int, int, int]:
    z = n // 256
    if z < 1 or 16 * 16 * z != n:
        raise SystemExit(f"--jax-devices must be a multiple of 256, got {n}")
    return (16, 16, z)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jax-devices", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={args.jax_devices}"
    os.environ.setdefault("JAX_PLATFORMS", "cpu")

    from meshdiag.layouts.engine import _layout_cached, layout
    from meshdiag.model.sharding import HloSharding
    from meshdiag.model.tiles import TileAssignment

    def md_sharding(mesh_shape):
        return HloSharding.tiled(TileAssignment.iota((*mesh_shape, 1)))

    shape = (256, 256, 512, 7)
    big = (16, 16, 32)

    def md_big():
        _layout_cached.cache_clear()  # measure the computation, not the memo
        return layout(md_sharding(big), shape)

    t_md_big = _best(md_big, args.repeat)
    t_md_json = _best(lambda: md_big().to_json(), args.repeat)

    t0 = time.perf_counter()
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    small = _mesh_shape(args.jax_devices)
    devices = np.array(jax.devices()[: math.prod(small)]).reshape(small)
    t_jax_init = time.perf_counter() - t0
    ns = NamedSharding(Mesh(devices, ("x", "y", "z")), P("x", "y", "z", None))

    # correctness on the JAX-sized case before timing anything
    lay = layout(md_sharding(small), shape)
    want = ns.devices_indices_map(shape)
    for d, dev in enumerate(ns._device_assignment):
        got = lay.device(d).slices
        assert got == tuple(s.indices(n)[:2] for s, n in zip(want[dev], shape, strict=True))

    # both sides memoise per (sharding, shape): every timed call gets a new trailing dim size
    fresh = iter(range(8, 10_000))

    def jax_map():
        return ns.devices_indices_map((*shape[:3], next(fresh)))

    def md_small():
        return layout(md_sharding(small), (*shape[:3], next(fresh)))

    t_jax = _best(jax_map, args.repeat)
    t_md_small = _best(md_small, args.repeat)

    n_small, n_big = math.prod(small), math.prod(big)
    print(f"layout, rank-4 {shape}, P('x','y','z',None)")
    print(f"  meshdiag  {n_big:5d} devices (16x16x32): {t_md_big * 1e3:8.2f} ms"
          f"   (+ to_json: {t_md_json * 1e3:.1f} ms)")  # fmt: skip
    print(f"  meshdiag  {n_small:5d} devices {small}: {t_md_small * 1e3:8.2f} ms")
    print(f"  jax       {n_small:5d} devices {small}: {t_jax * 1e3:8.2f} ms"
          f"   (jax import + {n_small} CPU devices: {t_jax_init:.1f} s)")  # fmt: skip
    print(f"  ratio jax/meshdiag, same {n_small}-device case: {t_jax / t_md_small:8.1f}x")
    per_dev = (t_jax / n_small) / (t_md_big / n_big)
    print(f"  ratio per device, jax {n_small} vs meshdiag {n_big}: {per_dev:8.1f}x")

    # CLI startup: `meshdiag --help` in a fresh interpreter
    runs = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "meshdiag", "--help"], check=True, capture_output=True
        )
        runs.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    for _ in range(args.repeat):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    bare = (time.perf_counter() - t0) / args.repeat
    print(f"meshdiag --help: best {min(runs):.3f} s, median {statistics.median(runs):.3f} s "
          f"(bare python: {bare:.3f} s; goal < 0.3 s)")  # fmt: skip


if __name__ == "__main__":
    main()
