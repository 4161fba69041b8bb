"""Per-device layouts and what follows from them.

engine.py         sharding + shape -> the slice of the tensor each device holds (numpy)
diff.py           two shardings compared by per-device slices
reshard_plan.py   two shardings -> collective steps on mesh axes (Shardy-style)
reshard_cost.py   those steps -> groups, buffers and bytes per device
reshard.py        the `reshard` entry point
"""
