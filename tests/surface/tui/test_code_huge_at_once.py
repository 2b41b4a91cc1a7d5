"""A huge function opened again on the app's kept code screen (issue 30): its first screen
and C are held by this process, so it is read before the screen is shown (its first frame
has the code, no "loading…" frame), its links and (Raw WASM) the rest by pages come after;
what it shows is what a new screen of it shows, and the whole listing by pages is the
function's whole disassembly."""

from __future__ import annotations

import asyncio

from kbtool.kb.db import open_ro
from kbtool.render.code import WASM
from kbtool.services import code
from kbtool.tui.screens.code import CodeScreen, open_code
from kbtool.tui.widgets.code_view import CodeView
from tests.support.codefixtures import BIG_REPEAT, code_kb_fixture  # noqa: F401  (fixture)
from tests.support.tui import make_app, screen_text, settle, until

BIG = 5
TOTAL = 4 * BIG_REPEAT + 3  # the header, 4 instructions per repeat, two more


def _huge(monkeypatch) -> None:
    monkeypatch.setattr(code, "HUGE_INSTRUCTIONS", 1_000)
    monkeypatch.setattr(code, "FIRST_SCREEN", 200)
    code.clear_cache()


def _seen(app) -> dict:
    screen = app.screen
    view = screen.query_one("#code-view", CodeView)
    return {
        "lines": [view.render_fn(i).plain for i in range(min(view.count, 300))],
        "count": view.count,
        "text": screen_text(app),
        "svg": app.export_screenshot(),
    }


async def _shown(pilot, screen) -> None:
    """Until the screen has its links (a huge function's come after its code)."""
    await until(pilot, lambda: screen.links is not None and screen.code is not None)
    await settle(pilot)


def test_a_huge_function_held_is_read_before_the_kept_screen_is_shown(code_kb, monkeypatch):
    _huge(monkeypatch)

    async def main():
        app = make_app(code_kb)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            first = open_code(app, 1, BIG)  # read on the worker, its C lifted after
            assert first._shown is None
            await until(pilot, lambda: first.code is not None and not first.code.get("c_pending"))
            await _shown(pilot, first)
            was = _seen(app)
            await pilot.press("escape")
            await settle(pilot)
            again = open_code(app, 1, BIG)  # held now: read before it is shown
            code_now = again.code or {}
            at_once = (again is first, again._shown, again.links, code_now.get("c_pending", 0))
            await _shown(pilot, again)
            kept = _seen(app)
            await pilot.press("escape")
            await settle(pilot)
            fresh = CodeScreen(1, BIG)
            app.push_screen(fresh)
            await _shown(pilot, fresh)
            return was, at_once, kept, _seen(app)

    was, at_once, kept, fresh = asyncio.run(main())
    assert at_once == (True, (BIG, "c"), None, 0)  # the C on its first frame; links after
    assert "callers (" in kept["text"] and "lifting C" not in kept["text"]
    for key in ("lines", "count", "text", "svg"):
        assert kept[key] == was[key] == fresh[key], key


def test_raw_wasm_of_a_huge_function_held_pages_to_its_end(code_kb, monkeypatch):
    conn = open_ro(code_kb)
    try:
        whole = code.function_code(conn, 1, BIG)[0]["mnemonics"].splitlines()
    finally:
        conn.close()
    assert len(whole) == TOTAL
    _huge(monkeypatch)

    async def main():
        app = make_app(code_kb)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            first = open_code(app, 1, BIG)
            await until(pilot, lambda: first.code is not None and not first.code.get("c_pending"))
            await _shown(pilot, first)
            await pilot.press("escape")
            await settle(pilot)
            screen = open_code(app, 1, BIG, WASM)  # held: its first screen at once
            at_once = screen._shown
            await until(pilot, lambda: screen._pages is not None)  # the rest after it
            await _shown(pilot, screen)
            kept = _seen(app)
            pages = screen._pages
            lines = []
            for i in range(TOTAL):  # every line the view can show, read by pages
                for _ in range(100):
                    line = pages.line(i)
                    if line is not None:
                        break
                    await settle(pilot)
                lines.append(line)
            await pilot.press("escape")
            await settle(pilot)
            fresh = CodeScreen(1, BIG, WASM)
            app.push_screen(fresh)
            await until(pilot, lambda: fresh._pages is not None)
            await _shown(pilot, fresh)
            return at_once, kept, lines, _seen(app)

    at_once, kept, lines, fresh = asyncio.run(main())
    assert at_once == (BIG, WASM)
    assert lines == whole  # the whole listing, scrolled to its end
    assert "read by pages" in kept["text"]
    for key in ("lines", "count", "text", "svg"):
        assert kept[key] == fresh[key], key


