"""A code screen closed while a worker thread of it still runs is freed by the first
collection the TUI pays for its close (issue 30; session 20 T). The thread's frames hold the
screen beyond the collector's sight: a huge function's first-screen worker waited two
seconds for a frame a closed screen never draws, so the freeze's collection found the screen
alive, tried again and again, and 85-95 % of the benchmark's tries failed that way. Now the
wait ends when the screen is unmounted, and the app waits for a closed screen's thread works
before it collects (``kbtool.tui.workers.running_on``)."""

from __future__ import annotations

import gc
import weakref

import pytest

from kbtool.services import code, heap
from kbtool.tui.screens.code import CodeScreen
from kbtool.tui.workers import running_on
from tests.support.codefixtures import code_kb_fixture  # noqa: F401  (fixture)
from tests.support.tui import make_app, settle, until

pytestmark = pytest.mark.anyio
BIG = 5  # the code KB's huge function (with HUGE_INSTRUCTIONS lowered)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_code_screen_closed_under_its_worker_is_freed_by_the_first_try(
    code_kb, monkeypatch
):
    monkeypatch.setattr(code, "HUGE_INSTRUCTIONS", 1_000)
    monkeypatch.setattr(code, "FIRST_SCREEN", 200)
    code.clear_cache()
    popped: list[bool] = []
    real_loaded = CodeScreen._loaded

    def loaded(self, gen, result, error):  # a person closes it at its first screen
        real_loaded(self, gen, result, error)
        if not popped:
            popped.append(True)
            self.app.pop_screen()

    monkeypatch.setattr(CodeScreen, "_loaded", loaded)
    heap.disable()
    heap.enable()  # what `kbtool tui` does (KbApp.run); Pilot skips run()
    try:
        app = make_app(code_kb)
        async with app.run_test(size=(120, 30)) as pilot:
            await settle(pilot)
            assert app.resident_only() and not heap.pending()
            before = heap.stats()
            screen = CodeScreen(1, BIG)
            ref = weakref.ref(screen)
            app.push_screen(screen)
            del screen
            # its first screen shown, then closed; the freeze tried
            await until(pilot, lambda: popped and heap.stats()["young"] > before["young"])
            after = heap.stats()
            assert popped and after["young"] == before["young"] + 1  # the close's freeze
            assert after["retries"] == before["retries"]  # its first try found the screen freed
            assert ref() is None
            assert not any(running_on(s) for s in gc.get_objects() if isinstance(s, CodeScreen))
    finally:
        heap.disable()
        code.clear_cache()
    assert gc.get_freeze_count() == 0


async def test_a_screen_made_before_its_push_is_not_frozen(code_kb):
    """A screen made, then pushed after an await (as a Pilot test or the benchmark does):
    a freeze meanwhile took it, and no later try could free it once closed."""
    heap.disable()
    heap.enable()
    try:
        app = make_app(code_kb)
        async with app.run_test(size=(120, 30)) as pilot:
            await settle(pilot)
            screen = CodeScreen(1, 1)
            assert not app.resident_only()  # made, not shown: not only resident screens
            heap.settle()  # a settle now only marks the freeze pending
            app.collect_when_idle()
            app._freeze()
            await pilot.pause()
            assert heap.pending()  # not frozen: still in the collector's generations
            assert any(o is screen for o in gc.get_objects())
            ref = weakref.ref(screen)
            app.push_screen(screen)
            del screen
            await settle(pilot)
            app.pop_screen()
            await until(pilot, lambda: not heap.pending())
            assert not heap.pending() and ref() is None
            assert heap.stats()["retries"] == 0
    finally:
        heap.disable()
        code.clear_cache()
    assert gc.get_freeze_count() == 0
