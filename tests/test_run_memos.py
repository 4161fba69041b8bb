"""The inspect pipeline's memos live in one `RunMemos` per run: what a module shows is the
same with a run's memos, with fresh ones and with none, repeated modules are answered from
the run's memos, and the pipeline and report modules keep no cache of their own."""

from __future__ import annotations

import functools
import io
import types

from rich.console import Console

from meshdiag.ir.scan import scan_file
from meshdiag.memo import ContentTable, RunMemos, Table
from meshdiag.pipeline import dump_summary, inspect, module_summary
from meshdiag.pipeline.inspect import Inspected, ModuleChecker, file_json
from meshdiag.pipeline.module_summary import summarise_file, text_groups
from meshdiag.report import file_text
from tests.test_scan_columns import dump


def _console() -> Console:
    return Console(file=io.StringIO(), width=100, height=25, color_system=None, soft_wrap=False)


def test_shown_and_rendered_alike_with_and_without_memos():
    report = scan_file("d.mlir", io.BytesIO(dump(3)))
    console = _console()
    item = Inspected(report, [])
    memos = RunMemos()
    outs = [
        file_text.render_file(item, summarise_file(report, mesh=None, split="xla"), console),
        file_text.render_file(
            item, summarise_file(report, mesh=None, split="xla", memos=memos), console, memos
        ),
        file_text.render_file(
            item, summarise_file(report, mesh=None, split="xla", memos=memos), console, memos
        ),
    ]
    assert outs[0] == outs[1] == outs[2]
    assert outs[0].count("5 sharded values") == 3 and "%arg0@4:59" in outs[0]
    assert file_json(report) == file_json(report, memos=memos)


def test_repeated_modules_come_from_the_run_memos():
    report = scan_file("d.mlir", io.BytesIO(dump(3)))
    a, b, _ = report.modules
    memos = RunMemos()
    # the same annotated lines: one answer, kept in this run's memos only
    assert text_groups(a, memos) is text_groups(b, memos)
    assert text_groups(a, RunMemos()) is not text_groups(a, memos)
    assert len(memos.content("module_summary.groups")) == 1
    checker = ModuleChecker("d.mlir", None, None, "xla", {"none": lambda m, ctx: []}, memos)
    checker.check(a)
    assert len(memos.content("inspect.clean")) == 1
    checker.check(b)  # clean before: not checked again
    assert len(memos.content("inspect.clean")) == 1


def test_no_module_level_caches():
    """Nothing in these modules remembers across runs: no dict, memo or lru_cache at module
    level (constants are tuples, strings and numbers)."""
    for mod in (inspect, dump_summary, module_summary, file_text):
        for name, value in vars(mod).items():
            if isinstance(value, types.ModuleType) or name.startswith("__"):
                continue
            assert not isinstance(value, dict | list | set | Table | ContentTable), (mod, name)
            assert not isinstance(value, functools._lru_cache_wrapper), (mod, name)
