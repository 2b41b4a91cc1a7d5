"""The diff screen opens on the kept head of a report (issue 30): a new process shows the summary,
the tab counts and the first changed rows from a small file, then reads the whole report once
that frame is drawn. What a user sees is what the whole report shows: the same rows in the same
order, the same counts, and paging, tabs and renames behave as before."""

from __future__ import annotations

import threading

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.gate import upsert_symbol
from kbtool.services.diff.cache import DIFF_CACHE, DiffCache
from kbtool.services.diff.disk import DiskAnswers, disk_dir
from kbtool.services.diff.head import HEAD_ROWS, make_head, read_head
from kbtool.services.diff.report import CHANGED, get_diff
from kbtool.services.diff.triage import order_changes
from kbtool.textutil import printable
from kbtool.tui.screens import diff as diff_screen
from kbtool.tui.screens.diff import DiffScreen, filter_counts, head_counts
from kbtool.tui.widgets.lists import KbTable
from tests.support.tui import make_app, screen_text, settle, until

SIZE = (100, 30)
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def kb(tui_kb):
    """A private copy of the seeded TUI KB (``tui_kb`` of tests/conftest.py)."""
    return tui_kb


def _rows(table: KbTable) -> list[list[str]]:
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


def _head(kb) -> dict | None:
    conn = open_ro(kb)
    try:
        return read_head(DiffCache(disk=DiskAnswers(disk_dir())), conn, 1, 2)
    finally:
        conn.close()


async def _open(app, pilot) -> DiffScreen:
    screen = DiffScreen(1, 2)
    app.push_screen(screen)
    await until(
        pilot,
        lambda: screen.is_mounted and screen.query_one("#diff-table", KbTable).row_count,
        0.01,
    )
    return screen


def _text(text: str) -> list[str]:
    """The screen's lines but the tab underline's (where Textual's animation of it under a
    relabelled tab stands depends on timing)."""
    return [line for line in text.splitlines() if "━" not in line]


async def _whole_in(pilot, screen: DiffScreen) -> None:
    """Until the whole report is behind the head (read a moment after the head's frame)."""
    if not (screen._head is None and not screen._diff_running):
        await until(pilot, lambda: screen._head is None and not screen._diff_running, 0.01)
    await settle(pilot)


async def _still(pilot) -> None:
    """The tab underline's move under a relabelled tab done (a timer, then an animation)."""
    await pilot.pause(0.1)
    await pilot.wait_for_scheduled_animations()
    await pilot.wait_for_animation()
    await pilot.pause()


async def _shown_whole(kb) -> tuple[str, list[list[str]], list[list[str]]]:
    """(screen text, rows first shown, rows after paging to the end) of a fresh app."""
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await _open(app, pilot)
        await settle(pilot)
        await _still(pilot)
        table = screen.query_one("#diff-table", KbTable)
        text, first = screen_text(app), _rows(table)
        for _ in range(30):
            await pilot.press("pagedown")
        await settle(pilot)
        return text, first, _rows(table)


def test_a_head_says_what_the_whole_report_says(kb):
    conn = open_ro(kb)
    try:
        report = get_diff(conn, 1, 2)
    finally:
        conn.close()
    head = make_head(report, rows=7)
    assert head_counts(head) == filter_counts(report["changes"])
    changed = order_changes([c for c in report["changes"] if c["classification"] in CHANGED])
    assert head["changed"] == changed[:7] and head["changed_total"] == len(changed)
    assert head["report"] == {k: v for k, v in report.items() if k != "changes"}