def test_a_huge_function_of_a_prepared_version_first_shows_its_first_screen_at_once(
    code_kb, monkeypatch
):
    """Not held yet (its C neither kept nor lifted): its first screen is read before the
    screen is shown (bounded: ``FIRST_SCREEN`` instructions, no lift), labelled; its C is
    lifted after that frame and replaces it, its links come; then it equals a new screen."""
    _huge(monkeypatch)
    monkeypatch.setattr(code, "lifted_c", _slow(code.lifted_c))

    async def main():
        app = make_app(code_kb)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            open_code(app, 1, 4)  # the version prepared
            await settle(pilot)
            await pilot.press("escape")
            await settle(pilot)
            screen = open_code(app, 1, BIG)
            at_once = (screen._shown, bool(screen.code and screen.code.get("c_pending")))
            await pilot.pause()
            pending = screen_text(app)
            await until(pilot, lambda: screen.code is not None and not screen.code.get("c_pending"))
            await _shown(pilot, screen)
            kept = _seen(app)
            await pilot.press("escape")
            await settle(pilot)
            fresh = CodeScreen(1, BIG)
            app.push_screen(fresh)
            await until(pilot, lambda: fresh.code is not None and not fresh.code.get("c_pending"))
            await _shown(pilot, fresh)
            return at_once, pending, kept, _seen(app)

    at_once, pending, kept, fresh = asyncio.run(main())
    assert at_once == ((BIG, "pending"), True)
    assert "lifting C" in pending and "local.get" in pending
    assert "lifting C" not in kept["text"] and "callers (" in kept["text"]
    for key in ("lines", "count", "text", "svg"):
        assert kept[key] == fresh[key], key


def test_a_long_function_held_is_read_before_the_kept_screen_is_shown(code_kb, monkeypatch):
    """Longer than the short limit, not huge: lifted on the worker the first time; its
    whole answer held, the next open reads it before the screen is shown."""
    monkeypatch.setattr(code, "HUGE_INSTRUCTIONS", 1_000_000)
    code.clear_cache()

    async def main():
        app = make_app(code_kb)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            open_code(app, 1, 4)  # the version prepared
            await settle(pilot)
            await pilot.press("escape")
            await settle(pilot)
            first = open_code(app, 1, BIG)  # long: lifted on the worker
            on_push = first._shown
            await _shown(pilot, first)
            was = _seen(app)
            await pilot.press("escape")
            await settle(pilot)
            again = open_code(app, 1, BIG)
            at_once = again._shown
            await _shown(pilot, again)
            return on_push, was, at_once, _seen(app)

    on_push, was, at_once, kept = asyncio.run(main())
    assert on_push is None and at_once == (BIG, "c")
    for key in ("lines", "count", "text", "svg"):
        assert kept[key] == was[key], key


def _slow(real):
    """The lifter, a little later (its C comes after the first frame, whatever the machine)."""
    import time

    def held(conn, vid, idx):
        time.sleep(0.2)
        return real(conn, vid, idx)

    return held


def test_a_new_code_screen_of_a_prepared_version_is_read_as_it_is_mounted(code_kb, monkeypatch):
    """A new screen (the app's first code screen, a call followed from the kept one) of a
    prepared version reads a short function as it is mounted, before its first frame: no
    worker read (``reload``); it shows what a screen read by the worker shows."""
    reloads: list[int] = []
    real = CodeScreen.reload

    def spy(self) -> None:
        reloads.append(self.index)
        real(self)

    monkeypatch.setattr(CodeScreen, "reload", spy)
    code.clear_cache()

    async def main():
        app = make_app(code_kb)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            app.push_screen(CodeScreen(1, 2))  # the version not prepared: the worker reads it
            await settle(pilot)
            by_worker = _seen(app)
            await pilot.press("escape")
            await settle(pilot)
            app.push_screen(CodeScreen(1, 2))  # prepared now
            await settle(pilot)
            return list(reloads), by_worker, _seen(app)

    reloads_seen, by_worker, at_mount = asyncio.run(main())
    assert reloads_seen == [2]  # only the first screen went to the worker
    assert "callers (1)" in at_mount["text"]
    for key in ("lines", "count", "text", "svg"):
        assert at_mount[key] == by_worker[key], key
