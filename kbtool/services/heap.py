"""The garbage collector's policy in the long-lived processes (the TUI, ``kbtool serve``,
``kbtool mcp``): no full collection walks the caches a person already waits on.

A prepared version of a big module, a stored diff report or the heatmap rows are tens of
thousands of long-lived objects; CPython's full (generation 2) collection walks every one of
them, 40-160 ms on ffmpeg's heap, at whatever keystroke or request happens to trigger it.
:func:`settle`, called once such a cache is loaded, moves every object alive now into the
permanent generation (:func:`gc.freeze`): later collections walk only what is newer.
Frozen objects are still freed by reference counting; only cyclic garbage among them is
kept, so when the frozen set has grown by half since the last full collection (a cache
replaced after a rename, a second version prepared) :func:`settle` collects once, then
freezes again: that one pause is paid while a cache is being built, not at random later.

Nothing happens until :func:`enable` (one-shot commands and tests keep the default policy).
"""

from __future__ import annotations

import gc
import threading

__all__ = ["GROWTH", "disable", "enable", "enabled", "settle", "stats"]

GROWTH = 1.5  # frozen objects over those frozen after the last full collection: collect again
GEN2_THRESHOLD = 100  # younger (generation 1) collections per full one; Python's default is 10
MIN_OBJECTS = 20_000  # below this many frozen objects a full collection costs nothing worth saving

_lock = threading.Lock()
_state: dict = {"enabled": False, "base": 0, "settles": 0, "collections": 0, "thresholds": None}


def enable() -> None:
    """Turn the policy on for this process (a long-lived front-end calls it at start): and
    full collections only after :data:`GEN2_THRESHOLD` younger ones, not 10 (what is not
    frozen yet, a function's listing or its C, is walked ten times less often)."""
    with _lock:
        if not _state["enabled"]:
            _state["thresholds"] = gc.get_threshold()
            g0, g1, g2 = gc.get_threshold()
            gc.set_threshold(g0, g1, max(g2, GEN2_THRESHOLD))
        _state["enabled"] = True


def disable() -> None:
    """Back to Python's policy: every frozen object is collectable again (tests)."""
    with _lock:
        if _state["enabled"] and _state.get("thresholds"):
            gc.set_threshold(*_state["thresholds"])
        _state.update(enabled=False, base=0, settles=0, collections=0, thresholds=None)
        gc.unfreeze()


def enabled() -> bool:
    return bool(_state["enabled"])


def settle() -> None:
    """A long-lived cache was just loaded: freeze what is alive (see the module's doc).
    Cheap (a list merge) unless the frozen set grew by :data:`GROWTH` since the last full
    collection; a no-op before :func:`enable`."""
    if not _state["enabled"]:
        return
    with _lock:
        _state["settles"] += 1
        gc.freeze()
        frozen = gc.get_freeze_count()
        base = _state["base"]
        if base == 0:  # the first cache: what was garbage before it is small
            _state["base"] = frozen
            return
        if frozen > max(base * GROWTH, MIN_OBJECTS):
            gc.unfreeze()
            gc.collect()
            gc.freeze()
            _state["base"] = gc.get_freeze_count()
            _state["collections"] += 1


def stats() -> dict:
    """What the policy did: enabled, settles, full collections, objects frozen now."""
    return {**_state, "frozen": gc.get_freeze_count()}