async def test_a_new_process_opens_on_the_head_and_shows_the_same_rows(kb, monkeypatch):
    DIFF_CACHE.clear()
    assert _head(kb) is None
    monkeypatch.setattr(diff_screen, "CHUNK", 10)  # "changed" is then a long filter
    text, first, whole = await _shown_whole(kb)  # read whole; its head kept after the frame
    head = _head(kb)
    assert head is not None and 0 < len(head["changed"]) <= HEAD_ROWS
    DIFF_CACHE.clear()  # a new process: nothing in memory, the head on disk
    read: list[int] = []
    view = diff_screen._view

    def spy(conn, frm, to):  # the whole report: read only once the head's rows are drawn
        table = screen.query_one("#diff-table", KbTable)
        read.append(len(screen_rows()))
        painted.append(table.painted > shown_at[0])
        return view(conn, frm, to)

    painted: list[bool] = []
    shown_at = [0]
    head_done = DiffScreen._head_done

    def head_spy(self, gen, got):
        head_done(self, gen, got)
        shown_at[0] = self.query_one("#diff-table", KbTable).painted

    monkeypatch.setattr(diff_screen, "_view", spy)
    monkeypatch.setattr(DiffScreen, "_head_done", head_spy)
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = DiffScreen(1, 2)

        def screen_rows() -> list[list[str]]:
            return _rows(screen.query_one("#diff-table", KbTable))

        app.push_screen(screen)
        await settle(pilot)
        await _whole_in(pilot, screen)
        assert read == [10]  # a chunk of the head's rows first, then the whole report
        assert painted == [True]  # ... once the table has drawn them
        await _still(pilot)
        assert _text(screen_text(app)) == _text(text)
        assert screen._head is None and screen._report is not None  # the whole is in now
        assert len(first) == 10 < len(whole) and screen_rows() == first
        for _ in range(30):
            await pilot.press("pagedown")
        await settle(pilot)
        assert screen_rows() == whole  # paged to the end: the same rows in the same order


async def test_a_tab_picked_before_the_whole_report_is_in_is_filled_when_it_is(kb, monkeypatch):
    DIFF_CACHE.clear()
    await _shown_whole(kb)  # keeps the head
    assert _head(kb) is not None
    DIFF_CACHE.clear()
    conn = open_ro(kb)
    try:
        changes = get_diff(conn, 1, 2)["changes"]
    finally:
        conn.close()
    release = threading.Event()
    view = diff_screen._view

    def held(conn, frm, to):
        release.wait(30)
        return view(conn, frm, to)

    monkeypatch.setattr(diff_screen, "_view", held)
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        try:
            screen = await _open(app, pilot)
            table = screen.query_one("#diff-table", KbTable)
            assert screen._head is not None  # the head's rows, the whole report held back
            changed = sum(1 for c in changes if c["classification"] in CHANGED)
            assert table.row_count == changed
            await pilot.press("7")  # all
            await pilot.pause()
            assert table.row_count == changed  # kept until the whole report is in
            assert f"all {len(changes):,}" in screen_text(app)  # the count is exact already
        finally:
            release.set()
        await _whole_in(pilot, screen)
        assert screen._head is None
        assert table.row_count == len(changes)


async def test_a_rename_misses_the_head_and_the_new_name_is_shown(kb):
    DIFF_CACHE.clear()
    await _shown_whole(kb)
    assert _head(kb) is not None
    conn = open_rw(kb)
    try:
        sid = queries.list_functions(conn, 2)[0]["stable_id"]
        upsert_symbol(
            conn, sid, "renamed_past_the_head", provenance="human", confidence=1.0, actor="t"
        )
    finally:
        conn.close()
    assert _head(kb) is None  # kept under other annotations
    DIFF_CACHE.clear()
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await _open(app, pilot)
        await settle(pilot)
        await pilot.press("7")
        await settle(pilot)
        names = [c.get("name") for c in screen._shown]
        assert "renamed_past_the_head" in names
    assert _head(kb) is not None  # kept again under today's annotations


async def test_every_tab_shows_its_entries_in_triage_order_and_fits_its_longest_name(kb):
    conn = open_ro(kb)
    try:
        changes = get_diff(conn, 1, 2)["changes"]
    finally:
        conn.close()
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await _open(app, pilot)
        await settle(pilot)
        table = screen.query_one("#diff-table", KbTable)
        # every tab, then each again (the second time from the report sorted once)
        for fid in [*diff_screen.FILTERS, *diff_screen.FILTERS]:
            screen.action_filter(fid)
            await settle(pilot)
            pred = diff_screen.FILTERS[fid][1]
            entries = [c for c in changes if pred(c)]
            assert screen._shown == order_changes(entries), fid
            longest = max((len(printable(c.get("name") or "unnamed")) for c in entries), default=0)
            assert table._flex == ("name", max(14, min(longest + 1, 400))), fid
