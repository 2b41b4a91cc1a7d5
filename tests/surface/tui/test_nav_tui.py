"""TUI navigation: index / string / constant in the palette and search, `g` on the heatmap,
string xrefs on the detail screen, Esc on the versions screen, the heatmap cursor kept."""

from __future__ import annotations

import pytest
from textual.widgets import Input

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.services import nav
from kbtool.tui.screens.detail import DetailScreen
from kbtool.tui.screens.heatmap import HeatmapScreen
from kbtool.tui.screens.search import SearchScreen
from kbtool.tui.screens.versions import VersionsScreen
from kbtool.tui.widgets.heatmap import HeatmapGrid
from kbtool.tui.widgets.lists import KbTable, LinkList
from tests.support.tui import make_app, screen_text, settle

SIZE = (120, 36)
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def facts(demo_kb_master):
    conn = open_ro(str(demo_kb_master))
    yield lambda v, i: queries.get_function_facts(conn, v, i)
    conn.close()


async def _search(pilot, app, text: str) -> SearchScreen:
    await pilot.press("slash")
    await settle(pilot)
    screen = app.screen
    assert isinstance(screen, SearchScreen)
    box = screen.query_one("#search-input", Input)
    box.value = text
    await pilot.press("enter")
    await settle(pilot)
    return screen


async def test_search_by_index_opens_that_function(demo_kb):
    app = make_app(demo_kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _search(pilot, app, "#51")
        assert isinstance(app.screen, DetailScreen)
        assert (app.screen.version_id, app.screen.index) == (2, 51)


async def test_search_by_string_and_const_lists_unnamed(demo_kb, facts):
    app = make_app(demo_kb)
    f = facts(2, 51)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash")
        await settle(pilot)
        screen = app.screen
        box = screen.query_one("#search-input", Input)
        box.value = '"' + f["referenced_strings"][1]
        await settle(pilot)
        screen._run(box.value)
        assert 51 in [r["index"] for r in screen._results]
        assert "v2#51" in screen_text(app)
        value = max(c for c in f["constants"] if isinstance(c, int))
        screen._run(f"={hex(value)}")
        assert 51 in [r["index"] for r in screen._results]
        assert all("index" in r for r in screen._results)  # no name hits mixed in
        screen._run("=nope")
        assert screen._results == [] and "no function uses the constant" in screen_text(app)


async def test_palette_takes_an_index(demo_kb):
    from kbtool.tui.jump import FunctionJumpProvider

    app = make_app(demo_kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        provider = FunctionJumpProvider(app.screen)
        hits = [h async for h in provider.search("#139")]
        assert hits and "#139" in hits[0].text
        hits[0].command()
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen) and app.screen.index == 139
        missing = [h async for h in provider.search("#99999")]
        assert not [h for h in missing if h.text.startswith("#99999")]  # no such index: no jump


async def test_heatmap_g_goes_to_an_index_and_back_keeps_cursor(demo_kb):
    app = make_app(demo_kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        heat = app.screen
        assert isinstance(heat, HeatmapScreen)
        await pilot.press("g")
        await settle(pilot)
        await pilot.press(*"#139", "enter")
        await settle(pilot)
        grid = heat.query_one(HeatmapGrid)
        assert heat._rows[grid.cursor][0] == 139
        await pilot.press("g")
        await settle(pilot)
        await pilot.press(*"99999", "enter")
        await settle(pilot)
        assert heat._rows[grid.cursor][0] == 139  # unknown index: cursor stays
        await pilot.press("v")  # to the versions screen
        await settle(pilot)
        assert isinstance(app.screen, VersionsScreen)
        await pilot.press("escape")  # back to the heatmap, cursor kept
        await settle(pilot)
        heat2 = app.screen
        assert isinstance(heat2, HeatmapScreen)
        assert heat2._rows[heat2.query_one(HeatmapGrid).cursor][0] == 139
        await pilot.press("v", "backspace")
        await settle(pilot)
        assert isinstance(app.screen, HeatmapScreen)


async def test_versions_escape_without_a_heatmap_stays(demo_kb):
    app = make_app(demo_kb, start="versions")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, VersionsScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, (VersionsScreen, HeatmapScreen))
        assert len(app.screen_stack) <= 2


async def test_detail_lists_string_xrefs(demo_kb, facts):
    conn = open_ro(str(demo_kb))
    target = None
    for idx in range(40, 200):  # a function sharing a string with another one
        f = facts(2, idx)
        if f and nav.string_xrefs(conn, 2, idx, f["referenced_strings"]):
            target = idx
            break
    assert target is not None
    expected = nav.string_xrefs(conn, 2, target, facts(2, target)["referenced_strings"])
    conn.close()
    app = make_app(demo_kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_detail(2, target)
        await settle(pilot)
        text = screen_text(app)
        assert "string xrefs" in text
        links = app.screen.query_one("#xrefs", LinkList)
        ids = [links.get_option_at_index(i).id for i in range(links.option_count)]
        other = expected[0][1][0]["index"]
        assert f"2:{other}:0" in ids and f"#{other}" in text
        links.focus()
        links.highlighted = ids.index(f"2:{other}:0")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen) and app.screen.index == other


async def test_heatmap_labels_do_not_collapse(demo_kb):
    app = make_app(demo_kb)
    async with app.run_test(size=(80, 30)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        for label in ("func", "name", "prov", "type"):
            assert label in text
        assert "f… " not in text and "t… " not in text


def test_tui_help_says_H_history(capsys):
    from kbtool.cli import main

    assert main(["tui", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "H on the heatmap" in out and "g go to an index" in out


async def test_diff_opens_on_changed_and_says_why_runtime_is_not_churn(demo_kb):
    from kbtool.services.diff.report import get_diff
    from kbtool.tui.screens.diff import DiffScreen

    conn = open_ro(str(demo_kb))
    report = get_diff(conn, 1, 2)
    conn.close()
    changes = report["changes"]
    app = make_app(demo_kb)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, DiffScreen) and screen._filter == "changed"
        table = screen.query_one("#diff-table", KbTable)
        changed = [c for c in changes if c["classification"] in ("modified", "new", "deleted")]
        assert table.row_count == min(len(changed), 500)
        text = screen_text(app)
        assert f"changed {len(changed):,}" in text
        moved = sum(c["classification"] == "moved" for c in changes)
        assert f"moved {moved:,}" in text
        runtime = sum(bool(c.get("runtime")) for c in changes)
        assert report["summary"]["runtime_churn"] == 0  # toolchain unknown on both sides
        if runtime:
            assert f"runtime {runtime:,}" in text and "are not churn" in text
        await pilot.press("8")
        await settle(pilot)
        assert table.row_count == min(moved, 500)
