"""The app's one kept code screen (``open_code``, issue 30): a second function opened from the
detail screen is shown on the same screen, with its own code, title and first line (nothing of
the first one left), and back returns where it was each time; a call followed from it opens a
new screen over it, and back returns to the kept one unchanged."""

from __future__ import annotations

import asyncio

from kbtool.tui.screens.code import KEPT, CodeScreen, open_code
from kbtool.tui.screens.detail import DetailScreen
from kbtool.tui.widgets.code_view import CodeView
from tests.support.codefixtures import code_kb_fixture  # noqa: F401  (fixture)
from tests.support.tui import make_app, screen_text, settle


async def _press(pilot, *keys: str) -> None:
    await pilot.press(*keys)
    await settle(pilot)


def _seen(app) -> dict:
    """What the code screen on top shows: its function, title line, first code line, text."""
    screen = app.screen
    assert isinstance(screen, CodeScreen)
    view = screen.query_one("#code-view", CodeView)
    text = screen_text(app)
    return {
        "screen": screen,
        "index": screen.index,
        "title": text.splitlines()[0],
        "first": view.render_fn(0).plain,
        "lines": view.count,
        "text": text,
        "svg": app.export_screenshot(),  # colours and styles too
    }


def test_two_functions_in_a_row_on_the_kept_screen(code_kb):
    async def main():
        app = make_app(code_kb)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            app.open_detail(1, 4)
            await settle(pilot)
            await _press(pilot, "c")
            first = _seen(app)
            await _press(pilot, "escape")
            back1 = (type(app.screen), getattr(app.screen, "index", None))
            await _press(pilot, "escape")
            app.open_detail(1, 2)
            await settle(pilot)
            await _press(pilot, "c")
            second = _seen(app)
            await _press(pilot, "escape")
            back2 = (type(app.screen), getattr(app.screen, "index", None))
            # the same function on a fresh screen: what the kept one must show
            await _press(pilot, "escape")
            app.push_screen(CodeScreen(1, 2))
            await settle(pilot)
            fresh = _seen(app)
            await _press(pilot, "escape")
            return app.get_screen(KEPT), first, back1, second, back2, fresh

    kept, first, back1, second, back2, fresh = asyncio.run(main())
    assert first["screen"] is kept and second["screen"] is kept  # composed once
    assert first["index"] == 4 and second["index"] == 2
    assert "#4" in first["title"] and "#2" in second["title"] and "#4" not in second["title"]
    assert first["first"].startswith("/* func[4] <main>") and "int32_t main_4(" in first["text"]
    assert second["first"].startswith("/* func[2]")
    assert "main_4" not in second["text"] and "callers (1)" in second["text"]
    assert back1 == (DetailScreen, 4) and back2 == (DetailScreen, 2)
    for key in ("index", "title", "first", "lines", "text", "svg"):
        assert second[key] == fresh[key], key


def test_the_kept_screen_follows_a_theme_changed_while_closed(code_kb):
    """Its styles are not computed again when it is shown again, unless what they depend on
    changed meanwhile (the theme here): then it looks as a new screen would."""

    async def main():
        app = make_app(code_kb)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            open_code(app, 1, 4)
            await settle(pilot)
            await _press(pilot, "escape")
            await _press(pilot, "t")  # the other theme
            open_code(app, 1, 2)
            await settle(pilot)
            kept = _seen(app)
            await _press(pilot, "escape")
            app.push_screen(CodeScreen(1, 2))
            await settle(pilot)
            return kept, _seen(app)

    kept, fresh = asyncio.run(main())
    assert kept["svg"] == fresh["svg"]


def test_a_call_followed_from_the_kept_screen_opens_another(code_kb):
    async def main():
        app = make_app(code_kb)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            kept = open_code(app, 1, 4, "wasm")
            await settle(pilot)
            before = _seen(app)
            await _press(pilot, "down", "down", "enter")  # line 3: call helper_a
            followed = _seen(app)
            await _press(pilot, "escape")
            back = _seen(app)
            cursor = kept.query_one("#code-view", CodeView).cursor
            return kept, before, followed, back, cursor

    kept, before, followed, back, cursor = asyncio.run(main())
    assert followed["screen"] is not kept and followed["index"] == 2
    assert "i32.mul" in followed["text"]
    assert back["screen"] is kept and back["index"] == 4
    assert back["first"] == before["first"] and back["title"] == before["title"]
    assert cursor == 2


def test_a_short_function_of_a_prepared_version_is_read_before_it_is_shown(code_kb):
    """Its first frame has the code (no "loading…" frame in between); the first open of the
    version (not prepared yet) is read on a worker, as is a function not shown (an import)."""

    async def main():
        app = make_app(code_kb)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            first = open_code(app, 1, 4)
            on_push = first._shown
            await settle(pilot)
            await _press(pilot, "escape")
            again = open_code(app, 1, 2)
            at_once = again._shown
            await settle(pilot)
            shown = _seen(app)
            await _press(pilot, "escape")
            open_code(app, 1, 0)  # an import: the worker's message
            await settle(pilot)
            return on_push, at_once, shown, screen_text(app)

    on_push, at_once, shown, imported = asyncio.run(main())
    assert on_push is None and at_once == (2, "c")
    assert shown["first"].startswith("/* func[2]") and "callers (1)" in shown["text"]
    assert "is an import (env.log): it has no code" in imported
