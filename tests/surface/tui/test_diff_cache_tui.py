"""The TUI's diff screen asks the process's diff cache: a pair shown again is not recomputed."""

from __future__ import annotations

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_rw
from kbtool.kb.gate import upsert_symbol
from kbtool.services.diff.cache import DIFF_CACHE
from kbtool.tui.screens.diff import DiffScreen
from tests.support.diff_kb import kb  # noqa: F401  (the two-version fixture KB)
from tests.support.tui import make_app, screen_text, settle

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_swapping_back_and_forth_computes_each_pair_once(kb):  # noqa: F811
    DIFF_CACHE.clear()
    computed = DIFF_CACHE.computed
    app = make_app(kb)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("d")  # 1 -> 2: the stored ingest pair
        await settle(pilot)
        assert isinstance(app.screen, DiffScreen)
        assert DIFF_CACHE.computed == computed
        for _ in range(4):  # 2 -> 1 (computed once), 1 -> 2, 2 -> 1, 1 -> 2
            await pilot.press("x")
            await settle(pilot)
        assert DIFF_CACHE.computed == computed + 1
        await pilot.press("c")  # the changelog came from the cache too
        await settle(pilot)
        assert "offset 348 -> 356" in screen_text(app)
        conn = open_rw(kb)
        sid = queries.list_functions(conn, 2)[0]["stable_id"]
        upsert_symbol(
            conn, sid, "named_in_the_tui_test", provenance="human", confidence=1.0, actor="test"
        )
        conn.close()
        kept = DIFF_CACHE.disk_hits + DIFF_CACHE.relabelled
        await pilot.press("x")  # 2 -> 1 again: the names changed, joined into the kept pairing
        await settle(pilot)
        assert DIFF_CACHE.computed == computed + 1
        assert DIFF_CACHE.disk_hits + DIFF_CACHE.relabelled == kept + 1
        assert "named_in_the_tui_test" in screen_text(app)
