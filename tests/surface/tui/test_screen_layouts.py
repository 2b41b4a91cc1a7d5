"""A pushed screen is laid out once at the terminal's size (issue 30, point 1): Textual's own
Resize after a new screen's first layout (to the same size) no longer lays it out again, nor
every screen under it. A real resize still reaches every screen: after one, going back shows
the screen below at the new size."""

from __future__ import annotations

import pytest
from textual.screen import Screen

from kbtool.tui.screens.detail import DetailScreen
from kbtool.tui.screens.heatmap import HeatmapScreen
from tests.support.tui import make_app, screen_text, settle

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _count_layouts(monkeypatch) -> list[tuple[str, tuple[int, int]]]:
    """(screen class, size) of every layout Textual makes from now on."""
    seen: list[tuple[str, tuple[int, int]]] = []
    real = Screen._refresh_layout

    def counted(self, size=None, scroll=False):
        seen.append((type(self).__name__, tuple(size or self.outer_size)))
        return real(self, size, scroll)

    monkeypatch.setattr(Screen, "_refresh_layout", counted)
    return seen


async def test_a_pushed_screen_is_laid_out_once(demo_kb, monkeypatch):
    app = make_app(demo_kb)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, HeatmapScreen)
        seen = _count_layouts(monkeypatch)
        app.open_detail(2, 40)
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        assert "annotation" in screen_text(app)
        assert ("DetailScreen", (100, 30)) in seen
        below = [s for s in seen if s[0] != "DetailScreen"]
        assert below == [], f"screens under the detail laid out again: {below}"


async def test_a_resize_under_a_screen_reaches_the_screens_below(demo_kb):
    app = make_app(demo_kb)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        app.open_detail(2, 40)
        await settle(pilot)
        await pilot.resize_terminal(90, 26)
        await settle(pilot)
        assert app.screen.size == (90, 26)
        assert max(len(line) for line in screen_text(app).split("\n")) == 90
        app.pop_screen()
        await settle(pilot)
        heatmap = app.screen
        assert isinstance(heatmap, HeatmapScreen)
        assert heatmap.size == (90, 26)
        assert heatmap._compositor.size == (90, 26)
        lines = screen_text(app).split("\n")
        assert len(lines) == 26 and max(len(line) for line in lines) == 90
