"""The TUI versions screen groups versions by program (a header row per program)."""

from __future__ import annotations

import pytest

from kbtool.kb.db import open_rw
from kbtool.services.ingest import ingest_file
from kbtool.tui.screens.heatmap import HeatmapScreen
from kbtool.tui.screens.versions import VersionsScreen
from tests.support.paths import corpus_file
from tests.support.tui import make_app, screen_text, settle

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_versions_screen_groups_by_program(demo_kb):
    conn = open_rw(demo_kb)
    ingest_file(conn, corpus_file("release/sql.js-1.10.3.sql-wasm.wasm"), label="sql-1.10")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    app = make_app(demo_kb)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        assert isinstance(app.screen, VersionsScreen)
        lines = screen_text(app).splitlines()
        assert "2 programs" in lines[0]
        row = {
            name: next(i for i, ln in enumerate(lines) if name in ln)
            for name in ("▾ zstd", "zstd-1.5.5", "zstd-1.5.6", "▾ sql.js", "sql-1.10")
        }
        assert (
            row["▾ zstd"]
            < row["zstd-1.5.5"]
            < row["zstd-1.5.6"]
            < row["▾ sql.js"]
            < row["sql-1.10"]
        )
        await pilot.press("end")  # the last row: sql-1.10; its info names program and parent
        await settle(pilot)
        assert "first of its lineage" in screen_text(app) and "sql.js" in screen_text(app)
        await pilot.press("up", "up")  # zstd-1.5.6
        await settle(pilot)
        assert "parent: version 1" in screen_text(app)
        await pilot.press("up", "up", "enter")  # the zstd header row opens nothing
        await settle(pilot)
        assert isinstance(app.screen, VersionsScreen)
        await pilot.press("down", "enter")
        await settle(pilot)
        assert isinstance(app.screen, HeatmapScreen) and app.screen.version_id == 1
