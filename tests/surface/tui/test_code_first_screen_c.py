"""A huge function's C view never waits for the lifter (issue 30, point 2): the TUI shows the
first screen of its disassembly at once, labelled "lifting C…", answers keys meanwhile, and
the C replaces it (from its first line) when lifted; the web's C windows are the lifted C's
lines, kept per prepared version (a rename shows in the next window)."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.gate import upsert_symbol
from kbtool.services import code
from tests.support.codefixtures import BIG_REPEAT, code_kb_fixture  # noqa: F401  (fixture)

HELPER_A, MAIN, BIG = 2, 4, 5


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_first_screen_without_the_c_then_the_c(code_kb) -> None:
    conn = open_ro(code_kb)
    code.clear_cache()
    try:
        d, records = code.function_code(conn, 1, BIG, max_lines=100, lift=False)
        assert d["partial"] and d["c_pending"] and d["lifted_c"] == ""
        assert len(records.instrs) == 100
        c, truncated, reason = code.lifted_c(conn, 1, BIG)
        # lifted once, a first screen comes with its C
        again = code.function_code(conn, 1, BIG, max_lines=100, lift=False)[0]
        assert again["partial"] and "c_pending" not in again and again["lifted_c"] == c
        whole = code.disassembly(conn, 1, BIG)
        assert (c, truncated, reason) == (whole["lifted_c"], whole["truncated"], whole["reason"])
        assert "c_pending" not in whole and not whole["partial"]
        # a small function answers whole whatever lift says
        assert code.function_code(conn, 1, MAIN, max_lines=100, lift=False)[0]["lifted_c"]
    finally:
        conn.close()


def test_c_windows_follow_a_rename(code_kb, tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    shutil.copy(code_kb, db)
    conn = open_ro(db)
    code.clear_cache()
    try:
        before = code.code_window(conn, 1, MAIN, kind="c", limit=200)["lines"]
        assert not any("renamed_helper" in line for line in before)
        sid = code.code_module(conn, 1).check(HELPER_A).stable_id
        w = open_rw(db)
        try:
            assert upsert_symbol(
                w, sid, "renamed_helper", provenance="human", confidence=1.0, actor="human:test"
            )["written"]
        finally:
            w.close()
        after = code.code_window(conn, 1, MAIN, kind="c", limit=200)["lines"]
        assert any("renamed_helper" in line for line in after)
        assert after == code.disassembly(conn, 1, MAIN)["lifted_c"].splitlines()
    finally:
        conn.close()


@pytest.mark.anyio
async def test_tui_c_view_shows_the_disassembly_while_the_c_is_lifted(code_kb, monkeypatch) -> None:
    from kbtool.tui.screens.code import CodeScreen, LinesView
    from tests.support.tui import make_app, screen_text, settle, until

    monkeypatch.setattr(code, "HUGE_INSTRUCTIONS", 1_000)
    monkeypatch.setattr(code, "FIRST_SCREEN", 200)
    code.clear_cache()
    gate, asked = threading.Event(), threading.Event()
    real = code.lifted_c

    def held(conn, vid, idx):  # the real lifter, held until the test has looked
        asked.set()
        assert gate.wait(30), "the test never released the lifter"
        return real(conn, vid, idx)

    monkeypatch.setattr(code, "lifted_c", held)
    conn = open_ro(code_kb)
    try:
        c_lines = code.disassembly(conn, 1, BIG)["lifted_c"].splitlines()
    finally:
        conn.close()
    code.clear_cache()
    app = make_app(code_kb)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        screen = CodeScreen(1, BIG)  # the C view
        app.push_screen(screen)
        await until(pilot, lambda: screen.code is not None and asked.is_set())
        assert asked.is_set() and screen.code is not None
        view = screen.query_one("#code-view", LinesView)
        # the disassembly's first screen, labelled, while the lifter is held
        assert view.count == 1 + 200 + 1
        assert "local.get" in view.render_fn(1).plain
        assert "lifting C" in screen_text(app)
        await pilot.press("pagedown")  # keys are answered meanwhile
        await pilot.pause()
        assert view.cursor > 0 and not gate.is_set()
        gate.set()
        await until(pilot, lambda: not screen.code.get("c_pending"))
        await settle(pilot)
        assert view.count == len(c_lines) and view.cursor == 0  # the C, from its first line
        assert [view.render_fn(i).plain for i in range(view.count)] == c_lines
        text = screen_text(app)
        assert "lifting C" not in text and " C " in text
        assert view.count != 4 * BIG_REPEAT + 3  # not the disassembly
        assert screen.links is not None and "callers (" in screen_text(app)  # after the code
        # reading the C needs no whole disassembly: it is made when Raw WASM is asked for
        assert screen.code["partial"]
        await pilot.press("w")
        await until(pilot, lambda: screen._pages is not None)  # the rest, by pages
        await settle(pilot)
        assert view.count == 4 * BIG_REPEAT + 3 and "Raw WASM" in screen_text(app)


@pytest.mark.anyio
async def test_detail_prepares_the_version_for_code(code_kb) -> None:
    """Opening a function's detail prepares its version for the code views in the background,
    so the code screen (`c`) that usually follows does not wait for the preparation."""
    from kbtool.tui.screens.detail import DetailScreen
    from tests.support.tui import make_app, settle

    code.clear_cache()
    app = make_app(code_kb)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        conn = open_ro(code_kb)
        try:
            assert not code.is_cached(conn, 2)
            app.open_detail(2, MAIN)
            await settle(pilot)
            assert isinstance(app.screen, DetailScreen)
            assert app.code_prefetch is not None
            app.code_prefetch.result(timeout=60)
            assert code.is_cached(conn, 2)
        finally:
            conn.close()
