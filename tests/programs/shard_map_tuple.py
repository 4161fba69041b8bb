"""A JAX program whose every-pass XLA dump the real-dump tests read.

Run with the device count and dump flags in XLA_FLAGS, e.g.

    XLA_FLAGS="--xla_force_host_platform_device_count=8 --xla_dump_to=DIR \
        --xla_dump_hlo_pass_re=.*" python tests/programs/shard_map_tuple.py

On a data=2 x model=N/2 mesh: a shard_map (XLA round-trips it through
`@xla.sdy.GlobalToLocalShape` / `@xla.sdy.LocalToGlobalShape` custom calls whose
`xla.sdy.in_shardings` / `out_shardings` strings carry `\\22` escapes, and then through
`@SPMDFullToShardShape` with `{manual}` values), a sharding constraint, and a tuple of
three results with different shardings.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P


def main() -> None:
    n = len(jax.devices())
    mesh = Mesh(np.array(jax.devices()).reshape(2, n // 2), ("data", "model"))

    def body(x, w):
        return jnp.tanh(x @ w)

    def f(x, w, b):
        y = jax.shard_map(
            body,
            mesh=mesh,
            in_specs=(P("data", None), P(None, "model")),
            out_specs=P("data", "model"),
        )(x, w)
        y = jax.lax.with_sharding_constraint(y + b, NamedSharding(mesh, P("data", None)))
        return y, y.sum(axis=0), x * 2

    args = [
        jax.ShapeDtypeStruct((16, 64), jnp.float32, sharding=NamedSharding(mesh, P("data"))),
        jax.ShapeDtypeStruct(
            (64, 8 * n), jnp.float32, sharding=NamedSharding(mesh, P(None, "model"))
        ),
        jax.ShapeDtypeStruct((8 * n,), jnp.float32, sharding=NamedSharding(mesh, P("model"))),
    ]
    jax.jit(f).lower(*args).compile()


if __name__ == "__main__":
    main()
