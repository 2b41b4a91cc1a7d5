"""`kbtool history SID` and the TUI history screen show a function's knowledge decisions too
(issue #27): comment, prototype, local names, line comments and local types, labelled by kind,
merged in order with the name's events, identical refusals as one row with ``×N``; untrusted
text escaped."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kbtool.kb.db import open_rw
from kbtool.kb.gate import upsert_symbol
from kbtool.services import code as code_service
from kbtool.services import knowledge as ks
from kbtool.tui.screens.history import HistoryScreen
from tests.support.tui import make_app, screen_text, settle

CLI = [sys.executable, "-m", "kbtool.cli"]
INDEX = 100  # demo version 2, (i32 x6) -> i32


def kbtool(db: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, "--db", str(db), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=db.parent,
        env=dict(os.environ, COLUMNS="220"),
    )


@pytest.fixture
def kb(demo_kb: Path) -> tuple[Path, str]:
    """The demo KB with a name and every function knowledge kind on 2:100, and a refusal
    repeated three times."""
    target = f"2:{INDEX}"
    conn = open_rw(demo_kb)
    try:
        sid = ks.resolve_function(conn, target)["stable_id"]
        lines = code_service.disassembly(conn, 2, INDEX)["mnemonics"].splitlines()
        third = [int(m.group(1), 16) for ln in lines if (m := re.match(r" ([0-9a-f]{6}): ", ln))][3]
        upsert_symbol(
            conn,
            sid,
            "build_histogram",
            provenance="human",
            confidence=1.0,
            actor="human:cli",
            lock=True,
            version_id=2,
        )
        ks.set_comment(conn, target, "Counts <b>[red]bytes[/red]</b>", line=None)
        ks.set_prototype(conn, target, "int hist(int a, int b, int c, int d, int e, int f)")
        ks.rename_local(conn, target, "p0", "counts")
        ks.set_comment(conn, target, "low bits", line=third)
        for _ in range(3):
            ks.set_comment(conn, target, "bad\x1b[2Jx", line=None)
    finally:
        conn.close()
    return demo_kb, sid


def test_cli_history_lists_knowledge_events_by_kind(kb):
    db, sid = kb
    r = kbtool(db, "history", sid)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    rows = [ln for ln in out.splitlines() if "│" in ln]

    def row(what: str) -> str:
        return next(ln for ln in rows if f"│ {what} " in ln)

    assert "build_histogram" in row("name")
    assert "Counts <b>[red]bytes[/red]</b>" in row("comment")  # literal: no markup eaten
    assert "int hist(int a" in row("prototype")
    assert "counts" in row("local 0")
    assert "low bits" in row("line +9")
    assert "rejection ×3" in out
    assert "\x1b" not in out and "bad\\x1b[2Jx" in out  # the refused text, escaped
    # in the order they happened: the name first, the refusal last
    order = [
        next(i for i, ln in enumerate(rows) if f"│ {w} " in ln)
        for w in ("name", "prototype", "local 0", "line +9")
    ]
    assert order == sorted(order)

    d = json.loads(kbtool(db, "history", sid, "--json").stdout)
    assert [e["what"] for e in d["knowledge_events"]] == [
        "comment",
        "prototype",
        "local 0",
        "line +9",
        "comment",
    ]
    assert d["knowledge_events"][-1]["repeats"] == 3 and not d["knowledge_events"][-1]["written"]
    assert all(e["new_name"] == "build_histogram" for e in d["events"])  # names stay names


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_tui_history_screen_shows_knowledge_events(kb):
    db, sid = kb
    app = make_app(db)
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot)
        app.open_history(sid)
        await settle(pilot)
        assert isinstance(app.screen, HistoryScreen)
        text = screen_text(app)
        for needle in (
            "name",
            "build_histogram",
            "comment",
            "Counts <b>[red]bytes",
            "prototype",
            "local 0",
            "counts",
            "line +9",
            "low bits",
            "rejection ×3",
            "6 event(s)",
        ):
            assert needle in text, needle
        assert "\x1b" not in text
