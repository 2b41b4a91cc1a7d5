"""The diff screen's first frame on a big diff (issue 30): only the rows of the first screens go
into the table (more as the cursor goes down), the tab counts are exact from one pass, the
report is read with the cyclic collector paused, and the changelog is read and drawn only once
its pane is shown. What a user sees is the same rows, in the same order."""

from __future__ import annotations

import gc
import threading

import pytest

from kbtool.kb.db import open_ro
from kbtool.services.diff.report import get_diff
from kbtool.tui.screens import diff as diff_screen
from kbtool.tui.screens.diff import FILTERS, DiffScreen
from kbtool.tui.widgets import changelog_view
from kbtool.tui.widgets.changelog_view import PREPARING, ChangelogPane
from kbtool.tui.widgets.lists import KbTable
from tests.support.tui import make_app, screen_text, settle

SIZE = (80, 24)
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def kb(tui_kb):
    """A private copy of the seeded TUI KB (``tui_kb`` of tests/conftest.py): 252 changes."""
    return tui_kb


def _report(kb) -> dict:
    conn = open_ro(kb)
    try:
        return get_diff(conn, 1, 2)
    finally:
        conn.close()


def _row_text(table: KbTable, row: int) -> list[str]:
    return [str(cell) for cell in table.get_row_at(row)]


async def _all_rows(kb) -> tuple[list[list[str]], int, str]:
    """(rows of the "all" filter right after it is shown, the table's row count after paging
    to the end, and the screen's text), in a fresh app."""
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("d", "7")  # all
        await settle(pilot)
        table = app.screen.query_one("#diff-table", KbTable)
        first = [_row_text(table, i) for i in range(table.row_count)]
        text = screen_text(app)
        for _ in range(20):  # page by page to the end: the rest arrives on the way
            await pilot.press("pagedown")
        await settle(pilot)
        rows = [_row_text(table, i) for i in range(table.row_count)]
        assert rows[: len(first)] == first
        return rows, len(first), text


async def test_a_long_filter_fills_its_first_screens_then_more_as_one_goes_down(kb, monkeypatch):
    total = len(_report(kb)["changes"])
    whole, loaded, _ = await _all_rows(kb)  # 252 rows: fewer than CHUNK, loaded whole
    assert loaded == len(whole) == total
    monkeypatch.setattr(diff_screen, "CHUNK", 100)  # "all" is then a long filter
    rows, loaded, text = await _all_rows(kb)
    # two screens of rows (the terminal's height each) first, not a whole chunk of 100
    assert loaded == 2 * SIZE[1] < total
    assert f"all {total:,}" in text  # the tab counts the whole filter
    assert rows == whole  # paged to the end: the same rows in the same order


async def test_a_short_filter_is_loaded_whole(kb):
    changes = _report(kb)["changes"]
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("d", "7")  # all: 252 rows, fewer than CHUNK
        await settle(pilot)
        table = app.screen.query_one("#diff-table", KbTable)
        assert table.row_count == len(changes)


def test_the_tab_counts_of_one_pass_are_each_filter_s():
    changes = _report_changes_of_every_kind()
    counts = diff_screen.filter_counts(changes)
    for fid, (_label, pred) in FILTERS.items():
        assert counts[fid] == sum(1 for c in changes if pred(c)), fid  # type: ignore[operator]


def _report_changes_of_every_kind() -> list[dict]:
    out = []
    for cls in ("modified", "new", "deleted", "moved", "unchanged"):
        for runtime in (False, True, None):
            for review in (False, True):
                entry = {"classification": cls, "review": review}
                if runtime is not None:  # some entries carry no runtime key at all
                    entry["runtime"] = runtime
                out.extend([entry] * (1 + len(out) % 3))
    return out


async def test_the_report_is_read_with_the_collector_paused_and_the_changelog_only_when_shown(
    kb, monkeypatch
):
    seen: dict[str, object] = {}
    read = diff_screen.cached_view
    release = threading.Event()

    def view(conn, frm, to, **kw):
        if kw.get("with_changelog") is False:  # the table's read
            seen["collector during the report"] = gc.isenabled()
        else:  # the changelog's (the pane's), held until its placeholder is checked
            seen["changelog asked"] = True
            release.wait(30)
        return read(conn, frm, to, **kw)

    monkeypatch.setattr(diff_screen, "cached_view", view)
    monkeypatch.setattr(changelog_view, "cached_view", view)
    assert gc.isenabled()
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = DiffScreen(1, 2)
        app.push_screen(screen)
        try:
            for _ in range(3000):
                await pilot.pause(0.01)
                if screen.is_mounted and screen.query_one("#diff-table", KbTable).row_count:
                    break
            assert screen.query_one("#diff-table", KbTable).row_count > 0
            assert seen["collector during the report"] is False
            # back on once read (a background preparation may hold its own pause a moment:
            # the collector is process-wide, so wait for every pause to end)
            for _ in range(300):
                if gc.isenabled():
                    break
                await pilot.pause(0.01)
            assert gc.isenabled()
            await settle(pilot)
            pane = screen.query_one(ChangelogPane)
            # hidden: nothing of the changelog read or made
            assert "changelog asked" not in seen and pane.rows is None and pane.count == 0
            await pilot.press("c")
            for _ in range(3000):
                await pilot.pause(0.01)
                if seen.get("changelog asked"):
                    break
            assert pane.message == PREPARING and PREPARING in screen_text(app)
        finally:
            release.set()
        await settle(pilot)
        assert pane.loaded and pane.rows is not None and pane.message == ""
        assert "changelog" in screen_text(app) and PREPARING not in screen_text(app)
