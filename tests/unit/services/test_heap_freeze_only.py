"""``heap.settle(collect=False)`` freezes what is alive and leaves a due full collection to the
next settle: the TUI's diff screen freezes its report before the first rows without paying a
full collection there (issue 30)."""

from __future__ import annotations

import gc
import weakref

from kbtool.services import heap


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


def test_a_freeze_only_settle_defers_the_due_collection_to_the_next(monkeypatch):
    monkeypatch.setattr(heap, "MIN_OBJECTS", 20_000)
    heap.disable()
    try:
        heap.enable()
        kept = [_Node() for _ in range(1000)]  # noqa: F841  (a cache)
        heap.settle()
        base = heap.stats()["frozen"]
        gone = _Node()
        ref = weakref.ref(gone)
        heap.settle()  # frozen: only a full collection frees it
        del gone
        grown = [[_Node()] for _ in range(max(heap.MIN_OBJECTS, base))]  # noqa: F841
        frozen_before = gc.get_freeze_count()
        heap.settle(collect=False)  # a collection is due: not now
        assert heap.stats()["collections"] == 0 and ref() is not None
        assert gc.get_freeze_count() > frozen_before  # the new objects are frozen all the same
        heap.settle()  # the next settle pays it
        assert heap.stats()["collections"] == 1 and ref() is None
    finally:
        heap.disable()
    assert gc.get_freeze_count() == 0
