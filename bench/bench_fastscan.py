"""Speed check of the native candidate scanner against its Python reference (not a test).

    .venv/bin/python bench/bench_fastscan.py [--dump bench/out/dump] [--mb 100] [--repeat 3]

Reads the first `--mb` megabytes of the dump's files (sorted paths) into memory as blocks
cut like `lines.read_blocks` does, then drives each scanner over every block the way
`ir.scan` does (call, take the returned line, continue after it), twice: with an empty
`known` dict (every candidate line is returned to the caller) and with a `known` dict
pre-filled with every candidate line (the warm case: the scanner replays them all itself).
Prints MB/s (best of `--repeat`) for each.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from meshdiag.ir import lines  # noqa: E402


def load_blocks(root: Path, mb: int) -> list[tuple[bytes, int]]:
    """(block, number of its first line) for the first `mb` megabytes under `root`."""
    want = mb * 1_000_000
    blocks: list[tuple[bytes, int]] = []
    total = 0
    files = sorted(p for p in root.rglob("*") if p.is_file())
    for path in files:
        with path.open("rb") as f:
            for block, lineno in lines.read_blocks(f, lambda *a: None):
                blocks.append((block, lineno))
                total += len(block)
        if total >= want:
            break
    return blocks


def drive(scan, blocks, knowns) -> int:
    """Scan every block to its end; the number of lines handed back to the caller."""
    returned = 0
    lines_out: list = []
    items_out: list = []
    for (block, lineno), known in zip(blocks, knowns, strict=True):
        pos = 0
        while True:
            start, _end, lineno, pos = scan(block, pos, lineno, known, lines_out, items_out)
            if start < 0:
                break
            returned += 1
            lineno += 1
    lines_out.clear()
    items_out.clear()
    return returned


def warm_known(block: bytes) -> dict[bytes, int]:
    """Every candidate line of `block` as a key (the form the scanner looks up)."""
    known = {}
    for ls, le in lines.candidate_spans(block):
        end = le - 1 if le > ls and block[le - 1] == 13 else le
        known[block[ls:end]] = 1
    return known


def best(scan, blocks, knowns, repeat: int) -> tuple[float, int]:
    times = []
    returned = 0
    for _ in range(repeat):
        t = time.perf_counter()
        returned = drive(scan, blocks, knowns)
        times.append(time.perf_counter() - t)
    return min(times), returned


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dump", default=str(HERE / "out" / "dump"))
    ap.add_argument("--mb", type=int, default=100, help="megabytes of the dump to scan")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    if os.environ.get("MESHDIAG_PURE_PYTHON"):
        sys.exit("unset MESHDIAG_PURE_PYTHON: this compares the native scanner with Python")
    try:
        from meshdiag.ir.fast._fastscan import scan_known as native
    except ImportError:
        sys.exit("meshdiag.ir.fast._fastscan is not built (run .venv/bin/pip install -e .)")
    root = Path(a.dump)
    if not root.is_dir():
        sys.exit(f"no dump at {root} (make one with bench/make_big_dump.py)")
    blocks = load_blocks(root, a.mb)
    size = sum(len(b) for b, _ in blocks) / 1e6
    print(f"{size:.1f} MB in {len(blocks)} blocks from {root}")
    empty = [{} for _ in blocks]
    warm = [warm_known(b) for b, _ in blocks]
    for label, knowns in (("empty known", empty), ("warm known", warm)):
        results = {}
        for name, scan in (("python", lines.scan_known_py), ("native", native)):
            dt, returned = best(scan, blocks, knowns, a.repeat)
            results[name] = (dt, returned)
            print(f"{label:12} {name:7} {size / dt:9.1f} MB/s  ({dt:.3f} s, {returned} returned)")
        if results["python"][1] != results["native"][1]:
            sys.exit("the scanners disagree on the number of returned lines")
        print(f"{label:12} speed-up {results['python'][0] / results['native'][0]:.1f}x")


if __name__ == "__main__":
    main()
