"""Checks: one module per rule (`md101_mesh_mismatch.py`, ...), listed in one table
(`registry.RULES`, like ruff's `codes.rs`); `meshdiag rule CODE` prints a rule's docs.
Checks are functions of the model and the run's context; they never print and keep no
state of their own.
"""
