"""``heap.defer_to_idle``: a due full collection is marked, not paid, until ``collect_due``
(the TUI's idle moment), unless the frozen set grew by ``FORCE_OBJECTS`` (issue 30)."""

from __future__ import annotations

import gc
import weakref

from kbtool.services import heap


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


def _grow_past_due(n: int) -> list:
    return [[_Node()] for _ in range(n)]


def test_a_deferred_collection_waits_for_collect_due(monkeypatch):
    monkeypatch.setattr(heap, "MIN_OBJECTS", 20_000)
    # the growth below doubles what this process had frozen (in a long test run, over a
    # million objects): keep it under the forcing bound, which the next test checks
    monkeypatch.setattr(heap, "FORCE_OBJECTS", 10**9)
    heap.disable()
    try:
        heap.enable()
        heap.defer_to_idle()
        kept = [_Node() for _ in range(1000)]  # noqa: F841  (a cache)
        heap.settle()
        base = heap.stats()["frozen"]
        gone = _Node()
        ref = weakref.ref(gone)
        heap.settle()
        del gone
        grown = _grow_past_due(max(heap.MIN_OBJECTS, base))  # noqa: F841
        assert not heap.collect_due()  # nothing due yet: nothing done
        heap.settle()  # due: only marked
        assert heap.due() and heap.stats()["collections"] == 0 and ref() is not None
        assert heap.collect_due()
        assert not heap.due() and heap.stats()["collections"] == 1 and ref() is None
    finally:
        heap.disable()
    assert gc.get_freeze_count() == 0


def test_a_deferred_collection_is_forced_past_force_objects(monkeypatch):
    monkeypatch.setattr(heap, "MIN_OBJECTS", 20_000)
    monkeypatch.setattr(heap, "FORCE_OBJECTS", 100_000)
    heap.disable()
    try:
        heap.enable()
        heap.defer_to_idle()
        heap.settle()
        gone = _Node()
        ref = weakref.ref(gone)
        heap.settle()
        del gone
        grown = _grow_past_due(max(heap.FORCE_OBJECTS, heap.stats()["frozen"]))  # noqa: F841
        heap.settle()  # what could leak is past the bound: collected now all the same
        assert not heap.due() and heap.stats()["collections"] == 1 and ref() is None
    finally:
        heap.disable()
