"""The native scanner only; every other piece of metadata lives in pyproject.toml.

`optional=True`: where the extension cannot be compiled (no C compiler) the install still
succeeds and `meshdiag.ir.lines` falls back to its Python reference scanner.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("meshdiag.ir._fastscan", ["src/meshdiag/ir/_fastscan.c"], optional=True),
    ],
)
