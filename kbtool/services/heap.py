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

A front-end whose long-lived objects sit beside short-lived ones (the TUI: a code screen
opened, read and closed is tens of thousands of widgets in cycles) also calls
:func:`freeze_when` with a test "nothing short-lived is alive now" (only the resident
screens open): a settle then only marks a freeze pending, and :func:`freeze_pending`, called
by the front-end once the test holds, collects what is not frozen (only what is newer than
the last freeze: a closed screen, tens of ms) and then freezes the survivors. Nothing that
dies with a screen is frozen, so no full collection over the frozen set is needed (the
half-second one above); :data:`FORCE_OBJECTS` stays the bound on what may leak.

Python's thresholds are kept: raising the full collection's (10 -> 100) made them four
times rarer but each five times longer on ffmpeg (p50 330 ms CPU), worse for a keystroke.
Nothing happens until :func:`enable` (one-shot commands and tests keep the default policy).
"""

from __future__ import annotations

import gc
import json
import os
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager

__all__ = [
    "FORCE_OBJECTS",
    "GROWTH",
    "IDLE_SECONDS",
    "collect_due",
    "closed",
    "collector_paused",
    "defer_to_idle",
    "disable",
    "due",
    "enable",
    "enabled",
    "freeze_pending",
    "freeze_when",
    "pending",
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
# freeze_pending: after this many tries in a row whose gone() failed, freeze all the same;
# counted since the last close (:func:`closed`): each closed screen has tries of its own
STUCK_TRIES = 2
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
    "guard": None,  # freeze_when's test: freezing now keeps nothing short-lived
    "pending": False,  # a settle asked for a freeze while the test did not hold
    "gone": None,  # freeze_when's test after the collection: nothing short-lived alive
    "young": 0,  # freezes by freeze_pending (each after a collection of what is not frozen)
    "retries": 0,  # freeze_pending's collections after which something short-lived lived on
    "stuck": 0,  # tries in a row that did so, since the last close (closed())
}


def collector_paused() -> AbstractContextManager[None]:
    """For the front-ends: :func:`kbtool.wasm.facts.gc_paused`, the collector paused for a
    block that allocates many objects and no cycles (a report read, a decode), restored
    after. Imported when first used: the wasm package is ~30 ms of the TUI's start, which
    reads no module (issue 30)."""
    from kbtool.wasm.facts import gc_paused

    return gc_paused()


def enable() -> None:
    """Turn the policy on for this process (a long-lived front-end calls it at start).
    ``KBTOOL_GC_TRACE=<file>``: each collection's pause is also kept in that file (JSON; the
    benchmark reads ``kbtool serve``'s and ``kbtool mcp``'s)."""
    _state["enabled"] = True
    if not _state["frozen"]:  # the imports: long-lived, never walked again (see _start)
        _start()
    path = os.environ.get("KBTOOL_GC_TRACE")
    if path and not any(isinstance(cb, _Trace) for cb in gc.callbacks):
        gc.callbacks.append(_Trace(path))


def _start() -> None:
    """Freeze what is alive when the policy starts: the modules, classes and functions of
    the imports (~50,000-100,000 objects), which every full collection walked again
    (``kbtool mcp``: its one full collection, during the first diff report's read, walked
    100,000 objects, 60-85 ms). Not collected first: the imports' cyclic garbage is a few
    dozen objects."""
    with _lock:
        added = sum(len(gc.get_objects(generation=g)) for g in range(3))
        gc.freeze()
        _state["frozen"] += added


class _Trace:
    """Every collection's pause, wall and CPU ms (the collecting thread holds the GIL):
    the full ones each, the longest of any generation; written after each full one and
    each new longest."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.began = (0.0, 0.0)
        self.out: dict = {"full_wall_ms": [], "full_cpu_ms": [], "max_wall_ms": 0.0}
        self.out["max_cpu_ms"] = 0.0
        self.out["count"] = 0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self.began = (time.perf_counter(), time.thread_time())
            return
        wall = round((time.perf_counter() - self.began[0]) * 1000, 2)
        cpu = round((time.thread_time() - self.began[1]) * 1000, 2)
        out = self.out
        out["count"] += 1
        longer = cpu > out["max_cpu_ms"]
        out["max_wall_ms"] = max(out["max_wall_ms"], wall)
        out["max_cpu_ms"] = max(out["max_cpu_ms"], cpu)
        if info.get("generation") == 2:
            out["full_wall_ms"].append(wall)
            out["full_cpu_ms"].append(cpu)
        if longer or info.get("generation") == 2:
            try:
                with open(self.path, "w", encoding="utf-8") as f:
                    json.dump(out, f)
            except OSError:
                pass


