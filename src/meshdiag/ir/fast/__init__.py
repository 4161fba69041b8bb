"""The scanner's native speed-ups, behind one interface.

`_fastscan.c` compiles (optionally: setup.py) to `meshdiag.ir.fast._fastscan`. Its
functions, each tested against its Python twin:

- the candidate walker `scan_known` (twin `ir.lines.scan_known_py`);
- the bracket helpers `match_end`, `split_top`, `top_colon` (twins in `ir.text`);
- the collective scan's line and word finders `word_lines`, `find_any` (twins
  `comms.scan.word_lines_py`, `find_any_py`), the newline count `count_lines` (twin
  `ir.parts.count_lines_py`);
- the plain-line field readers `constraint_fields`, `entry_fields`, `op_fields`,
  `hlo_fields` (`_fields.c`; twins `ir.fields.*_fields_py`);
- the class `Value` (`_value.c`; twin the dataclass `ir.model.PyValue`);
- the values of plain lines copied from their sharding's prototype `scan_plain`,
  `entry_values` (`_values.c`; twins `ir.lines.scan_plain_py`, `ir.fields.entry_values_py`),
  and a signature split and its entries made in one call `entry_group` (twin
  `ir.fields.entry_group_py`);
- a module's values as JSON `values_json` (`_json.c`; twin
  `pipeline.inspect.values_json_text_py`);
- the checks' keys of a module's values `new_keys` (`_keys.c`; twin
  `checks.keys.new_keys_py`);
- a module's values grouped by their sharding text `text_groups` (`_groups.c`; twin
  `pipeline.module_summary.text_groups_py`) and by their device layout `module_rows`
  (`_rows.c`; twin `pipeline.dump_summary.module_rows_py`);
- a picture's grids of whole tiles `grid_text` (`_grid.c`; twin
  `report.whole.grid_text_py`), and a summary's whole picture with its header,
  `whole_grid_text` and, where no grid fits, `whole_table_text` (`_grid.c`; twin the rest
  of `report.whole.whole_text`);
- a small regular file read whole `read_small` (`_files.c`; twin
  `ir.scan.read_small_file_py`).

Besides, `parent_death_signal` asks the kernel to end a worker with its parent (what
`pipeline.inspect._die_with_parent` otherwise asks through ctypes). `words.py` is the one
list of candidate words both walkers use (setup.py hands it to the compiler).
`native(name)` is how the rest of the scanner asks for one: None when the extension is not
built or `MESHDIAG_PURE_PYTHON` is set, and the caller uses the twin.
"""

from __future__ import annotations

import os
from collections.abc import Callable


def native(name: str) -> Callable | None:
    """The native function `name`, or None (not built, or switched off)."""
    if os.environ.get("MESHDIAG_PURE_PYTHON"):
        return None
    try:
        from meshdiag.ir.fast import _fastscan
    except ImportError:  # not built (no C compiler at install time): same results, slower
        return None
    # None too for a function an older build of the extension lacks (a stale in-place build)
    return getattr(_fastscan, name, None)


def why_not_native() -> str:
    """Why the twins run (for `meshdiag --version`): "" when the native code does."""
    if os.environ.get("MESHDIAG_PURE_PYTHON"):
        return "MESHDIAG_PURE_PYTHON is set"
    if native("scan_known") is None:
        return "the native extension is not built"
    return ""
