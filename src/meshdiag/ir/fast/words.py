"""The words that make a line a scanner candidate: the one list both candidate walkers use.

`lines.scan_known_py` (Python) reads it directly; the native walker (`_fastscan.c`) gets it
at build time: setup.py loads this file on its own (it imports nothing) and passes
`c_initializer()` to the compiler as the macro `MESHDIAG_NEEDLES`. The native module
exposes what it was built with as `_fastscan.WORDS` (tests/test_fastscan.py compares).

Every word is 4 to 11 bytes long (the native walker samples the bytes with a stride of
the shortest length - 3, at most 8) and holds no newline, quote or backslash.
"""

#: frequent: found through their common part `shard` (`sharding`, `reshard`)
FREQUENT = ("sharding", "reshard")
#: rare words that mark structure: module and pass-dump headers, meshes, diagnostics, the
#: closing line of a manual computation's body
RARE = (
    "sdy.mesh",
    "IR Dump",
    "HloModule",
    "module",
    "ENTRY",
    "error:",
    "warning:",
    "// -----",
    "} : (",
)
WORDS = FREQUENT + RARE


def c_initializer() -> str:
    """The words as the body of a C array initializer: `"sharding", "reshard", ...`."""
    for w in WORDS:
        if not 4 <= len(w) <= 11 or not w.isascii() or any(c in w for c in '"\\\n'):
            raise ValueError(f"candidate word {w!r} cannot be passed to the native walker")
    return ", ".join(f'"{w}"' for w in WORDS)