def disable() -> None:
    """Back to Python's policy: every frozen object is collectable again (tests)."""
    with _lock:
        _state.update(
            enabled=False, base=0, settles=0, collections=0, frozen=0, defer=False, due=False
        )
        _state.update(guard=None, gone=None, pending=False, young=0, retries=0, stuck=0)
        gc.unfreeze()


def enabled() -> bool:
    return bool(_state["enabled"])


def defer_to_idle(on: bool = True) -> None:
    """A due full collection waits for :func:`collect_due` (the caller's idle moment)."""
    _state["defer"] = on


def freeze_when(safe: Callable[[], bool] | None, gone: Callable[[], bool] | None = None) -> None:
    """From now on a settle only marks a freeze pending; :func:`freeze_pending` does it once
    ``safe()`` holds (the caller: only long-lived things open) and, after its collection,
    ``gone()`` too (what was short-lived is freed: a closed screen still being unmounted
    is not). None: settles freeze at once again."""
    _state["guard"] = safe
    _state["gone"] = gone
    if safe is None:
        _state["pending"] = False


def closed() -> None:
    """Something short-lived was just closed (a screen): the tries of :func:`freeze_pending`
    start again for it. Without this, tries spent waiting on an earlier closed screen
    counted for the next one, which was then frozen while still being unmounted (leaked
    until a full collection)."""
    _state["stuck"] = 0


def pending() -> bool:
    """A settle's freeze waits for :func:`freeze_pending` (see :func:`freeze_when`)."""
    return bool(_state["pending"])


def freeze_pending(retry: bool = True) -> bool:
    """The pending freeze, if the :func:`freeze_when` test holds now: collect what is not
    frozen (newer than the last freeze; a closed screen's cycles), then freeze the rest.
    Past :data:`FORCE_OBJECTS` frozen since the last full collection, that one is due
    (:func:`collect_due`, at an idle moment). ``retry=False`` (a periodic check): nothing
    is done after a try whose ``gone()`` failed, until a call with ``retry`` (the front-end's
    next screen change), so a closed screen held longer costs no collection per tick.
    Frozen?"""
    safe = _state["guard"]
    if not (_state["enabled"] and _state["pending"]) or safe is None or not safe():
        return False
    if _state["stuck"] and not retry:
        return False
    with _lock:
        if not _state["pending"]:
            return False
        _state["pending"] = False
        gc.collect()  # only the generations: the frozen set is not walked
        gone = _state["gone"]
        if gone is not None and not gone() and _state["stuck"] < STUCK_TRIES:
            # still referenced (a closed screen being unmounted): frozen, it would leak once
            # dropped; after STUCK_TRIES tries it is held for good, and frozen all the same
            _state["pending"] = True
            _state["stuck"] += 1
            _state["retries"] += 1
            return False
        _state["stuck"] = 0
        added = sum(len(gc.get_objects(generation=g)) for g in range(3))
        gc.freeze()
        _state["young"] += 1
        frozen = _state["frozen"] = _state["frozen"] + added
        if _state["base"] == 0:
            _state["base"] = frozen
        elif frozen - _state["base"] > FORCE_OBJECTS:  # what may leak: counted exactly
            frozen = _state["frozen"] = gc.get_freeze_count()
            if frozen - _state["base"] > FORCE_OBJECTS:
                _state["due"] = True
        return True


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
    if _state["guard"] is not None:  # frozen by freeze_pending, once nothing short-lived
        _state["settles"] += 1
        _state["pending"] = True
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
    return {k: v for k, v in _state.items() if k not in ("guard", "gone")}
