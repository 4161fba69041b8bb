"""The IR scanner: MLIR (StableHLO/Shardy), HLO text, pass dumps and dump directories ->
`model.FileReport` (modules, meshes, sharded values, MD001 for what cannot be read),
streamed block by block. `scan.py` is the entry point; `devices.py` reads a dump's
`compile_options.textproto`."""
