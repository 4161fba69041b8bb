"""The native scanner only; every other piece of metadata lives in pyproject.toml.

`optional=True`: where the extension cannot be compiled (no C compiler) the install still
succeeds and `meshdiag.ir.lines` falls back to its Python reference scanner.

The native walker's candidate words come from `src/meshdiag/ir/fast/words.py`, the one list
(loaded on its own: it imports nothing), as the macro `MESHDIAG_NEEDLES`.
"""

import runpy
from pathlib import Path

from setuptools import Extension, setup

WORDS = runpy.run_path(str(Path(__file__).resolve().parent / "src/meshdiag/ir/fast/words.py"))

setup(
    ext_modules=[
        Extension(
            "meshdiag.ir.fast._fastscan",
            [
                "src/meshdiag/ir/fast/_fastscan.c",
                "src/meshdiag/ir/fast/_fields.c",
                "src/meshdiag/ir/fast/_values.c",
                "src/meshdiag/ir/fast/_json.c",
                "src/meshdiag/ir/fast/_keys.c",
                "src/meshdiag/ir/fast/_groups.c",
                "src/meshdiag/ir/fast/_rows.c",
                "src/meshdiag/ir/fast/_ptrmap.c",
                "src/meshdiag/ir/fast/_value.c",
                "src/meshdiag/ir/fast/_grid.c",
                "src/meshdiag/ir/fast/_files.c",
            ],
            depends=["src/meshdiag/ir/fast/_fastscan.h"],
            define_macros=[("MESHDIAG_NEEDLES", WORDS["c_initializer"]())],
            optional=True,
        ),
    ],
)
