"""The heatmap screen first shown just after its mount is not restyled by Textual's resume
(its widgets were styled as they were registered, issue 30): every widget's styles and the
screen are exactly what a restyle gives, at start and for a heatmap opened later, in both
themes; a heatmap shown again after a theme change follows it."""

from __future__ import annotations

import asyncio

from kbtool.tui.screens.heatmap import HeatmapScreen
from tests.support.tui import make_app, settle


def _styles(screen) -> list[tuple]:
    return [
        (type(n).__name__, n.id, tuple(sorted(n.classes)), repr(n.styles.base.get_rules()))
        for n in screen.walk_children(with_self=True)
    ]


async def _restyled_equal(app, pilot) -> None:
    screen = app.screen
    assert isinstance(screen, HeatmapScreen)
    before, shot = _styles(screen), app.export_screenshot()
    screen.update_node_styles(animate=False)  # what Textual's resume would have done
    await settle(pilot)
    assert _styles(screen) == before
    assert app.export_screenshot() == shot


def test_a_first_heatmap_is_styled_as_a_restyle_gives(tui_kb):
    async def main():
        app = make_app(tui_kb)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await _restyled_equal(app, pilot)  # the start's
            await pilot.press("t")  # the light theme, then a heatmap opened in it
            await settle(pilot)
            await pilot.press("v")
            await settle(pilot)
            app.open_heatmap(1)
            await settle(pilot)
            await _restyled_equal(app, pilot)
            shown = app.export_screenshot()
            app.open_detail(1, 1)  # covered, the theme changed, shown again: restyled
            await settle(pilot)
            await pilot.press("t")
            await settle(pilot)
            await pilot.press("escape")
            await settle(pilot)
            assert isinstance(app.screen, HeatmapScreen)
            assert app.export_screenshot() != shown
            await _restyled_equal(app, pilot)

    asyncio.run(main())
