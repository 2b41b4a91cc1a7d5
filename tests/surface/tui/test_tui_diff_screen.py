"""Pilot tests of the TUI's diff screen: summary, filters, changelog, navigation, live refresh."""

from __future__ import annotations

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.gate import upsert_symbol
from kbtool.services.diff.report import get_diff
from kbtool.tui.screens import diff as diff_screen
from kbtool.tui.screens.detail import DetailScreen
from kbtool.tui.screens.diff import DiffScreen
from kbtool.tui.widgets.lists import KbTable
from tests.support.tui import make_app, screen_text, settle
from tests.support.tui_kb import build_fixture_kb as build
from tests.support.tui_kb import frozen_time

SIZE = (80, 24)
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def kb(tui_kb):
    """A private copy of the seeded TUI KB (``tui_kb`` of tests/conftest.py)."""
    return tui_kb


async def test_diff_screen_needs_two_versions(tmp_path):
    db = build(tmp_path / "one.db", versions=1)
    app = make_app(db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, DiffScreen)
        assert "A diff needs two versions" in screen_text(app)


async def test_diff_screen_summary_filters_changelog_and_navigation(kb):
    conn = open_ro(kb)
    report = get_diff(conn, 1, 2)
    conn.close()
    changes = report["changes"]
    app = make_app(kb)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, DiffScreen)
        text = screen_text(app)
        s = report["summary"]
        assert "app-1.0 → app-1.1" in text
        for needle in (
            f"{s['modified']} modified",
            f"{s['added']} new",
            f"{s['removed']} deleted",
            f"{s['unchanged']} unchanged",
            f"{s['moved']} moved",
        ):
            assert needle in text, needle
        table = screen.query_one("#diff-table", KbTable)
        # the default tab is "changed": modified + new + deleted (moved rows behind their tab)
        assert table.row_count == sum(
            1 for c in changes if c["classification"] in ("modified", "new", "deleted")
        )
        expect = {
            "2": lambda c: c["classification"] == "modified",
            "3": lambda c: c["classification"] == "new",
            "4": lambda c: c["classification"] == "deleted",
            "5": lambda c: c["runtime"],
            "6": lambda c: c["review"],
            "7": lambda c: True,
            "8": lambda c: c["classification"] == "moved",
            "9": lambda c: c["classification"] == "unchanged",
        }
        for key, pred in expect.items():
            await pilot.press(key)
            await settle(pilot)
            assert table.row_count == sum(1 for c in changes if pred(c)), key
        await pilot.press("3")  # new functions
        await settle(pilot)
        assert "new" in screen_text(app)
        await pilot.press("c")  # the semantic changelog
        await settle(pilot)
        assert "changelog" in screen_text(app)
        await pilot.press("2", "enter")  # a modified function: its per-function diff
        await settle(pilot)
        assert type(app.screen).__name__ == "FunctionDiffScreen" and app.screen.pair[2] == 2
        await pilot.press("o")  # ... and from there its detail (to side)
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen) and app.screen.version_id == 2
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("x")  # swap from/to
        await settle(pilot)
        assert "app-1.1 → app-1.0" in screen_text(app)


async def test_diff_on_the_demo_kb_matches_the_report(demo_kb):
    conn = open_ro(demo_kb)
    s = get_diff(conn, 1, 2)["summary"]
    conn.close()
    app = make_app(demo_kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        text = screen_text(app)
        assert "zstd-1.5.5 → zstd-1.5.6" in text
        assert f"{s['modified']} modified" in text and f"{s['moved']} moved" in text


async def test_demo_kb_heatmap_search_and_detail(demo_kb):
    conn = open_ro(demo_kb)
    cov = queries.coverage(conn, 2)
    named = queries.search_symbols(conn, "HUF_", limit=1)[0]
    conn.close()
    app = make_app(demo_kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert "zstd-1.5.6" in text and f"{cov['defined']:,} functions" in text
        assert f"{cov['coverage_pct']:.1f}% named" in text
        await pilot.press("slash", *"HUF_")
        await settle(pilot)
        assert named["name"] in screen_text(app)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        assert named["name"] in screen_text(app)


async def test_diff_table_loads_large_results_a_chunk_at_a_time(kb, monkeypatch):
    monkeypatch.setattr(diff_screen, "CHUNK", 40)
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        await pilot.press("7")  # all: 252 rows
        await settle(pilot)
        table = app.screen.query_one("#diff-table", KbTable)
        total = len(app.screen._shown)
        assert table.row_count == 40 < total
        for _ in range(12):
            await pilot.press("G")  # to the end of what is loaded: more arrives
        await settle(pilot)
        assert table.row_count == total


async def test_diff_screen_refreshes_live_and_keeps_its_row(kb):
    app = make_app(kb)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("d", "2")  # modified
        await settle(pilot)
        await pilot.press("j", "j")
        screen = app.screen
        table = screen.query_one("#diff-table", KbTable)
        row = table.cursor_row
        target = screen.current_function()
        with frozen_time():
            conn = open_rw(kb)
            for i in range(3):  # several writes: one recompute at a time
                upsert_symbol(
                    conn,
                    target.stable_id,
                    f"live_name_{i}",
                    provenance="human",
                    confidence=1.0,
                    actor="human:cli",
                )
            conn.close()
        assert app.poll_changes()
        await settle(pilot)
        assert table.cursor_row == row
        assert "live_name_2" in screen_text(app)
