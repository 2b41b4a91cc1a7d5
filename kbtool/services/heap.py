"""The garbage collector's policy in the long-lived processes (the TUI, ``kbtool serve``,
``kbtool mcp``): no full collection walks the caches a person already waits on.

A prepared version of a big module, a stored diff report or the heatmap rows are tens of
thousands of long-lived objects; CPython's full (generation 2) collection walks every one of
them, 40-160 ms on ffmpeg's heap, at whatever keystroke or request happens to trigger it.
:func:`settle`, called once such a cache is loaded, moves every object alive now into the
permanent generation (:func:`gc.freeze`): later collections walk only what is newer.
Frozen objects are still freed by reference counting; only cyclic garbage among them is
kept, so when the frozen set has doubled (and by :data:`MIN_OBJECTS`) since the last full
collection (a cache replaced after a rename, a second version prepared) :func:`settle`
collects once, then freezes again: that one pause is paid while a cache is being built, not at random later.

A front-end that knows when a person is idle (the TUI: no key or mouse event for
:data:`IDLE_SECONDS`) calls :func:`defer_to_idle`: a due collection is then only marked
(:func:`due`) and paid by :func:`collect_due` when it is idle, never in the middle of a
preparation running beside keystrokes (ffmpeg: 0.56 s, 234,000 objects of popped screens
freed) -- unless the frozen set grew by :data:`FORCE_OBJECTS` (what may leak stays bounded).

Python's thresholds are kept: raising the full collection's (10 -> 100) made them four
times rarer but each five times longer on ffmpeg (p50 330 ms CPU), worse for a keystroke.
Nothing happens until :func:`enable` (one-shot commands and tests keep the default policy).
"""

from __future__ import annotations

import gc
import threading

# re-exported for the front-ends: the collector paused for a block that allocates many
# objects and no cycles (a report read, a decode), restored after
from kbtool.wasm.facts import gc_paused as collector_paused

__all__ = [
    "FORCE_OBJECTS",
    "GROWTH",
    "IDLE_SECONDS",
    "collect_due",
    "collector_paused",
    "defer_to_idle",
    "disable",
    "due",
    "enable",
    "enabled",
    "settle",
    "stats",
]

GROWTH = 2.0  # frozen objects over those frozen after the last full collection: collect again
# and by at least this many objects: a full collection then walks everything (~0.3 s on
# ffmpeg's TUI), so it waits until what could be leaked is worth that pause
MIN_OBJECTS = 500_000
# deferred to an idle moment (defer_to_idle): collected at once all the same once the frozen
# set grew by this many objects since the last full collection (what could leak is bounded)
FORCE_OBJECTS = 2_000_000
IDLE_SECONDS = 1.0  # no input for this long: the TUI pays a due collection (collect_due)

_lock = threading.Lock()
_state: dict = {
    "enabled": False,
    "base": 0,
    "settles": 0,
    "collections": 0,
    "frozen": 0,
    "defer": False,
    "due": False,
}


def enable() -> None:
    """Turn the policy on for this process (a long-lived front-end calls it at start)."""
    _state["enabled"] = True


def disable() -> None:
    """Back to Python's policy: every frozen object is collectable again (tests)."""
    with _lock:
        _state.update(
            enabled=False, base=0, settles=0, collections=0, frozen=0, defer=False, due=False
        )
        gc.unfreeze()


def enabled() -> bool:
    return bool(_state["enabled"])


def defer_to_idle(on: bool = True) -> None:
    """A due full collection waits for :func:`collect_due` (the caller's idle moment)."""
    _state["defer"] = on


def due() -> bool:
    """A full collection was found due and deferred (see :func:`defer_to_idle`)."""
    return bool(_state["due"])


def collect_due() -> bool:
    """Pay the deferred full collection now, if one is due (the TUI when idle). Collected?"""
    with _lock:
        if not _state["due"]:
            return False
        _collect()
        return True


def _collect() -> None:
    """Unfreeze, collect everything, freeze again (the caller holds the lock)."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    _state["base"] = _state["frozen"] = gc.get_freeze_count()
    _state["collections"] += 1
    _state["due"] = False


def settle(*, collect: bool = True) -> None:
    """A long-lived cache was just loaded: freeze what is alive (see the module's doc).
    Cheap (a list merge) unless the frozen set grew :data:`GROWTH` times since the last full
    collection; a no-op before :func:`enable`. The TUI calls it after each code screen's
    answer too (a function's listing and C are kept in the code caches). ``collect=False``:
    freeze only, the full collection it may be due is left to the next settle (a read a
    person is waiting on: the diff screen's report before its first rows). After
    :func:`defer_to_idle` a due collection is only marked (:func:`due`), up to
    :data:`FORCE_OBJECTS`."""
    if not _state["enabled"]:
        return
    with _lock:
        _state["settles"] += 1
        # what this freeze adds: the collector's generations (small: they were frozen at the
        # last settle); gc.get_freeze_count() would walk every frozen object (tens of ms)
        added = sum(len(gc.get_objects(generation=g)) for g in range(3))
        gc.freeze()
        frozen = _state["frozen"] = _state["frozen"] + added
        base = _state["base"]
        if base == 0:  # the first cache: what was garbage before it is small
            _state["base"] = frozen
            return
        if not collect:
            return
        if frozen > base * GROWTH and frozen - base > MIN_OBJECTS:
            # the count also holds what reference counting freed since: count exactly (one
            # walk of the frozen set, ~10 ms on ffmpeg) before paying a full collection
            frozen = _state["frozen"] = gc.get_freeze_count()
        if frozen > base * GROWTH and frozen - base > MIN_OBJECTS:
            if _state["defer"] and frozen - base <= FORCE_OBJECTS:
                _state["due"] = True  # paid when the front-end is idle (collect_due)
                return
            _collect()


def stats() -> dict:
    """What the policy did: enabled, settles, full collections, objects frozen (counted at
    each settle; cyclic garbage freed since is not subtracted)."""
    return dict(_state)
