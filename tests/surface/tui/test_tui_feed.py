"""The TUI's agents feed follows the event feed live."""

from __future__ import annotations

import time

import pytest

from kbtool.kb import store
from kbtool.kb.db import open_rw, transaction
from kbtool.tui.app import KbApp
from kbtool.tui.screens.feed import FeedScreen

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def demo_db(tmp_path):
    from kbtool.services.demo import build_demo

    db = tmp_path / "kb.db"
    build_demo(db, echo=lambda _s: None)
    return db


async def test_feed_screen_shows_new_events_as_they_come(demo_db):
    app = KbApp(demo_db, poll_seconds=None, blink=False)
    async with app.run_test(size=(100, 24)) as pilot:
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, FeedScreen)
        conn = open_rw(demo_db)
        with transaction(conn):
            store.append_event(
                conn,
                "deep-done",
                stable_id="\x1b[2Jsid",
                version_id=2,
                payload={"func_index": 7, "status": "done", "confidence": 0.3},
            )
        conn.close()
        # the screen's own poll (every POLL_SECONDS) shows it: waited for, not a fixed 1.3 s
        # (a slow machine ran the timer's tick after that)
        end = time.monotonic() + 15
        while not any(r["stable_id"] == "\x1b[2Jsid" for r in app.screen._rows):
            assert time.monotonic() < end, "the feed never showed the new event"
            await pilot.pause(0.1)
        rows = app.screen._rows
        assert rows and rows[0]["kind"] == "deep-done"
        table = app.screen.query_one("#feed-table")
        cells = [str(c) for c in table.get_row_at(0)]
        assert "deep-done" in cells and not any("\x1b" in c for c in cells)
        await pilot.press("escape")
        assert not isinstance(app.screen, FeedScreen)
