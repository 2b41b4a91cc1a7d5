"""One word for an undetected toolchain on every human surface; the API keeps null."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.render.text import UNKNOWN_TOOLCHAIN, toolchain_text
from tests.support.diff_kb import kb  # noqa: F401  (two versions, no toolchain detected)
from tests.support.tui import make_app, screen_text, settle


def _cli(db, *args: str) -> str:
    env = {**os.environ, "COLUMNS": "160"}
    out = subprocess.run(
        [sys.executable, "-m", "kbtool.cli", *args, "--db", str(db)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return out.stdout


def test_toolchain_text():
    assert toolchain_text(None).plain == UNKNOWN_TOOLCHAIN == "unknown"
    assert toolchain_text("").plain == "unknown"
    assert toolchain_text("clang 17.0.6").plain == "clang 17.0.6"
    assert toolchain_text("x" * 30, 10).plain == "x" * 9 + "…"
    assert toolchain_text("evil\x1b[31m").plain == "evil\\x1b[31m"


def test_cli_and_api_agree_on_what_null_means(kb):  # noqa: F811
    conn = open_ro(kb)
    assert [v["toolchain_version"] for v in queries.list_versions(conn)] == [None, None]
    conn.close()
    assert [v["toolchain_version"] for v in json.loads(_cli(kb, "versions", "--json"))] == [
        None,
        None,
    ]
    rows = [ln for ln in _cli(kb, "versions").splitlines() if " 1.0 " in ln or " 1.1 " in ln]
    assert len(rows) == 2
    for ln in rows:
        assert "unknown" in ln and "—" not in ln


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_tui_versions_screen_says_unknown(kb, anyio_backend):  # noqa: F811
    app = make_app(kb)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        text = screen_text(app)
        assert "unknown" in text and "—" not in text.split("toolchain", 1)[1][:200]
