"""``heap.freeze_when``: a front-end with short-lived objects (the TUI's screens) freezes only
when its test says nothing short-lived is alive, after collecting what is not frozen, so no
full collection over the frozen set is ever needed to free a closed screen (issue 30)."""

from __future__ import annotations

import gc
import weakref

from kbtool.services import heap


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


def _frozen(obj: object) -> bool:
    """``obj`` (tracked) is in the permanent generation: no collection walks it."""
    return gc.is_tracked(obj) and not any(o is obj for o in gc.get_objects())


def _full_collections() -> tuple[list[int], object]:
    seen: list[int] = []

    def hook(phase: str, info: dict) -> None:
        if phase == "start" and info.get("generation") == 2:
            seen.append(1)

    gc.callbacks.append(hook)
    return seen, hook


def test_a_settle_waits_for_the_safe_moment_and_frees_the_short_lived_first():
    heap.disable()
    safe = [False]
    try:
        heap.enable()
        heap.freeze_when(lambda: safe[0])
        kept = _Node()  # a cache: long-lived
        screen = _Node()  # a screen's widgets: alive now, closed later
        ref = weakref.ref(screen)
        heap.settle()  # asked while the screen is open: nothing frozen
        assert heap.pending() and not _frozen(screen) and not _frozen(kept)
        assert not heap.freeze_pending()  # the screen is still open: still nothing
        assert heap.pending() and not _frozen(kept)
        del screen  # closed: cyclic garbage, never frozen
        safe[0] = True
        assert heap.freeze_pending()
        assert ref() is None  # freed by the collection before the freeze
        assert _frozen(kept) and not heap.pending()
        s = heap.stats()
        assert s["young"] == 1 and s["collections"] == 0 and not heap.due()
    finally:
        heap.disable()
    assert gc.get_freeze_count() == 0


def test_a_closed_screen_still_held_is_not_frozen_until_tried_again():
    heap.disable()
    held: list = []
    try:
        heap.enable()
        heap.freeze_when(lambda: True, lambda: not held)
        held.append(_Node())  # closed, but still referenced (being unmounted)
        kept = _Node()
        heap.settle()
        seen, hook = _full_collections()
        try:
            assert not heap.freeze_pending()  # collected, then found it alive: no freeze
            assert heap.pending() and not _frozen(kept) and len(seen) == 1
            assert not heap.freeze_pending(retry=False)  # a periodic check: no collection
            assert len(seen) == 1
            held.clear()  # unmounted now
            assert heap.freeze_pending()
            assert _frozen(kept) and not heap.pending()
        finally:
            gc.callbacks.remove(hook)
        # held for good: after STUCK_TRIES tries it is frozen all the same
        held.append(_Node())
        heap.settle()
        for _ in range(heap.STUCK_TRIES):
            assert not heap.freeze_pending()
        assert heap.freeze_pending() and _frozen(held[0])
        assert heap.stats()["retries"] == 1 + heap.STUCK_TRIES
    finally:
        heap.disable()
    assert gc.get_freeze_count() == 0


def test_what_may_leak_stays_bounded(monkeypatch):
    """Past FORCE_OBJECTS frozen since the last full collection, one is due (idle)."""
    monkeypatch.setattr(heap, "FORCE_OBJECTS", 1000)
    heap.disable()
    try:
        heap.enable()
        heap.defer_to_idle()
        heap.freeze_when(lambda: True)
        heap.settle()
        assert heap.freeze_pending() and not heap.due()  # the first freeze: the base
        grown = [_Node() for _ in range(5000)]  # noqa: F841
        heap.settle()
        assert heap.freeze_pending() and heap.due()
        assert heap.collect_due() and heap.stats()["collections"] == 1
    finally:
        heap.disable()
    assert gc.get_freeze_count() == 0


def test_without_a_test_settles_freeze_at_once():
    """``kbtool serve``/``mcp`` (no screens): a settle freezes at once, as before."""
    heap.disable()
    try:
        heap.enable()
        kept = _Node()
        heap.settle()
        assert _frozen(kept) and not heap.pending()
        heap.freeze_when(lambda: False)
        heap.freeze_when(None)  # back to freezing at once
        later = _Node()
        heap.settle()
        assert _frozen(later) and not heap.pending()
    finally:
        heap.disable()


def test_each_closed_screen_has_tries_of_its_own():
    """The tries a closed screen still held was waited on do not count for the next one
    closed (heap.closed()): the next is not frozen while it is being unmounted."""
    heap.disable()
    held: list = []
    try:
        heap.enable()
        heap.freeze_when(lambda: True, lambda: not held)
        held.append(_Node())  # a screen closed, still referenced a while
        heap.settle()
        for _ in range(heap.STUCK_TRIES - 1):
            assert not heap.freeze_pending()
        heap.closed()  # another screen closed, also being unmounted
        held.append(_Node())
        for _ in range(heap.STUCK_TRIES):  # its own tries: none freezes it
            assert not heap.freeze_pending() and not _frozen(held[-1])
        assert heap.freeze_pending() and _frozen(held[-1])  # held for good: bounded
        held.clear()
    finally:
        heap.disable()
    assert gc.get_freeze_count() == 0
