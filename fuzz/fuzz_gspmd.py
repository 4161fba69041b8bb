"""atheris harness: GSPMD HloSharding text (V1/V2/V3 leaves, tuples) and notation detection.

Run with `python fuzz/run.py gspmd` (or `make fuzz`); any exception other than a
MeshdiagError (or a failed round trip) is a crash. See fuzz/targets.py for the checks.
"""

import os
import sys

import atheris

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import targets  # noqa: E402

with atheris.instrument_imports(include=["meshdiag"]):
    targets.preload()  # the meshdiag modules the checks use, imported under instrumentation


def TestOneInput(data: bytes) -> None:  # noqa: N802 - atheris' name
    with targets.keep_on_crash(data):
        targets.check_gspmd(targets.decode(data))


def main() -> None:
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
