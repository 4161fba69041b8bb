"""Order the stages of a pass sequence: which files (or pass-dump sections) a program went
through, first to last.

Pure naming rules, no file is read here:

- an XLA dump directory (`--xla_dump_to`): per program `module_NNNN.<name>`, JAX's lowered
  `module_NNNN.<name>/module.mlir` first, then `*.before_optimizations.txt`, the numbered
  pass files `module_NNNN.<name>.NNNN.<pipeline>.after_<p>.before_<q>.txt` in number order,
  with the Shardy pipeline's `shardy/module_NNNN.<name>/NN.<stage>.mlir` placed where it runs
  (inside the `shardy-xla` pass: just before the first file written after it), and
  `*after_optimizations.txt` last. Buffer assignments, LLVM IR and other side files are not
  stages;
- tt-xla `irs/<stage>[_<model>]_<timestamp>.mlir` files: in tt-xla's stage order
  (`TT_XLA_STAGES`), then by timestamp;
- a Shardy directory of `NN.<stage>.mlir` files, or any other files: by the numbers in their
  names, then by name.

A file holding several modules (an MLIR `IR Dump Before/After` stream) gives one stage per
module; that split is the scanner's (`trace.py` does it).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

#: tt-xla's `ModuleBuilder` stage names, in the order it runs them
TT_XLA_STAGES = (
    "vhlo",
    "shlo",
    "shlo_frontend",
    "shlo_compiler",
    "shlo_compiler_cleaned",
    "shlo_set_mesh_attr",
    "ttir",
    "ttnn",
    "ttnn_runtime",
)

_PASS = re.compile(r"^module_(\d+)\.(.+?)\.(\d{4})\.(.+)\.txt$")
_BEFORE_OPT = re.compile(r"^module_(\d+)\.(.+?)\.before_optimizations\.txt$")
_AFTER_OPT = re.compile(r"^module_(\d+)\.(.+?)\.((?:[a-z]+_)?after_optimizations)\.txt$")
_SHARDY = re.compile(r"^(\d+)\.(.+)\.mlir$")
_PROGRAM_DIR = re.compile(r"^module_(\d+)\.(.+)$")
_TT_XLA = re.compile(
    r"^(" + "|".join(sorted(TT_XLA_STAGES, key=len, reverse=True)) + r")(.*)\.mlir$"
)
_NUMBERS = re.compile(r"(\d+)")


@dataclass(frozen=True)
class StageFile:
    path: str
    #: what the stage is called in reports (a pass name, a Shardy or tt-xla stage, a file)
    name: str
    #: the program the file belongs to (`module_0000.jit_f`), "" when names say nothing
    program: str
    #: sort key inside the program
    order: tuple


def _natural(name: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in _NUMBERS.split(name))


def classify(path: str, root: str) -> StageFile | None:
    """The stage a file of directory `root` is, or None for a side file (not a stage)."""
    rel = os.path.relpath(path, root)
    base = os.path.basename(path)
    parent = os.path.basename(os.path.dirname(path))
    if m := _PASS.match(base):
        prog = f"module_{m.group(1)}.{m.group(2)}"
        return StageFile(path, f"{m.group(3)}.{m.group(4)}", prog, (2, int(m.group(3))))
    if m := _BEFORE_OPT.match(base):
        prog = f"module_{m.group(1)}.{m.group(2)}"
        return StageFile(path, "before_optimizations", prog, (1, 0))
    if m := _AFTER_OPT.match(base):
        prog = f"module_{m.group(1)}.{m.group(2)}"
        return StageFile(path, m.group(3), prog, (4, 0))
    if base.startswith("module_") and base.endswith(".txt"):
        return None  # buffer assignment, live ranges, memory report, ...
    pm = _PROGRAM_DIR.match(parent)
    if pm and base == "module.mlir":  # JAX's lowered module, next to compile_options
        return StageFile(path, "module.mlir (lowered)", parent, (0, 0))
    if pm and os.path.basename(os.path.dirname(os.path.dirname(path))) == "shardy":
        if m := _SHARDY.match(base):
            # placed by `order_stages` once the pass files are known
            return StageFile(
                path, f"shardy/{m.group(1)}.{m.group(2)}", parent, (3, int(m.group(1)))
            )
    if not base.endswith((".mlir", ".txt", ".hlo", ".stablehlo", ".ttir", ".ttnn")):
        return None
    if m := _TT_XLA.match(base):
        return StageFile(path, rel, "", (TT_XLA_STAGES.index(m.group(1)), _natural(m.group(2))))
    return StageFile(path, rel, "", (len(TT_XLA_STAGES), _natural(rel)))


def order_stages(files: list[StageFile]) -> dict[str, list[StageFile]]:
    """Program → its stage files in pass order."""
    programs: dict[str, list[StageFile]] = {}
    for f in files:
        programs.setdefault(f.program, []).append(f)
    out = {}
    for prog, fs in programs.items():
        fs.sort(key=lambda f: f.order)
        shardy = [f for f in fs if f.order[0] == 3]
        if shardy:
            rest = [f for f in fs if f.order[0] != 3]
            at = next(
                (
                    i
                    for i, f in enumerate(rest)
                    if f.order[0] == 2 and ".after_shardy-xla." in f.name
                ),
                None,
            )
            if at is None:  # no pass file after the Shardy pipeline: before the XLA passes
                at = next((i for i, f in enumerate(rest) if f.order[0] >= 2), len(rest))
            fs = rest[:at] + shardy + rest[at:]
        out[prog] = fs
    return out
