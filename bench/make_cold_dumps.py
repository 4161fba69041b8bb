"""Make a cold benchmark input: real every-pass XLA dumps of many distinct JAX programs.

    .venv/bin/python bench/make_cold_dumps.py [--out bench/out/cold] [--mb 300]
    .venv/bin/python bench/make_cold_dumps.py --single-mlir 60 [--out bench/out/cold.mlir]
    .venv/bin/python bench/make_cold_dumps.py --single-mlir 60 --debug-info --out x.mlir

Every directory under --out is the `--xla_dump_to DIR --xla_dump_hlo_pass_re=.*` dump of
one program, compiled once; no file is a copy (`make_big_dump.py` copies one dump, so its
figures are warm: every content memo hits after the first copy). The programs are
`fixtures/generate.py`'s `PASS_CASES` (attention on 2-D and 3-D meshes, shard_map, scan,
pytrees, uneven and sub-axis shardings, permuted device orders) with every dimension
scaled by k = 1, 2, 3, ...: a new k gives new shapes, a longer scan and a new module name,
so no two programs share their annotated lines. Rounds of k go on until the dumps hold
--mb megabytes.

--single-mlir MB writes one MLIR file of about MB megabytes with no repeated annotated
line: Shardy modules lowered by JAX from deep MLPs (a sharding constraint on every layer,
meshes 2x4, 4x2, 8x1), each layer of each module with its own width. With --debug-info the
modules are printed as JAX prints them with debug info: every op and argument followed by
its location (`loc(#loc27)`, `loc("x")`) and each module by its location definitions.
Generation takes minutes for the default sizes (one compile or lowering per program, on
CPU).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"
sys.path.insert(0, str(FIXTURES))

import generate  # noqa: E402  (fixtures/generate.py: PASS_CASES, build_pass_case)

#: in a subprocess whose XLA_FLAGS dump every pass: compile each PassCase given as JSON
COMPILE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import generate as g
for spec in json.loads(sys.argv[2]):
    spec["args"] = tuple((tuple(s), tuple(tuple(a) if isinstance(a, list) else a for a in p))
                         for s, p in spec["args"])
    for key in ("mesh_shape", "axis_names", "order"):
        if spec[key] is not None:
            spec[key] = tuple(spec[key])
    jitted, args, _ = g.build_pass_case(g.PassCase(**spec))
    jitted.lower(*args).compile()
"""

#: in a subprocess with 8 CPU devices: print Shardy modules of deep MLPs, one per spec
#: (module number, layers), separated by `// -----`
LOWER = r"""
import json, sys
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
MESHES = ((2, 4), (4, 2), (8, 1))
debug_info = sys.argv[2] == "1"
for j, layers in json.loads(sys.argv[1]):
    mesh = Mesh(np.array(jax.devices()[:8]).reshape(MESHES[j % 3]), ("data", "model"))
    S = lambda *s: NamedSharding(mesh, P(*s))
    specs = (S("data", None), S(None, "model"), S("data", "model"), S("model", None))
    width = [8 * (j * (layers + 1) + i + 1) for i in range(layers + 1)]

    def mlp(x, *ws):
        for i, w in enumerate(ws):
            x = jax.lax.with_sharding_constraint(jnp.tanh(x @ w), specs[i % 4])
        return x

    args = [jax.ShapeDtypeStruct((16, width[0]), jnp.float32, sharding=S("data", None))]
    for i in range(layers):
        sh = S(None, "model") if i % 2 else S("model", None)
        args.append(jax.ShapeDtypeStruct((width[i], width[i + 1]), jnp.float32, sharding=sh))
    mlp.__name__ = mlp.__qualname__ = f"mlp{j}"
    text = jax.jit(mlp).lower(*args).as_text(debug_info=debug_info)
    sys.stdout.write(text.rstrip("\n") + "\n// -----\n")
    sys.stdout.flush()
"""


def scaled(case: generate.PassCase, k: int) -> generate.PassCase:
    """`case` with every dimension times `k`, named after k (k = 1: the case itself, renamed)."""
    args = tuple((tuple(d * k for d in shape), spec) for shape, spec in case.args)
    return dataclasses.replace(case, name=f"{case.name}_k{k}", args=args)


