"""Checks: one module per check, each registering a `Rule` (code, name, docs) and a function.

Like ruff's rules: a registry (`registry.py`) maps codes to rules; `meshdiag rule CODE`
prints a rule's documentation. Checks are pure functions over the model and never print.
"""
