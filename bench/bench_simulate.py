"""Benchmark: simulate-copy of a 1 GiB float32 tensor over an 8x4 mesh, against the physical
limit measured in the same run (one `numpy.copyto` of an array of the same size).

    .venv/bin/python bench/bench_simulate.py [--gib 1.0] [--repeat 3]

Reports the best-of-N wall time of each, their ratio (goal: simulate within 3x of one copy),
and the simulation's peak traced memory as a multiple of the tensor size (goal: within 3x).
The simulation writes the source (arange), copies it into 32 device buffers and copies those
into the read-back tensor, which reuses the dead source's memory: two tensor-sized arrays.
"""

from __future__ import annotations

import argparse
import gc
import math
import time
import tracemalloc

import numpy as np

from meshdiag.model.mesh import mesh_from_shape
from meshdiag.simulate.copy import simulate_copy


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    elements = int(args.gib * (1 << 30)) // 4
    side = int(math.isqrt(elements))
    shape = (side, elements // side)
    nbytes = math.prod(shape) * 4
    mesh = mesh_from_shape((8, 4))
    mapper = "shard2d:0,1"
    print(f"tensor {shape} float32 = {nbytes / (1 << 30):.3f} GiB, mesh 8x4, mapper {mapper}")

    arrays = {"src": np.arange(math.prod(shape), dtype=np.float32).reshape(shape)}
    arrays["touched"] = np.zeros_like(arrays["src"])

    def copy_fresh():
        dst = np.empty_like(arrays["src"])
        np.copyto(dst, arrays["src"])

    def copy_touched():
        np.copyto(arrays["touched"], arrays["src"])

    def sim():
        s = simulate_copy(mesh, shape, mapper)
        assert not s.symbolic and s.readback.matches_source

    t_fresh = best(copy_fresh, args.repeat)
    t_touched = best(copy_touched, args.repeat)
    del arrays["touched"]
    t_sim = best(sim, args.repeat)
    print(f"numpy.copyto into a fresh array:        {t_fresh * 1e3:8.1f} ms")
    print(f"numpy.copyto into a touched array:      {t_touched * 1e3:8.1f} ms")
    print(f"simulate-copy (map+alloc+copy+readback): {t_sim * 1e3:8.1f} ms")
    print(f"ratio vs copyto (fresh):   {t_sim / t_fresh:5.2f}x   (goal <= 3x)")
    print(f"ratio vs copyto (touched): {t_sim / t_touched:5.2f}x")

    arrays.clear()
    gc.collect()
    tracemalloc.start()
    s = simulate_copy(mesh, shape, mapper)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del s
    print(
        f"peak traced memory: {peak / (1 << 30):.3f} GiB = {peak / nbytes:.2f}x the tensor (goal <= 3x)"
    )

    t0 = time.perf_counter()
    s = simulate_copy(mesh, (100_000_000_000, 100_000_000_000), mapper)
    print(
        f"symbolic 1e11 x 1e11 over 8x4: {(time.perf_counter() - t0) * 1e3:.1f} ms "
        f"(symbolic={s.symbolic}, read-back {s.readback.shape})"
    )


if __name__ == "__main__":
    main()
