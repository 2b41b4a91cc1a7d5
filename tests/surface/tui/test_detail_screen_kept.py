"""The app's one kept detail screen (``open_detail``, issue 30): two functions opened in a row
from the heatmap each show their own record, title and links on the same screen (nothing of
the first left, the same text and screenshot as a new screen of the second), back returns
where it was each time; a caller followed from it opens a new screen over it, and back returns
to the kept one unchanged."""

from __future__ import annotations

import asyncio

from kbtool.tui.screens.detail import KEPT, DetailScreen
from tests.support.tui import make_app, screen_text, settle


def _seen(app) -> dict:
    screen = app.screen
    assert isinstance(screen, DetailScreen)
    text = screen_text(app)
    return {
        "screen": screen,
        "index": screen.index,
        "title": text.splitlines()[0],
        "text": text,
        "svg": app.export_screenshot(),
    }


def test_two_functions_in_a_row_on_the_kept_detail_screen(tui_kb):
    async def main():
        app = make_app(tui_kb)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            under = type(app.screen)
            app.open_detail(2, 10)
            await settle(pilot)
            first = _seen(app)
            await pilot.press("escape")
            await settle(pilot)
            back1 = type(app.screen)
            app.open_detail(1, 9)
            await settle(pilot)
            second = _seen(app)
            # a new screen over the kept one (it is open), then back to it unchanged
            app.open_detail(2, 10)
            await settle(pilot)
            over = _seen(app)
            await pilot.press("escape")
            await settle(pilot)
            again = _seen(app)
            await pilot.press("escape")
            await settle(pilot)
            back2 = type(app.screen)
            # the same function on a new screen: what the kept one must show
            app.push_screen(DetailScreen(1, 9))
            await settle(pilot)
            fresh = _seen(app)
            await pilot.press("escape")
            await settle(pilot)
            return app.get_screen(KEPT), under, first, back1, second, over, again, back2, fresh

    kept, under, first, back1, second, over, again, back2, fresh = asyncio.run(main())
    assert first["screen"] is kept and second["screen"] is kept  # composed once
    assert over["screen"] is not kept and again["screen"] is kept
    assert first["index"] == 10 and second["index"] == 9
    assert "#10" in first["title"] and "#9" in second["title"] and "#10" not in second["title"]
    assert back1 is under and back2 is under
    assert over["text"] == first["text"]
    for key in ("index", "title", "text", "svg"):
        assert second[key] == fresh[key], key
        assert again[key] == second[key], key


def test_the_kept_detail_screen_follows_a_theme_changed_while_closed(tui_kb):
    async def main():
        app = make_app(tui_kb)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            app.open_detail(2, 10)
            await settle(pilot)
            await pilot.press("escape")
            await pilot.press("t")  # the other theme while the kept screen is closed
            await settle(pilot)
            app.open_detail(1, 9)
            await settle(pilot)
            kept = _seen(app)
            await pilot.press("escape")
            await settle(pilot)
            app.push_screen(DetailScreen(1, 9))
            await settle(pilot)
            fresh = _seen(app)
        return kept, fresh

    kept, fresh = asyncio.run(main())
    assert kept["svg"] == fresh["svg"]
