"""The Raw WASM of a huge function by pages (issue 30 point 2): its first screen at once, then
the rest read a page at a time as one scrolls, the same lines as the whole listing, a bounded
number of pages kept, and no whole listing made."""

from __future__ import annotations

import pytest

from kbtool.kb.db import open_ro
from kbtool.render.code import WASM
from kbtool.services import code, code_function
from kbtool.tui.widgets import listing_pages
from tests.support.codefixtures import BIG_REPEAT, code_kb_fixture  # noqa: F401  (fixture)
from tests.support.tui import make_app, screen_text, settle, until

BIG = 5
TOTAL = 4 * BIG_REPEAT + 3  # the header, 4 instructions per repeat, two more


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _whole(code_kb) -> tuple[list[str], object]:
    conn = open_ro(code_kb)
    try:
        out, rec = code.function_code(conn, 1, BIG)
        return out["mnemonics"].splitlines(), rec
    finally:
        conn.close()
        code.clear_cache()


async def _paged(app, pilot, screen) -> None:
    app.push_screen(screen)
    await until(pilot, lambda: screen._pages is not None)
    await settle(pilot)
    assert screen._pages is not None, "the rest of the disassembly never came"


@pytest.mark.anyio
async def test_raw_wasm_of_a_huge_function_pages(code_kb, monkeypatch) -> None:
    from kbtool.tui.screens.code import CodeScreen, LinesView

    whole, rec = _whole(code_kb)
    assert len(whole) == TOTAL
    monkeypatch.setattr(code, "HUGE_INSTRUCTIONS", 1_000)
    monkeypatch.setattr(code, "FIRST_SCREEN", 200)
    monkeypatch.setattr(listing_pages, "KEPT", 3)
    cuts: list[int | None] = []
    real = code_function._records

    def spy(cm, func_index, max_lines=None):  # the whole listing is never made
        if func_index == BIG:
            cuts.append(max_lines)
        return real(cm, func_index, max_lines)

    monkeypatch.setattr(code_function, "_records", spy)
    app = make_app(code_kb)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = CodeScreen(1, BIG, WASM)
        await _paged(app, pilot, screen)
        view = screen.query_one("#code-view", LinesView)
        view.focus()
        assert view.count == TOTAL
        first = [view.render_fn(i).plain for i in range(view.size.height)]
        assert first == whole[: view.size.height]  # the first screen: the listing's first lines
        assert "read by pages" in screen_text(app) and "loading" not in screen_text(app)
        await pilot.press("G")  # to the end: its page is read, then drawn
        for _ in range(100):
            await settle(pilot)
            if "…" not in screen_text(app).splitlines()[-3]:
                break
        assert view.cursor == TOTAL - 1
        assert whole[-1].strip() in screen_text(app)  # the last line, on screen
        assert whole[-2].strip() in screen_text(app)
        pages = screen._pages
        for i in range(TOTAL):  # every line the view can show is the whole listing's
            for _ in range(100):
                line = pages.line(i)
                if line is not None:
                    break
                await settle(pilot)
            assert line == whole[i], i
            assert pages.pages_kept <= 3  # bounded: the least recently used pages go
        # the record under the cursor past the first screen is the listing's own
        n_head = TOTAL - len(rec.instrs)
        for _ in range(100):
            if pages.line(5_000) is not None:
                break
            await settle(pilot)
        view.cursor = 5_000
        assert screen.cursor_instr().offset == rec.instrs[5_000 - n_head].offset
        assert all(c is not None for c in cuts), cuts  # no whole listing: only cut ones


def test_listing_pages_ask_once_and_keep_a_bounded_number() -> None:
    asked: list[int] = []
    pages = listing_pages.ListingPages(5_000, ["head", "a"], {1: "rec-a"}, asked.append)
    assert pages.line(0) == "head" and pages.instr(1) == "rec-a"
    assert asked == [0]  # near the first screen's end: the page after it is read ahead
    assert pages.line(2_500) is None and pages.line(2_501) is None
    assert asked == [0, 2_000]  # one read per page, however many lines ask
    pages.add(2_000, [f"l{i}" for i in range(2_000, 3_000)], {2_500: "rec"})
    assert pages.line(2_500) == "l2500" and pages.instr(2_500) == "rec"
    for start in range(3_000, 5_000 + listing_pages.PAGE * listing_pages.KEPT, 1_000):
        pages.add(start, ["x"], {})
    assert pages.pages_kept == listing_pages.KEPT and pages.line(2_500) is None


@pytest.mark.anyio
async def test_a_jump_past_the_first_screen_lands_on_its_line(code_kb, monkeypatch) -> None:
    """From the xrefs screen: an instruction past a huge function's first screen."""
    from kbtool.tui.screens.code import CodeScreen, LinesView

    whole, rec = _whole(code_kb)
    n_head = TOTAL - len(rec.instrs)
    monkeypatch.setattr(code, "HUGE_INSTRUCTIONS", 1_000)
    monkeypatch.setattr(code, "FIRST_SCREEN", 200)
    app = make_app(code_kb)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = CodeScreen(1, BIG, WASM)
        screen.at_offset = rec.instrs[7_777].offset
        await _paged(app, pilot, screen)
        view = screen.query_one("#code-view", LinesView)
        assert view.cursor == n_head + 7_777
        for _ in range(100):
            if screen._pages.line(view.cursor) is not None:
                break
            await settle(pilot)
        assert screen._pages.line(view.cursor) == whole[n_head + 7_777]
        assert screen.cursor_instr().offset == rec.instrs[7_777].offset
