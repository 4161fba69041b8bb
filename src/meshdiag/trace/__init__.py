"""`meshdiag trace`: one value through the stages of a compile.

stages.py   order a dump's stage files (pass dumps, tt-xla stages)
read.py     read each stage with the IR scanner
match.py    find the value in every stage, or say where it was lost
run.py      compare consecutive stages by per-device slices -> `Trace`
"""
