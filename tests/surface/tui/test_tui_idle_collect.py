"""The TUI never pays the collector's due full collection in the middle of a preparation
(issue 30, point 1): ``heap.settle`` only marks it due once the TUI defers to its idle
moments, and the TUI pays it on its own thread once no key came for ``heap.IDLE_SECONDS``;
the cyclic garbage frozen meanwhile is freed then (memory is not lost)."""

from __future__ import annotations

import gc
import threading
import time
import weakref
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


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only a full collection frees it once frozen


async def test_preparation_pays_no_full_collection_the_idle_tui_does(demo_kb, monkeypatch):
    monkeypatch.setattr(heap, "GROWTH", 1.0)  # any growth makes a full collection due
    monkeypatch.setattr(heap, "MIN_OBJECTS", 0)
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
            gone = _Node()
            ref = weakref.ref(gone)
            heap.settle()  # frozen while alive (a screen's widgets), then dropped
            del gone
            main = threading.current_thread().name
            full.clear()
            job = app.prepare_code(*vids)
            assert job is not None
            job.result(timeout=60)
            assert code.is_cached(app.conn, vids[0]) and code.is_cached(app.conn, vids[1])
            assert [t for t in full if t != main] == []  # none on the preparing thread
            assert heap.due() and heap.stats()["collections"] == 0
            await pilot.press("l")
            assert not app.collect_when_idle()  # a key just now: still due
            assert heap.due() and ref() is not None
            app.last_input = time.monotonic() - 7200  # quiet for two hours, then...
            await app.push_screen(Screen())  # ...a screen opened from code (no key): busy
            app.pop_screen()
            await pilot.pause()
            assert not app.collect_when_idle() and heap.due()
            monkeypatch.setattr(heap, "IDLE_SECONDS", 0.0)
            app.code_prefetch = pending = Future()  # a preparation under way: not idle
            assert not app.collect_when_idle() and heap.due()
            pending.set_result(None)
            full.clear()
            assert app.collect_when_idle()  # idle: paid now, on the TUI's thread
            assert full and set(full) == {main}
            assert not heap.due() and heap.stats()["collections"] == 1
            assert ref() is None  # the frozen garbage is freed
    finally:
        gc.callbacks.remove(seen)
        heap.disable()
        code.clear_cache()
    assert gc.get_freeze_count() == 0


def test_no_idle_collect_without_the_policy(demo_kb):
    """Pilot runs and one-shot commands keep Python's policy: nothing is deferred."""
    heap.disable()
    app = make_app(demo_kb)
    app.last_input = time.monotonic() - 10 * heap.IDLE_SECONDS
    assert not heap.due() and not app.collect_when_idle()
