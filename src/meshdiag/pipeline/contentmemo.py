"""Memos keyed by a module's content, bounded by the rows they hold.

Pass dumps print most modules again and again with the same annotated lines, so checks,
summaries and JSON are memoised per module content: a key built from the module's column
entries (by identity) and whatever else the answer depends on. The key and the kept
entries cost memory per row, so a memo counts the rows it holds and starts over past a
budget; modules bigger than a slice of the budget are not memoised at all (their per-row
work dominates anyway).
"""

from __future__ import annotations

from typing import Any

#: rows a memo may hold before it starts over (about 16 bytes each: id and reference, but
#: a kept row also keeps its entry and values alive, up to a KB when no other memo does: a
#: cold input of distinct programs fills the memos with modules never seen again)
MAX_ROWS = 1 << 15
#: modules with more rows than this are not memoised
MAX_MODULE_ROWS = 1 << 14
#: column entries a memo keyed by one entry's identity (its values' rows, JSON fragments,
#: leaves, per-device copies) keeps before starting over: each entry kept keeps its values
#: alive, and a real program's every-pass dump has a few thousand distinct ones
MAX_ENTRIES = 1 << 14


class ContentMemo:
    def __init__(self) -> None:
        self._data: dict[Any, Any] = {}
        self._rows = 0

    def get(self, key: Any) -> Any:
        return self._data.get(key)

    def put(self, key: Any, rows: int, value: Any) -> Any:
        """Keep `value` (which must hold the module's entries, so their ids stay theirs)
        unless the module is too big; returns `value`."""
        if rows > MAX_MODULE_ROWS:
            return value
        if self._rows + rows > MAX_ROWS:
            self.clear()
        self._data[key] = value
        self._rows += rows + 1
        return value

    def clear(self) -> None:
        self._data.clear()
        self._rows = 0

    def __len__(self) -> int:
        return len(self._data)
