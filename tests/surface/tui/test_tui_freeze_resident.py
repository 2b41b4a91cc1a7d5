"""The TUI freezes (``heap.settle``) only with its resident screens open: a code screen
opened, answered and closed is freed by an ordinary collection, never kept frozen, so the
half-second full collection over everything is never needed for it (issue 30, point 1)."""

from __future__ import annotations

import gc
import weakref

import pytest
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Static

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.services import code, heap
from kbtool.tui.screens.code import CodeScreen
from tests.support.tui import make_app, settle

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class _Plain(Screen):
    def compose(self) -> ComposeResult:
        yield Static("a screen that closes")


async def _quiet(app, pilot) -> None:
    """A person reads a while: the TUI's idle checks retry a freeze a closed screen
    still being unmounted delayed."""
    for _ in range(5):
        if not heap.pending():
            return
        app.last_input -= heap.IDLE_SECONDS
        app.collect_when_idle()
        await pilot.pause()


def _frozen(obj: object) -> bool:
    return gc.is_tracked(obj) and not any(o is obj for o in gc.get_objects())


async def test_closed_code_screens_are_never_frozen(demo_kb):
    conn = open_ro(str(demo_kb))
    indices = [r.index for r in queries.heatmap_rows(conn, 1)][-3:]  # defined functions
    conn.close()
    code.clear_cache()
    heap.disable()
    heap.enable()  # what `kbtool tui` does (KbApp.run); Pilot skips run()
    try:
        app = make_app(demo_kb)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            assert app.resident_only() and not heap.pending()
            for index in indices:
                screen = CodeScreen(1, index)
                settles = heap.stats()["settles"]
                await app.push_screen(screen)
                for _ in range(300):
                    await pilot.pause(0.02)
                    if screen._shown is not None and heap.stats()["settles"] > settles:
                        break
                await settle(pilot)  # its C too
                assert screen._shown is not None  # its answer on screen: settled (code caches)
                assert heap.stats()["settles"] > settles and heap.pending()
                assert not _frozen(screen) and not any(_frozen(w) for w in screen.walk_children())
                del screen
                app.pop_screen()
                await settle(pilot)
                await _quiet(app, pilot)
                assert not heap.pending()  # frozen again, with only the resident screens
            # a closed screen nothing holds any more (a code screen's finished worker may
            # keep its own a while: frozen then after heap.STUCK_TRIES tries, a bounded leak)
            plain = _Plain()
            await app.push_screen(plain)
            await settle(pilot)
            heap.settle()  # a cache built while it is open
            assert heap.pending() and not _frozen(plain)
            ref = weakref.ref(plain)
            del plain
            app.pop_screen()
            await settle(pilot)
            await _quiet(app, pilot)
            assert not heap.pending() and ref() is None  # freed, then the rest frozen
            s = heap.stats()
            assert s["collections"] == 0 and not heap.due() and s["young"] >= 5
    finally:
        heap.disable()
        code.clear_cache()
    assert gc.get_freeze_count() == 0
