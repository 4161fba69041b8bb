"""Write tests/golden/torch_chunk.json: how torch.chunk splits random tensors, as TTNN's mappers do.

Run with real torch (never a test dependency), from a throwaway venv:

    python -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install torch==2.13.0 numpy
    /tmp/torchvenv/bin/python tests/golden/make_torch_golden.py

Each case is a mesh shape, a tensor shape and a mapper; the pieces are produced exactly as the
2024 TTNN Python mappers did (`ShardTensorToMesh.map`: torch.chunk over all devices;
`ShardTensor2dMesh.map`: torch.chunk per mesh row, then per mesh column, `None` clones) from an
`arange` tensor, and recorded as index ranges (each piece's first element locates it). The file
carries a sha256 of its cases; tests refuse a hand-edited file.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from pathlib import Path

import torch

OUT = Path(__file__).with_name("torch_chunk.json")


def region(piece: torch.Tensor, shape: tuple[int, ...]) -> list[list[int]]:
    first = int(piece.reshape(-1)[0].item())
    start = []
    for s in reversed(shape):
        start.append(first % s)
        first //= s
    start.reverse()
    return [[a, a + n] for a, n in zip(start, piece.shape, strict=True)]


def shard_1d(t: torch.Tensor, n: int, dim: int) -> list[torch.Tensor]:
    return list(torch.chunk(t, n, dim=dim))


def shard_2d(t: torch.Tensor, rows: int, cols: int, dims) -> list[torch.Tensor]:
    row_dim, col_dim = dims
    row_tensors = (
        [t.clone() for _ in range(rows)] if row_dim is None else torch.chunk(t, rows, dim=row_dim)
    )
    if col_dim is None:
        return [r.clone() for r in row_tensors for _ in range(cols)]
    return [c for r in row_tensors for c in torch.chunk(r, cols, dim=col_dim)]


def main() -> None:
    rng = random.Random(20250308)
    cases = []
    meshes = [(1, 8), (2, 4), (8, 4), (4, 2), (1, 2), (3, 5), (2, 2), (1, 1), (4, 8)]
    for i in range(240):
        mesh = rng.choice(meshes)
        rank = rng.randint(1, 4)
        shape = tuple(rng.randint(1, 40) for _ in range(rank))
        t = torch.arange(math.prod(shape), dtype=torch.float64).reshape(shape)
        if i % 2 == 0:
            dim = rng.randrange(rank)
            mapper = f"shard:{dim}"
            pieces = shard_1d(t, mesh[0] * mesh[1], dim)
        else:
            opts = [None, *range(rank)]
            r = rng.choice(opts)
            c = rng.choice([o for o in opts if o is None or o != r])
            mapper = "shard2d:" + ",".join("none" if x is None else str(x) for x in (r, c))
            pieces = shard_2d(t, mesh[0], mesh[1], (r, c))
        cases.append(
            {
                "mesh": list(mesh),
                "shape": list(shape),
                "mapper": mapper,
                "pieces": [region(p, shape) for p in pieces],
            }
        )
    body = json.dumps(cases, sort_keys=True)
    doc = {
        "generator": "tests/golden/make_torch_golden.py",
        "torch_version": torch.__version__,
        "sha256": hashlib.sha256(body.encode()).hexdigest(),
        "cases": cases,
    }
    OUT.write_text(json.dumps(doc, indent=None, sort_keys=True) + "\n")
    print(f"wrote {len(cases)} cases to {OUT} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
