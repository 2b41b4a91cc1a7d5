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


async def test_the_changelog_is_made_only_once_its_pane_is_shown(demo_kb, monkeypatch):
    """The changelog (thousands of entries on a big module, in a pane hidden until `c`) is
    neither read nor made while its pane is hidden; shown, it is read on a worker, the pane
    saying so meanwhile, and only the rows on screen become Rich Texts."""
    import asyncio

    from kbtool.tui.widgets import changelog_view
    from kbtool.tui.widgets.changelog_view import PREPARING, ChangelogPane
    from kbtool.tui.widgets.lists import KbTable

    release, real = threading.Event(), changelog_view.ChangelogRows
    made: list = []

    def held(data, *a):
        assert release.wait(30)
        rows = real(data, *a)
        made.append(rows)
        return rows

    monkeypatch.setattr(changelog_view, "ChangelogRows", held)
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
            for _ in range(3000):
                await asyncio.sleep(0.01)
                if screen.is_mounted and screen.query_one("#diff-table", KbTable).row_count:
                    break
            assert screen.query_one("#diff-table", KbTable).row_count > 0
            await settle(pilot)  # nothing held: the hidden pane asked for nothing
            pane = screen.query_one(ChangelogPane)
            assert pane.rows is None and not made
            await pilot.press("c")
            await pilot.pause()
            assert pane.message == PREPARING
        finally:
            release.set()
        await settle(pilot)
        assert pane.loaded and made and pane.rows is made[0]
        text = screen_text(app)
        assert PREPARING not in text and "changelog" in text
        rows = made[0]
        kept, lines = rows._kept[0], pane._cache  # the rows drawn: those on screen, no more
        assert kept >= 0 and 0 < len(lines) <= pane.size.height < rows.count
