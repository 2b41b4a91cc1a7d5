"""A closed screen is freed by an ordinary collection: no finished worker keeps it (issue 30,
point 1). Textual leaves a thread worker set in its executor thread's context once the work
returns; that worker holds its screen (the node, the bound method of its work), so a
closed diff screen with its report and changelog lived on until another worker ran on that
thread, and was frozen with the rest (``kbtool.tui.workers``)."""

from __future__ import annotations

import gc
import weakref

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.services import code, heap
from kbtool.tui.screens.code import CodeScreen
from kbtool.tui.screens.diff import DiffScreen
from kbtool.tui.widgets.changelog_view import ChangelogPane
from tests.support.tui import make_app, settle, until

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _closed_is_freed(app, pilot, ref: weakref.ref) -> bool:
    """Pop the screen (``ref``: nothing else of the test holds it): freed once collected."""
    app.pop_screen()
    await settle(pilot)
    # a thread worker of the screen may still be finishing on a busy machine: wait for the
    # app's workers, then give the loop a few turns before deciding it leaked
    await app.workers.wait_for_complete()

    def freed() -> bool:
        gc.collect()
        return ref() is None

    return freed() or await until(pilot, freed, 0.05)


async def test_a_closed_diff_screen_and_its_changelog_are_collected(demo_kb):
    app = make_app(demo_kb)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = DiffScreen(1, 2)
        await app.push_screen(screen)
        await settle(pilot)
        await pilot.press("c")  # the changelog read and drawn on a thread worker
        await settle(pilot)
        pane = screen.query_one(ChangelogPane)
        assert pane.loaded and pane.rows is not None
        rows = weakref.ref(pane.rows)
        del pane
        await pilot.press("x")  # a second report computed on a thread worker
        await settle(pilot)
        ref = weakref.ref(screen)
        del screen
        assert await _closed_is_freed(app, pilot, ref)
        assert rows() is None


async def test_a_closed_code_screen_is_collected(demo_kb):
    conn = open_ro(str(demo_kb))
    index = [r.index for r in queries.heatmap_rows(conn, 1)][-1]  # a defined function
    conn.close()
    code.clear_cache()
    try:
        app = make_app(demo_kb)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            screen = CodeScreen(1, index)
            await app.push_screen(screen)
            await until(pilot, lambda s=screen: s._shown is not None)  # (no cell kept)
            await settle(pilot)
            assert screen._shown is not None
            ref = weakref.ref(screen)
            del screen
            assert await _closed_is_freed(app, pilot, ref)
    finally:
        code.clear_cache()


async def test_each_close_gives_the_freeze_tries_of_its_own(demo_kb, monkeypatch):
    closes: list[int] = []
    monkeypatch.setattr(heap, "closed", lambda: closes.append(1))
    heap.disable()
    heap.enable()  # what `kbtool tui` does (KbApp.run); Pilot skips run()
    try:
        app = make_app(demo_kb)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await app.push_screen(DiffScreen(1, 2))
            await settle(pilot)
            assert closes == []  # an open is not a close
            app.pop_screen()
            await settle(pilot)
            assert closes == [1]
    finally:
        heap.disable()
    assert gc.get_freeze_count() == 0
