"""The TUI never pays the collector's due full collection in the middle of a preparation
(issue 30, point 1): ``heap.settle`` only marks it due once the TUI defers to its idle
moments, and the TUI pays it on its own thread once no key came for ``heap.IDLE_SECONDS``;
the cyclic garbage frozen meanwhile is freed then (memory is not lost). Since session 13 F
the TUI freezes only with its resident screens open (``heap.freeze_when``), so that full
collection is only the bound on what may leak (``heap.FORCE_OBJECTS``)."""

from __future__ import annotations

import gc
import threading
import time
from concurrent.futures import Future

import pytest
from textual.screen import Screen

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.services import code, heap
from tests.support.tui import make_app, settle

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_preparation_pays_no_full_collection_the_idle_tui_does(demo_kb, monkeypatch):
    monkeypatch.setattr(heap, "IDLE_SECONDS", 3600.0)  # a key was just pressed: not idle
    conn = open_ro(str(demo_kb))
    vids = [v["id"] for v in queries.list_versions(conn)]
    conn.close()
    full: list[str] = []  # the thread of each full collection

    def seen(phase: str, info: dict) -> None:
        if phase == "start" and info.get("generation") == 2:
            full.append(threading.current_thread().name)

    code.clear_cache()
    heap.disable()
    heap.enable()  # what `kbtool tui` does (KbApp.run); Pilot skips run()
    gc.callbacks.append(seen)
    try:
        app = make_app(demo_kb)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await _until(pilot, lambda: not heap.pending())  # the app's own freeze, after
            assert not heap.pending() and heap.stats()["young"] >= 1  # frozen at start
            main = threading.current_thread().name
            full.clear()
            job = app.prepare_code(*vids)
            assert job is not None
            job.result(timeout=60)
            assert code.is_cached(app.conn, vids[0]) and code.is_cached(app.conn, vids[1])
            # (design change, session 13 F: a preparation's settle freezes nothing on its
            # thread; the TUI freezes on its own, after collecting what is not frozen)
            assert [t for t in full if t != main] == []  # none on the preparing thread
            assert heap.pending() and heap.stats()["collections"] == 0
            app.last_input = time.monotonic() - 1.0  # a quarter second quiet: the check
            full.clear()
            app.collect_when_idle()
            assert not heap.pending() and full and set(full) == {main}
            # past FORCE_OBJECTS frozen, the full collection is due: paid only when idle
            # (a bound below any count: the freeze's exact recount may find fewer objects
            # than the last estimate when frozen ones were freed since, so 0 was a race)
            monkeypatch.setattr(heap, "FORCE_OBJECTS", -(10**9))
            heap.settle()
            app.collect_when_idle()
            # under load a popped screen may still be closing: the freeze is tried again
            await _until(pilot, lambda: not heap.pending() or heap.freeze_pending())
            assert heap.due() and heap.stats()["collections"] == 0
            await pilot.press("l")
            assert not app.collect_when_idle()  # a key just now: still due
            app.last_input = time.monotonic() - 7200  # quiet for two hours, then...
            await app.push_screen(Screen())  # ...a screen opened from code (no key): busy
            app.pop_screen()
            await pilot.pause()
            # the popped screen's and the app's workers end first: under load one may still
            # run when the last check comes, which then (rightly) finds the TUI busy
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert not app.collect_when_idle() and heap.due()
            assert all(w.is_finished for w in app.workers)  # nothing below starts one
            monkeypatch.setattr(heap, "IDLE_SECONDS", 0.0)
            app.code_prefetch = pending = Future()  # a preparation under way: not idle
            assert not app.collect_when_idle() and heap.due()
            pending.set_result(None)
            full.clear()
            assert app.collect_when_idle()  # idle: paid now, on the TUI's thread
            assert full and set(full) == {main}
            assert not heap.due() and heap.stats()["collections"] == 1
    finally:
        gc.callbacks.remove(seen)
        heap.disable()
        code.clear_cache()
    assert gc.get_freeze_count() == 0


async def _until(pilot, done, seconds: float = 30.0) -> None:
    """Turn the app's loop until ``done()`` (its timers and refresh callbacks run), at most
    ``seconds``: under load the start's freeze may come a few frames after the screen (2 s
    was the bound before; a CI VM a third as fast, two test workers on it, may need more)."""
    end = time.monotonic() + seconds
    while not done() and time.monotonic() < end:
        await pilot.pause(0.05)


def test_no_idle_collect_without_the_policy(demo_kb):
    """Pilot runs and one-shot commands keep Python's policy: nothing is deferred."""
    heap.disable()
    app = make_app(demo_kb)
    app.last_input = time.monotonic() - 10 * heap.IDLE_SECONDS
    assert not heap.due() and not app.collect_when_idle()
