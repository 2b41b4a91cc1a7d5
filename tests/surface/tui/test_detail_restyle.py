"""A detail screen first shown just after its mount is not restyled by Textual's resume (its
widgets were styled as they were registered): a later detail open looks exactly as the app's
first one (restyled as Textual does), and one shown again after a theme change follows it."""

from __future__ import annotations

import asyncio

from tests.support.tui import make_app, settle


def test_a_later_detail_open_looks_as_the_first(tui_kb):
    async def main():
        app = make_app(tui_kb)
        shots = []
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            for _ in range(2):
                app.open_detail(2, 10)
                await settle(pilot)
                shots.append(app.export_screenshot())
                await pilot.press("escape")
                await settle(pilot)
            app.open_detail(2, 10)
            await settle(pilot)
            app.open_detail(1, 9)  # covers the one under it
            await settle(pilot)
            await pilot.press("escape")
            await pilot.press("t")  # the other theme, with a detail screen shown again
            await settle(pilot)
            shots.append(app.export_screenshot())
            await pilot.press("escape")
            await settle(pilot)
            app.open_detail(2, 10)
            await settle(pilot)
            shots.append(app.export_screenshot())
        return shots

    first, second, themed, themed_new = asyncio.run(main())
    assert second == first
    assert themed == themed_new and themed != first
