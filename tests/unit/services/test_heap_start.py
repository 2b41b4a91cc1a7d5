"""``heap.enable`` freezes what is alive when a long-lived process starts (the imports'
modules, classes and functions), so that no later full collection walks them again
(``kbtool mcp``: its one full collection, during the first diff report's read, walked
100,000 import objects; issue 30)."""

from __future__ import annotations

import gc

from kbtool.services import heap


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


def _frozen(obj: object) -> bool:
    """``obj`` (tracked) is in the permanent generation: no collection walks it."""
    return gc.is_tracked(obj) and not any(o is obj for o in gc.get_objects())


def test_enable_freezes_what_is_alive_at_start_and_only_that():
    heap.disable()
    try:
        started = _Node()  # alive when the policy starts (an import's object)
        heap.enable()
        assert _frozen(started)
        assert heap.stats()["frozen"] > 0 and heap.stats()["base"] == 0
        later = _Node()  # made after the start: walked by the collections as before
        assert not _frozen(later)
        heap.enable()  # enabled again: nothing more frozen
        assert not _frozen(later)
        heap.settle()  # the first cache: the base of the growth rule, imports included
        assert _frozen(later) and heap.stats()["base"] == heap.stats()["frozen"]
    finally:
        heap.disable()
    assert gc.get_freeze_count() == 0


def test_a_freeze_when_front_end_freezes_its_start_too():
    """The TUI registers its freeze test after ``enable``: the imports are frozen already,
    a screen opened later is not."""
    heap.disable()
    try:
        started = _Node()
        heap.enable()
        heap.freeze_when(lambda: False)
        screen = _Node()
        heap.settle()
        assert _frozen(started) and not _frozen(screen) and heap.pending()
    finally:
        heap.disable()
    assert gc.get_freeze_count() == 0