def dir_size(d: Path) -> int:
    return sum(p.stat().st_size for p in d.rglob("*") if p.is_file())


def compile_round(out: Path, cases: list[generate.PassCase], jobs: int = 1) -> None:
    """Every-pass dumps of `cases` as out/<name>/, one subprocess per device count (`jobs`
    of them at a time, each dumping to a directory of its own; moved in order after)."""
    by_count: dict[int, list[generate.PassCase]] = {}
    for c in cases:
        by_count.setdefault(c.devices, []).append(c)

    def compile_group(count_group: tuple[int, list[generate.PassCase]]) -> Path:
        count, group = count_group
        raw = out / f".raw{count}"
        env = generate.every_pass_env(count, raw)
        specs = json.dumps([dataclasses.asdict(c) for c in group])
        subprocess.run([sys.executable, "-c", COMPILE, str(FIXTURES), specs], env=env, check=True)
        return raw

    groups = sorted(by_count.items())
    with ThreadPoolExecutor(jobs) as pool:
        raws = list(pool.map(compile_group, groups))
    for raw, (_, group) in zip(raws, groups, strict=True):
        generate.split_by_program(raw, out, [c.name for c in group])


def make_dumps(out: Path, mb: float, jobs: int = 1) -> None:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    bases = list(generate.PASS_CASES.values())
    total = 0
    k = 0
    while total < mb * 1e6:
        k += 1
        compile_round(out, [scaled(c, k) for c in bases], jobs)
        total = dir_size(out)
        print(f"  k={k}: {total / 1e6:.1f} MB", file=sys.stderr, flush=True)
    files = sum(1 for p in out.rglob("*") if p.is_file())
    programs = sum(1 for p in out.iterdir() if p.is_dir())
    print(f"{out}: {total / 1e6:.1f} MB, {files} files, {programs} programs", file=sys.stderr)


def make_single_mlir(
    path: Path,
    mb: float,
    layers: int = 400,
    per_process: int = 24,
    debug_info: bool = False,
    jobs: int = 1,
) -> None:
    """One MLIR file of >= `mb` MB: `per_process` modules of `layers` layers per
    subprocess, until the file is big enough (with `debug_info`, printed with locations).
    `jobs` subprocesses lower at a time; their modules are written in order, so the file
    is the same for any `jobs` (the batches still lowering when it is big enough are
    dropped)."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    path.parent.mkdir(parents=True, exist_ok=True)

    def lower(first: int) -> bytes:
        specs = json.dumps([[first + i, layers] for i in range(per_process)])
        r = subprocess.run(
            [sys.executable, "-c", LOWER, specs, "1" if debug_info else "0"],
            env=env,
            check=True,
            capture_output=True,
        )
        return r.stdout

    j = 0  # modules written
    asked = 0  # modules handed to a subprocess
    with open(path, "wb") as f, ThreadPoolExecutor(jobs) as pool:
        pending: deque = deque()
        while f.tell() < mb * 1e6:
            while len(pending) < jobs:
                pending.append(pool.submit(lower, asked))
                asked += per_process
            f.write(pending.popleft().result())
            j += per_process
            print(f"  {j} modules: {f.tell() / 1e6:.1f} MB", file=sys.stderr, flush=True)
        for extra in pending:
            extra.cancel()
    print(f"{path}: {path.stat().st_size / 1e6:.1f} MB, {j} modules", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="default: bench/out/cold (bench/out/cold.mlir)")
    ap.add_argument("--mb", type=float, default=300, help="size of the dumps (default 300)")
    ap.add_argument("--single-mlir", type=float, metavar="MB", help="one big MLIR file instead")
    ap.add_argument("--debug-info", action="store_true", help="print it with locations")
    ap.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="compiling or lowering subprocesses at a time (default: the cores); the output "
        "is the same for any number",
    )
    a = ap.parse_args()
    if a.jobs < 1:
        ap.error(f"--jobs must be at least 1, got {a.jobs}")
    if a.single_mlir is not None:
        path = Path(a.out or HERE / "out" / "cold.mlir")
        make_single_mlir(path, a.single_mlir, debug_info=a.debug_info, jobs=a.jobs)
    else:
        make_dumps(Path(a.out or HERE / "out" / "cold"), a.mb, a.jobs)


if __name__ == "__main__":
    main()
