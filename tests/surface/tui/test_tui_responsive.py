"""Keys never wait for a whole-version pass (issue 30, point 1): the detail screen's string
xrefs (a scan of the version's facts per string) come from a worker thread, after the rest
of the detail is drawn; the diff screen prepares both versions of its pair for the function
diff in the background, once its changelog is on screen."""

from __future__ import annotations

import threading

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.services import code, nav
from kbtool.tui.screens.detail import DetailScreen
from kbtool.tui.screens.diff import DiffScreen
from kbtool.tui.widgets.lists import LinkList
from tests.support.tui import make_app, screen_text, settle

SIZE = (120, 36)
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _with_shared_string(db) -> tuple[int, int]:
    conn = open_ro(str(db))
    try:
        for idx in range(40, 400):
            f = queries.get_function_facts(conn, 2, idx)
            if f and nav.string_xrefs(conn, 2, idx, f["referenced_strings"]):
                return 2, idx
    finally:
        conn.close()
    raise AssertionError("no function of the demo KB shares a string")


async def test_detail_string_xrefs_come_from_a_worker(demo_kb, monkeypatch):
    vid, idx = _with_shared_string(demo_kb)
    real, threads = nav.string_xrefs, []

    def recorded(*args, **kwargs):
        threads.append(threading.current_thread())
        return real(*args, **kwargs)

    monkeypatch.setattr(nav, "string_xrefs", recorded)
    app = make_app(demo_kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        ui = threading.current_thread()
        app.open_detail(vid, idx)
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        assert threads and all(t is not ui for t in threads)
        links = app.screen.query_one("#xrefs", LinkList)
        assert links.option_count > 1 and "string xrefs (" in screen_text(app)
        assert "string xrefs (…)" not in screen_text(app)


async def test_diff_screen_prepares_both_versions(demo_kb):
    code.clear_cache()
    conn = open_ro(str(demo_kb))
    try:
        vids = [v["id"] for v in queries.list_versions(conn)]
        app = make_app(demo_kb)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            assert not any(code.is_cached(conn, v) for v in vids)
            app.push_screen(DiffScreen(vids[0], vids[1]))
            await settle(pilot)
            assert isinstance(app.screen, DiffScreen)
            assert app.code_prefetch is not None
            app.code_prefetch.result(timeout=60)
            assert code.is_cached(conn, vids[0]) and code.is_cached(conn, vids[1])
    finally:
        conn.close()
        code.clear_cache()


async def test_diff_table_is_shown_before_the_changelog_is_made(demo_kb, monkeypatch):
    """The changelog's renderable (thousands of entries on a big module, in a pane hidden
    until `c`) is made after the change table is on screen, on a worker."""
    import asyncio

    from kbtool.tui.screens import diff as diff_screen
    from kbtool.tui.widgets.lists import KbTable

    release, real = threading.Event(), diff_screen.changelog_from_data

    def held(data):
        assert release.wait(30)
        return real(data)

    monkeypatch.setattr(diff_screen, "changelog_from_data", held)
    conn = open_ro(str(demo_kb))
    try:
        vids = [v["id"] for v in queries.list_versions(conn)]
    finally:
        conn.close()
    app = make_app(demo_kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = DiffScreen(vids[0], vids[1])
        app.push_screen(screen)
        try:
            for _ in range(3000):  # the table fills while the changelog is still being made
                await asyncio.sleep(0.01)
                if screen.is_mounted and screen.query_one("#diff-table", KbTable).row_count:
                    break
            assert screen.query_one("#diff-table", KbTable).row_count > 0
            body = str(screen.query_one("#changelog-body").render())
            assert "preparing the changelog" in body
        finally:
            release.set()
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        assert "preparing the changelog" not in str(screen.query_one("#changelog-body").render())
