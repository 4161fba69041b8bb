"""Simulate a host→device copy on a mesh: map → allocate → copy → read back.

`copy.simulate_copy` runs the four steps, each a call to the module that owns it; the steps
follow TTNN (reference notes ttnn_uneven.md §1–§2, §6):

1. **Map** (`ttnn_placement.py`, `compiler_placement.py`; result type in `placement.py`).
   The source `arange(prod(shape)).reshape(shape)` (float32, so every element is
   recognisable) is split by the mapper. TTNN mappers split each sharded dim with the split
   rule (`chunk` = torch.chunk by default) over a *distribution shape* (`distribution.py`):
   `(N,)` for replicate/shard:D, the mesh shape or an override for 2-D/N-D mappers; cell i of
   it goes to a device: SUBMESH keeps coordinates when the distribution fits inside the mesh,
   ROW_MAJOR sends the i-th populated cell to the i-th device in row-major order
   (`get_remap_fn`). `chunk` can give fewer chunks than devices: trailing devices get nothing.
   `--ttnn-era` adds the validation of that era (`eras.py`: `Shard shape mismatch`, `ND
   sharding requires ...`). Compiler notations (GSPMD/Shardy/PartitionSpec) are placed with
   `meshdiag.layouts.engine.layout`. MD105 (uneven shards) is judged here.
2. **Allocate** the destination (`allocate.py`): `fresh` (each device's spec = the shard it
   will receive, no buffer where it receives none), `uniform:SHAPE` (TTNN's
   `allocate_tensor_on_mesh`: the same spec on every device) or per-device shapes from a file.
   Buffers start stale: NaN (`sentinel`) or a previous tensor (`previous`: -1, -2, ...
   running over devices in id order).
3. **Copy** (`transfer.py`). Each shard's elements go to the start of its device's buffer (a
   flat allocation; a shard larger than its buffer is refused, as TTNN refuses it).
   `by-reference` then replaces the destination's specs with the written devices' shard specs
   (current TTNN `copy_to_device`); `by-value` leaves them as allocated (PR #18833's bug).
4. **Read back** (`compose.py`, `readback.py`) every device the destination's specs list,
   each buffer reinterpreted as its spec, and compose (`concat:D`, `concat2d:R,C`, `first`,
   `tiles`; default: the mapper's inverse). Devices listed but never written return stale
   memory as data; MD106 (uniform spec on uneven shards) is judged from it.

Everything is decided on index ranges first (that is the symbolic mode: regions, stale
devices, read-back shape and findings for a tensor of any size; index math in `regions.py`);
data mode (`data.py`) then moves the elements with numpy slicing and `np.copyto` into
preallocated buffers. `result.py` holds the `CopySimulation` (and its JSON document), built
from `meshdiag.model.copy`'s `DeviceCopy`/`Readback`; `options.py` the choices and their
checks. `matches_source` is derived from the ranges; in data mode the arrays are kept so
callers can verify it element by element.
"""
