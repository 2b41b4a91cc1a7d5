"""The TUI code screen's third view, Cleaned C (``kbtool deep``), and the understanding shown
above the code; driven with Pilot on the two-release KB of tests/support/codefixtures.py; one snapshot.
"""

from __future__ import annotations

import asyncio
import shutil

import pytest

from kbtool.kb import queries, store
from kbtool.kb.db import open_rw
from kbtool.tui.screens.code import CodeScreen
from tests.support.codefixtures import code_kb_fixture  # noqa: F401  (fixture)
from tests.support.tui import make_app, screen_text, settle

HOSTILE = "reads </script><b>x</b> [bold red]markup[/] and \x1b[31mred"
CLEAN_C = "int32_t main_cleaned(int32_t count) {\n  return greet(helper(count) + 100);\n}\n"


@pytest.fixture()
def deep_kb(code_kb, tmp_path):
    """A copy of the code KB where function 4 of version 1 has a deep-analysis record."""
    db = tmp_path / "kb.db"
    shutil.copy(code_kb, db)
    conn = open_rw(db)
    sid = queries.get_function(conn, 1, 4)["stable_id"]
    store.upsert_analysis(
        conn,
        {
            "stable_id": sid,
            "version_id": 1,
            "func_index": 4,
            "raw_c": "",
            "clean_c": CLEAN_C,
            "understanding": "Adds 100 to the helper's result and greets it; " + HOSTILE,
            "rename_map": {"p0": "count"},
            "status": "done",
            "confidence": 0.62,
            "backend": "offline",
            "model": None,
            "updated_at": "2026-01-15T12:00:00Z",
        },
    )
    conn.commit()
    conn.close()
    return db


def drive(db, steps, size=(110, 30)):
    async def main():
        app = make_app(db)
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            return await steps(app, pilot)

    return asyncio.run(main())


async def press(pilot, *keys: str) -> None:
    await pilot.press(*keys)
    await settle(pilot)


def test_v_cycles_wasm_c_cleaned(deep_kb):
    async def steps(app, pilot):
        app.push_screen(CodeScreen(1, 4, "wasm"))
        await settle(pilot)
        texts = [screen_text(app)]
        for _ in range(3):
            await press(pilot, "v")
            texts.append(screen_text(app))
        return texts

    wasm, c, clean, back = drive(deep_kb, steps)
    assert "Raw WASM" in wasm and "i32.const 100" in wasm
    assert "int32_t main_4(int32_t p0) {" in c
    assert "Cleaned C" in clean and "int32_t main_cleaned(int32_t count) {" in clean
    assert "return greet(helper(count) + 100);" in clean
    assert back == wasm
    for text in (wasm, c, clean):  # the understanding is shown above the code, literally
        assert "Adds 100 to the helper's result" in text and "confidence 0.62" in text
        assert "</script><b>x</b>" in text and "markup[/]" in text and "\x1b" not in text


def test_cleaned_view_without_deep_is_a_hint(code_kb):
    async def steps(app, pilot):
        app.push_screen(CodeScreen(1, 4, "c"))
        await settle(pilot)
        await press(pilot, "v")
        return screen_text(app)

    text = drive(code_kb, steps)
    assert "Cleaned C" in text and "kbtool deep 1 -f 4" in text
    assert "confidence" not in text  # no understanding box


@pytest.fixture(autouse=True)
def _no_textual_devtools(monkeypatch):
    monkeypatch.delenv("TEXTUAL", raising=False)


def test_snapshot_code_cleaned(snap_compare, deep_kb, monkeypatch):
    monkeypatch.setenv("KBTOOL_FROZEN_TIME", "2026-01-15T12:00:00.000000Z")

    async def run(pilot) -> None:
        await settle(pilot)
        pilot.app.push_screen(CodeScreen(1, 4, "clean"))
        await settle(pilot)

    assert snap_compare(make_app(deep_kb), terminal_size=(100, 24), run_before=run)
