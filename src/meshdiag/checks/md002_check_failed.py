"""MD002 check-failed: a check could not judge a module."""

from meshdiag.checks.rule import Rule

RULE = Rule(
    code="MD002",
    name="check-failed",
    severity="warning",
    summary="a check could not judge a module (its verdict is unknown)",
    what="One of meshdiag's checks raised an error while judging this module, so the module "
    "was not judged by that rule. The message names the rule and the error.",
    why="A check that fails quietly looks exactly like a check that passed. Saying so keeps a "
    "clean lint run meaning what it says.",
    fix="Usually the module holds something the check does not understand yet: report it as "
    "a meshdiag bug with the dump. `--ignore MD002` silences it.",
    example="MD104 could not judge this module: mesh axis size 0",
)
