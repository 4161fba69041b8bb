"""Make a >= 500 MB real XLA dump directory for the inspect benchmark.

    .venv/bin/python bench/make_big_dump.py [--out bench/out/dump] [--mb 500]

Compiles deep sharded MLPs on a 2x4 mesh of fake CPU devices with
`--xla_dump_to=DIR --xla_dump_hlo_pass_re=.*` (every pass dumped, plus the `shardy/` MLIR
files), then copies the module files under new module numbers until the directory holds at
least `--mb` megabytes. The copies are real dump files; only their names differ.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: one compile per depth: different modules, different sizes
DEPTHS = (8, 16, 32)

CHILD = r"""
import sys
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
depth = int(sys.argv[1])
mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("batch", "model"))
S = lambda *s: NamedSharding(mesh, P(*s))
def mlp(x, *ws):
    for i in range(0, len(ws), 2):
        h = jnp.tanh(x @ ws[i])
        x = jax.lax.with_sharding_constraint(h @ ws[i + 1], S("batch", None))
    return x
args = [jax.ShapeDtypeStruct((64, 128), jnp.float32, sharding=S("batch", None))]
for _ in range(depth):
    args.append(jax.ShapeDtypeStruct((128, 256), jnp.float32, sharding=S(None, "model")))
    args.append(jax.ShapeDtypeStruct((256, 128), jnp.float32, sharding=S("model", None)))
jax.jit(mlp).lower(*args).compile()
"""


def dir_size(d: Path) -> int:
    return sum(p.stat().st_size for p in d.rglob("*") if p.is_file())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(HERE / "out" / "dump"))
    ap.add_argument("--mb", type=int, default=500)
    a = ap.parse_args()
    out = Path(a.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for k, depth in enumerate(DEPTHS):
        env = dict(os.environ)
        env["XLA_FLAGS"] = (
            f"--xla_force_host_platform_device_count=8 --xla_dump_to={out / f'real{k}'} "
            "--xla_dump_hlo_pass_re=.*"
        )
        env["JAX_PLATFORMS"] = "cpu"
        subprocess.run([sys.executable, "-c", CHILD, str(depth)], env=env, check=True)
    real = sorted(p for p in out.iterdir() if p.is_dir())
    base = dir_size(out)
    print(f"real dumps: {base / 1e6:.1f} MB in {len(real)} directories", file=sys.stderr)
    target = a.mb * 1_000_000
    sizes = [dir_size(r) for r in real]
    n = 0
    total = base
    while total < target:  # copies of the real dumps under new names
        shutil.copytree(real[n % len(real)], out / f"copy{n:04d}")
        total += sizes[n % len(real)]
        n += 1
    files = sum(1 for p in out.rglob("*") if p.is_file())
    print(f"{out}: {dir_size(out) / 1e6:.1f} MB, {files} files ({n} copies)", file=sys.stderr)


if __name__ == "__main__":
    main()
