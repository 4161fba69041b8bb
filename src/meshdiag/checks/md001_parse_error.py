"""MD001 parse-error: an annotation, mesh or config that cannot be parsed."""

from meshdiag.checks.rule import Rule
from meshdiag.model.findings import PARSE_ERROR

RULE = Rule(
    code=PARSE_ERROR[0],
    name=PARSE_ERROR[1],
    severity="error",
    summary="an annotation, mesh, file or config cannot be read or parsed",
    what="meshdiag found a sharding, mesh or config it could not parse, or a file it could "
    "not read. The finding gives the location and what the parser expected there. `lint` "
    "keeps this rule on under any `--select` (only an `--ignore` naming it turns it off), "
    "and `diff` exits 2 when it meets one: what was not read was not checked or compared.",
    why="A sharding the tool cannot read is a sharding nobody checked. Compilers that "
    "crash mid-dump leave truncated annotations; hand-written IR may use a syntax the real "
    "parser rejects too.",
    fix="Correct the text at the reported column, or regenerate the dump. When the text "
    "is valid for XLA or Shardy, report it as a meshdiag bug.",
    example="mhlo.sharding = \"{devices=[2,2<=[4]}\"  →  expected ']' at column 14",
)
