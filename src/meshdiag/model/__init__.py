"""The model: what a mesh and a sharding are, independent of how they are written.

    mesh.py              Mesh: named axes, sizes, device order
    tiles.py             TileAssignment: XLA's iota/explicit device arrays (and their math)
    sharding.py          HloSharding (tiled form, checked when built), NamedSharding (axes)
    normalize.py         XLA's canonical form (subgroup merging, replication)
    verify.py            Shardy's verifiers: what makes a mesh or named sharding invalid
    derive.py            tiled -> mesh / named (XLA's Shardy import)
    named_to_tiled.py    named -> tiled (XLA's Shardy export)
    splits.py            how a dim splits into shards (xla, torch.chunk, array_split, even)
    targets.py           what backends accept; the Tenstorrent systems (data/targets.toml)
    findings.py          Finding and severities; collective_bytes.py  dtype sizes, ring factors
    copy.py              a simulated copy's devices, read-back pieces, split dims (simulate/)
    text.py              names in messages (MLIR escapes, axis refs)

Nothing here parses text or prints a report: `notation/` reads and writes these.
"""
