"""The app's one kept function diff screen (``open_function_diff``, issue 30): pairs opened in
a row each show their own diff, title and status on the same screen, starting as a new screen
does (side by side, Raw WASM, whatever the last one was toggled to), the same text and
screenshot as a new screen of that pair; back returns where it was each time."""

from __future__ import annotations

import asyncio

from kbtool.tui.screens.code_diff import KEPT, FunctionDiffScreen, open_function_diff
from kbtool.tui.screens.diff import DiffScreen
from tests.support.codefixtures import code_kb_fixture  # noqa: F401  (fixture)
from tests.support.tui import make_app, screen_text, settle


def _seen(app) -> dict:
    screen = app.screen
    assert isinstance(screen, FunctionDiffScreen)
    text = screen_text(app)
    return {
        "screen": screen,
        "title": text.splitlines()[0],
        "text": text,
        "svg": app.export_screenshot(),
    }


def test_pairs_in_a_row_on_the_kept_function_diff_screen(code_kb):
    async def main():
        app = make_app(code_kb)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            await pilot.press("d")
            await settle(pilot)
            await pilot.press("enter")  # the changelog's modified row: the kept screen
            await settle(pilot)
            first = _seen(app)
            await pilot.press("u", "w")  # toggled: the next pair starts as a new screen does
            await settle(pilot)
            await pilot.press("escape")
            await settle(pilot)
            back1 = type(app.screen)
            open_function_diff(app, 1, 2, 2, 2)
            await settle(pilot)
            second = _seen(app)
            await pilot.press("escape")
            await settle(pilot)
            open_function_diff(app, 1, 4, 2, 4)
            await settle(pilot)
            third = _seen(app)
            await pilot.press("escape")
            await settle(pilot)
            back3 = type(app.screen)
            shots = []
            for pair in ((1, 2, 2, 2), (1, 4, 2, 4)):
                app.push_screen(FunctionDiffScreen(*pair))
                await settle(pilot)
                shots.append(_seen(app))
                await pilot.press("escape")
                await settle(pilot)
            return app.get_screen(KEPT), first, back1, second, third, back3, shots

    kept, first, back1, second, third, back3, (fresh2, fresh4) = asyncio.run(main())
    assert first["screen"] is kept and second["screen"] is kept and third["screen"] is kept
    assert back1 is DiffScreen and back3 is DiffScreen
    assert "#2 → v2 #2" in second["title"] and "#4 → v2 #4" in third["title"]
    assert "i32.const 200" in third["text"] and "Raw WASM · side by side" in third["title"]
    for key in ("title", "text", "svg"):
        assert second[key] == fresh2[key], key
        assert third[key] == fresh4[key], key
        assert first[key] == third[key], key
