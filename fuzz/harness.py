"""atheris harness for one meshdiag target: `python fuzz/harness.py TARGET [libFuzzer flags]`.

Targets (checks in fuzz/targets.py): `gspmd` (GSPMD text: V1/V2/V3 leaves, tuples, notation
detection), `shardy` (Shardy meshes and shardings), `mesh` (every --mesh notation and
PartitionSpecs), `scan` (the streaming IR scanner over a whole dump, then the checks and the
inspect JSON), `files` (config and mesh files: validation and located errors), `comms` (the
collective scan, its checks, JSON and text). Any exception other than a MeshdiagError, or a
failed round trip, is a crash.
Usually run through `python fuzz/run.py` or `make fuzz`.
"""

import os
import sys

import atheris

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import targets  # noqa: E402

CHECKS = {
    "gspmd": lambda data: targets.check_gspmd(targets.decode(data)),
    "shardy": lambda data: targets.check_shardy(targets.decode(data)),
    "mesh": lambda data: targets.check_mesh(targets.decode(data)),
    "scan": targets.check_scan,  # raw bytes: encodings are part of what it fuzzes
    "files": lambda data: targets.check_files(targets.decode(data)),
    "comms": targets.check_comms,  # raw bytes: the collective scan, checks, JSON and text
}


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in CHECKS:
        sys.exit(f"usage: harness.py {{{','.join(CHECKS)}}} [libFuzzer flags]")
    check = CHECKS[sys.argv.pop(1)]
    with atheris.instrument_imports(include=["meshdiag"]):
        targets.preload()  # the meshdiag modules the checks use, imported under instrumentation

    def test_one_input(data: bytes) -> None:
        with targets.keep_on_crash(data):
            check(data)

    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
