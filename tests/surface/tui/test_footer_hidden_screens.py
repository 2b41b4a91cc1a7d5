"""The footer under a detail open (issue 30): the heatmap's footer (grouped move keys) is not
rebuilt while a detail covers it nor when it is shown again; the detail's keys are Textual's.
What is shown is the same."""

from __future__ import annotations

import pytest
from textual.widgets._footer import FooterKey

from kbtool.tui.screens.detail import DetailScreen
from kbtool.tui.screens.heatmap import HeatmapScreen
from kbtool.tui.widgets.diff_footer import DiffFooter
from tests.support.tui import make_app, screen_text, settle

SIZE = (100, 30)
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def footer_line(app) -> str:
    return screen_text(app).splitlines()[-1]


async def test_the_heatmap_footer_is_not_rebuilt_under_a_detail(tui_kb):
    app = make_app(tui_kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        heatmap = app.screen
        assert isinstance(heatmap, HeatmapScreen)
        heat_footer = heatmap.query_one(DiffFooter)
        heat_keys, heat_builds = footer_line(app), heat_footer.recomposed
        assert heat_builds == 1  # its keys, made once the grid had the focus
        assert heat_footer.query("KeyGroup")  # the moves are a group
        for _ in range(3):
            await pilot.press("l")  # a move refreshes the bindings: same keys, no rebuild
            await settle(pilot)
            await pilot.press("enter")
            await settle(pilot)
            detail = app.screen
            assert isinstance(detail, DetailScreen)
            line = footer_line(app)
            for key in ("back", "history", "rename", "code", "search", "quit"):
                assert key in line, key
            rename = next(k for k in detail.query(FooterKey) if k.action == "rename")
            assert not rename.has_class("-disabled")
            await pilot.press("escape")
            await settle(pilot)
            assert app.screen is heatmap
            assert heat_footer.recomposed == heat_builds  # not while hidden, nor after
            assert footer_line(app) == heat_keys
