"""The TUI's code screen (Raw WASM / C) and per-function diff, driven with Pilot; two snapshots.

On the two-release module of tests/support/codefixtures.py (real bytes in the KB): open from the
detail screen (``c``) and from the diff screen (Enter on a modified row), toggle views,
follow calls, bad input, untrusted names shown literally, lazy drawing of a long function.
"""

from __future__ import annotations

import asyncio

import pytest

from kbtool.tui.screens.code import CodeScreen, FunctionDiffScreen, LinesView
from tests.support.codefixtures import (  # noqa: F401  (fixtures)
    BIG_REPEAT,
    HOSTILE_NAME,
    code_kb_fixture,
    code_kb_no_bytes_fixture,
)
from tests.support.tui import make_app, screen_text, settle

ESCAPED_NAME = HOSTILE_NAME.replace("\x1b", "\\x1b")


def drive(db, steps, size=(100, 30)):
    async def main():
        app = make_app(db)
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            return await steps(app, pilot)

    return asyncio.run(main())


async def press(pilot, *keys: str) -> None:
    await pilot.press(*keys)
    await settle(pilot)


def test_detail_opens_code_and_toggles(code_kb):
    async def steps(app, pilot):
        app.open_detail(1, 4)
        await settle(pilot)
        await press(pilot, "c")
        assert isinstance(app.screen, CodeScreen)
        c_text = screen_text(app)
        await press(pilot, "w")
        wasm_text = screen_text(app)
        await press(pilot, "w")
        return c_text, wasm_text, screen_text(app)

    c_text, wasm_text, again = drive(code_kb, steps)
    assert (
        "int32_t main_4(int32_t p0) {" in c_text
        and "+ 100" in c_text
        and "Raw WASM" not in c_text.split("\n")[0]
    )
    assert "call $greet" in wasm_text and "i32.const 100" in wasm_text and "Raw WASM" in wasm_text
    assert ESCAPED_NAME in wasm_text and "\x1b" not in wasm_text
    assert "callees (2)" in c_text and "#1 greet" in c_text
    assert again == c_text


def test_follow_a_call_and_the_links(code_kb):
    async def steps(app, pilot):
        app.push_screen(CodeScreen(1, 4, "wasm"))
        await settle(pilot)
        await press(pilot, "down", "down", "enter")  # line 3: call helper_a
        first = (app.screen.index, screen_text(app))
        await press(pilot, "escape")
        await press(pilot, "end", "enter")  # last line: end, no call
        no_call = app.screen.index
        await press(pilot, "o", "enter")  # the first callee link: greet
        return first, no_call, app.screen.index, screen_text(app)

    # wide enough for the string's label and its text on one line
    (idx, text), no_call, linked, greet = drive(code_kb, steps, size=(160, 30))
    assert idx == 2 and "i32.mul" in text and "callers (1)" in text and "#4 main" in text
    assert no_call == 4
    assert linked == 1 and "call $log" in greet and "</script><b>x</b>[bold red]markup[/]" in greet
    assert "\x1b" not in greet


def test_diff_enter_on_modified_row_opens_function_diff(code_kb):
    async def steps(app, pilot):
        await press(pilot, "d")
        await press(pilot, "enter")
        assert isinstance(app.screen, FunctionDiffScreen)
        side = screen_text(app)
        await press(pilot, "u")
        uni = screen_text(app)
        await press(pilot, "w")
        return side, uni, screen_text(app)

    side, uni, c_diff = drive(code_kb, steps)
    row = next(line for line in side.splitlines() if "i32.const 100" in line)
    assert "~" in row and "i32.const 200" in row  # paired, marked changed
    assert "2 changed (const 1, callee 1)" in side
    assert "-   i32.const 100" in uni and "+   i32.const 200" in uni
    assert "-   call $" + ESCAPED_NAME[1:] in uni or ESCAPED_NAME in uni
    assert "+  return greet(f3(p0) + 200);" in c_diff and "\x1b" not in side + uni + c_diff


BAD = [
    (lambda: CodeScreen(1, 0), "function 0 of version 1 is an import (env.log): it has no code"),
    (lambda: CodeScreen(1, 6), "version 1 has no function 6"),
    (lambda: CodeScreen(9, 1), "unknown version id 9"),
    (lambda: FunctionDiffScreen(1, 4, 9, 4), "unknown version id 9"),
]


def test_bad_input_is_a_message(code_kb):
    async def steps(app, pilot):
        texts = []
        for screen, _ in BAD:
            app.push_screen(screen())
            await settle(pilot)
            texts.append(screen_text(app))
            await press(pilot, "escape")
        return texts

    for text, (_, message) in zip(drive(code_kb, steps), BAD, strict=True):
        assert message in text


def test_bytes_missing_and_imports_from_detail(code_kb_no_bytes):
    async def steps(app, pilot):
        app.push_screen(CodeScreen(2, 1))
        await settle(pilot)
        missing = screen_text(app)
        await press(pilot, "escape")
        app.open_detail(1, 0)  # an import
        await settle(pilot)
        await press(pilot, "c")
        return missing, type(app.screen).__name__

    missing, after = drive(code_kb_no_bytes, steps)
    assert "module bytes of version 2 are not in the KB" in missing
    assert after == "DetailScreen"


def test_long_function_is_drawn_lazily(code_kb):
    async def steps(app, pilot):
        app.push_screen(CodeScreen(1, 5, "wasm"))
        await settle(pilot)
        view = app.screen.query_one("#code-view", LinesView)
        count = view.count
        await press(pilot, "pagedown", "pagedown", "end")
        return count, len(view._cache), view.cursor, screen_text(app)

    count, cached, cursor, text = drive(code_kb, steps, size=(100, 24))
    assert count == 4 * BIG_REPEAT + 3 and cursor == count - 1
    assert cached < 150  # only what was on screen was highlighted
    assert f"{count}  " in text and ": end" in text


# ---------------------------------------------------------------- snapshots


@pytest.fixture(autouse=True)
def _no_textual_devtools(monkeypatch):
    monkeypatch.delenv("TEXTUAL", raising=False)


def _open(screen):
    async def run(pilot) -> None:
        await settle(pilot)
        pilot.app.push_screen(screen)
        await settle(pilot)

    return run


def test_snapshot_code_wasm(snap_compare, code_kb):
    assert snap_compare(
        make_app(code_kb), terminal_size=(100, 24), run_before=_open(CodeScreen(1, 4, "wasm"))
    )


def test_snapshot_function_diff(snap_compare, code_kb):
    assert snap_compare(
        make_app(code_kb), terminal_size=(100, 24), run_before=_open(FunctionDiffScreen(1, 4, 2, 4))
    )


def test_live_rename_keeps_the_cursor(code_kb, tmp_path):
    import shutil

    from kbtool.kb import queries
    from kbtool.kb.db import open_rw
    from kbtool.kb.gate import upsert_symbol

    db = tmp_path / "kb.db"
    shutil.copy(code_kb, db)

    async def steps(app, pilot):
        app.push_screen(CodeScreen(1, 4, "wasm"))
        await settle(pilot)
        await press(pilot, "down", "down", "down")
        conn = open_rw(db)
        sid = queries.get_function(conn, 1, 1)["stable_id"]
        upsert_symbol(
            conn, sid, "say_hello", provenance="human", confidence=1.0, actor="human:test"
        )
        conn.close()
        assert app.poll_changes()
        await settle(pilot)
        return app.screen.query_one("#code-view", LinesView).cursor, screen_text(app)

    cursor, text = drive(db, steps)
    assert cursor == 3 and "call $say_hello" in text and "#1 say_hello" in text
