"""Snapshot tests of every ``kbtool tui`` screen (pytest-textual-snapshot).

Deterministic: fixed terminal sizes, the seeded TUI KB of ``tests/support/tui_kb.py`` (built with
``KBTOOL_FROZEN_TIME`` so every stored timestamp is the same), no live-refresh timer, no
text-cursor blink, and workers (search debounce, diff) awaited instead of slept on.
Update after an intended change with ``pytest tests/surface/tui/test_tui_snapshots.py --snapshot-update``
and look at the SVGs (``tests/__snapshots__/test_tui_snapshots/``).
"""

from __future__ import annotations

import pytest

from tests.support.tui import make_app, settle
from tests.support.tui_kb import build_empty_kb, sid


@pytest.fixture
def kb(tui_kb):
    """A private copy of the seeded TUI KB (``tui_kb`` of tests/conftest.py)."""
    return tui_kb


def press_then_settle(*keys: str):
    async def run(pilot) -> None:
        await settle(pilot)
        if keys:
            await pilot.press(*keys)
        await settle(pilot)

    return run


def open_then_settle(opener, *keys: str):
    async def run(pilot) -> None:
        await settle(pilot)
        opener(pilot.app)
        await settle(pilot)
        if keys:
            await pilot.press(*keys)
            await settle(pilot)

    return run


def test_heatmap(snap_compare, kb):
    assert snap_compare(
        make_app(kb), terminal_size=(80, 24), run_before=press_then_settle(*"lllllllj")
    )


def test_heatmap_light_theme(snap_compare, kb):
    assert snap_compare(
        make_app(kb, theme="light"),
        terminal_size=(80, 24),
        run_before=press_then_settle(*"lllllllj"),
    )


def test_heatmap_small_terminal(snap_compare, kb):
    assert snap_compare(make_app(kb), terminal_size=(60, 18), run_before=press_then_settle("l"))


def test_versions(snap_compare, kb):
    assert snap_compare(make_app(kb), terminal_size=(80, 24), run_before=press_then_settle("v"))


def test_detail(snap_compare, kb):
    assert snap_compare(
        make_app(kb),
        terminal_size=(80, 24),
        run_before=open_then_settle(lambda app: app.open_detail(2, 10)),
    )


def test_detail_hostile_names_literal(snap_compare, kb):
    assert snap_compare(
        make_app(kb),
        terminal_size=(100, 30),
        run_before=open_then_settle(lambda app: app.open_detail(1, 9)),
    )


def test_history(snap_compare, kb):
    assert snap_compare(
        make_app(kb),
        terminal_size=(80, 24),
        run_before=open_then_settle(lambda app: app.open_history(sid("fn6"))),
    )


def test_search(snap_compare, kb):
    assert snap_compare(
        make_app(kb),
        terminal_size=(80, 24),
        run_before=press_then_settle("slash", *"frame", "down"),
    )


def test_diff(snap_compare, kb):
    assert snap_compare(make_app(kb), terminal_size=(80, 24), run_before=press_then_settle("d"))


def test_diff_changelog(snap_compare, kb):
    assert snap_compare(
        make_app(kb), terminal_size=(100, 30), run_before=press_then_settle("d", "2", "c")
    )


def test_rename_dialog(snap_compare, kb):
    assert snap_compare(
        make_app(kb), terminal_size=(80, 24), run_before=press_then_settle("l", "l", "n")
    )


def test_read_only_footer(snap_compare, kb):
    assert snap_compare(
        make_app(kb, read_only=True),
        terminal_size=(80, 24),
        run_before=open_then_settle(lambda app: app.open_detail(2, 10)),
    )


def test_empty_kb(snap_compare, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the empty state shows the --db path: keep it relative
    build_empty_kb(tmp_path / "empty.db")
    assert snap_compare(
        make_app("empty.db"), terminal_size=(80, 24), run_before=press_then_settle()
    )


@pytest.fixture(autouse=True)
def _no_textual_devtools(monkeypatch):
    monkeypatch.delenv("TEXTUAL", raising=False)


def test_code_pane_80x24(snap_compare, demo_kb_master):
    """The code pane at 80x24 (issue #23.11): the whole 40-character name in the title, links
    on one line each (an ellipsis only past the pane), sideways scrolling with the line
    numbers kept (three presses of → = 12 columns)."""
    from kbtool.tui.screens.code import CodeScreen

    assert snap_compare(
        make_app(demo_kb_master),
        terminal_size=(80, 24),
        run_before=open_then_settle(
            lambda app: app.push_screen(CodeScreen(2, 167)), "right", "right", "right"
        ),
    )
