"""The TUI suggestions screen: list (escaped), Enter accepts through the gate, d dismisses."""

from __future__ import annotations

import pytest

from kbtool.kb import queries, store
from kbtool.kb.db import open_ro, open_rw
from kbtool.tui.app import KbApp
from kbtool.tui.screens.suggestions import SuggestionsScreen

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _seed(db) -> list[dict]:
    conn = open_rw(db, create=False)
    rows = [f for f in queries.list_functions(conn, 2) if f["name"] is None][:3]
    for k, f in enumerate(rows):
        store.save_suggestion(
            conn,
            {
                "version_id": 2,
                "stable_id": f["stable_id"],
                "func_index": f["index"],
                "name": ["parse_frame", "read_block", "evil\x1b[2Jname"][k],
                "confidence": [0.45, 0.4, 0.2][k],
                "backend": "openai",
                "model": "m",
                "rule": "llm_agreed_bare",
                "source": "llm",
                "evidence": {"reasons": ["r"]},
            },
        )
    conn.close()
    return rows


def _app(db) -> KbApp:
    return KbApp(db, poll_seconds=None, blink=False, version_id=2)


async def test_suggestions_screen_accepts_and_dismisses_through_the_gate(demo_kb):
    rows = _seed(demo_kb)
    app = _app(demo_kb)
    async with app.run_test(size=(100, 24)) as pilot:
        await pilot.pause()
        await pilot.press("S")
        await pilot.pause()
        assert isinstance(app.screen, SuggestionsScreen)
        text = "\n".join(str(app.screen.query_one("#sugg-table").get_row_at(i)) for i in range(3))
        assert "parse_frame" in text and "\x1b" not in text
        await pilot.press("enter")  # the highest: parse_frame
        await pilot.pause()
        await pilot.press("d")  # then read_block
        await pilot.pause()
        assert len(app.screen._rows) == 1
    conn = open_ro(demo_kb)
    sym = queries.get_symbol(conn, rows[0]["stable_id"])
    assert sym["name"] == "parse_frame" and sym["provenance"] == "human" and sym["locked"]
    assert (
        queries.get_symbol(conn, rows[1]["stable_id"])["name"] is None
        if queries.get_symbol(conn, rows[1]["stable_id"])
        else True
    )
    assert queries.suggestions(conn, 2)["total"] == 1
    conn.close()


def test_suggestions_screen_snapshot(snap_compare, demo_kb):
    _seed(demo_kb)

    async def run(pilot):
        await pilot.pause()
        await pilot.press("S")
        await pilot.pause()

    assert snap_compare(_app(demo_kb), terminal_size=(80, 24), run_before=run)
