"""Nothing written is lost (issue #23 point 6): once kbtool has exited, the ``.db`` file alone
is the whole KB, even when a reader held the KB open while the name was written; and
``kbtool backup OUT.db`` copies a KB consistently while another thread writes to it."""

from __future__ import annotations

import gc
import json
import shutil
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import pytest

from kbtool.cli import main
from kbtool.kb import queries
from kbtool.kb.db import backup, open_ro, open_rw, transaction
from kbtool.kb.gate import upsert_symbol
from testkit.kb import bare_kb
from tests.support.mcp import mcp_session
from tests.support.tui import make_app, settle

CLI = [sys.executable, "-m", "kbtool.cli"]


def name_in_db_alone(db: Path, tmp_path: Path, stable_id: str) -> str | None:
    """The name of ``stable_id`` in a copy of the ``.db`` file without its ``-wal``/``-shm``."""
    alone = tmp_path / "copied-alone" / "kb.db"
    alone.parent.mkdir(exist_ok=True)
    shutil.copyfile(db, alone)
    conn = sqlite3.connect(alone)
    try:
        row = conn.execute("SELECT name FROM symbols WHERE stable_id = ?", (stable_id,)).fetchone()
    finally:
        conn.close()
    return row[0] if row else None


@pytest.fixture
def small_kb(tmp_path) -> tuple[Path, list[str]]:
    sids = [f"{i:016x}" for i in range(8)]
    db = tmp_path / "kb.db"
    bare_kb(db, sids).close()
    return db, sids


def test_set_name_is_in_the_db_file_while_a_reader_held_the_kb(small_kb, tmp_path):
    db, sids = small_kb
    reader = open_ro(db)  # `kbtool serve` or a TUI open at the same time
    queries.list_versions(reader)
    done = subprocess.run(
        CLI + ["--db", str(db), "set-name", sids[1], "parse_header"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    reader.close()  # the reader exits last: a read-only connection never checkpoints
    assert name_in_db_alone(db, tmp_path, sids[1]) == "parse_header"


def test_mcp_propose_symbol_is_in_the_db_file_after_the_server_exits(small_kb, tmp_path):
    db, sids = small_kb

    async def session() -> None:
        async with mcp_session(db) as s:
            await s.call_tool("get_symbol", {"stable_id": sids[2]})  # the read pool holds the KB
            res = await s.call_tool(
                "propose_symbol", {"stable_id": sids[2], "name": "agent_named", "confidence": 0.5}
            )
            assert json.loads(res.content[0].text)["written"] is True

    anyio.run(session)
    assert name_in_db_alone(db, tmp_path, sids[2]) == "agent_named"


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_tui_rename_is_in_the_db_file_after_the_app_exits(tui_kb, tmp_path, anyio_backend):
    from textual.widgets import Input

    app = make_app(tui_kb)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        app.screen.query_one(Input).value = "renamed_in_tui"
        await pilot.press("enter")
        await settle(pilot)
        stable_id = app.screen.current_function().stable_id
    assert name_in_db_alone(tui_kb, tmp_path, stable_id) == "renamed_in_tui"


def test_a_writer_left_open_checkpoints_when_collected(small_kb, tmp_path):
    db, sids = small_kb
    reader = open_ro(db)
    queries.list_versions(reader)
    conn = open_rw(db)
    upsert_symbol(
        conn, sids[3], "left_open", provenance="human", confidence=1.0, actor="human:test"
    )
    del conn  # never closed by its owner (a CLI command's connection)
    gc.collect()  # sqlite3's statement cache makes a connection a cycle
    reader.close()
    assert name_in_db_alone(db, tmp_path, sids[3]) == "left_open"


# ---------------------------------------------------------------- kbtool backup


def test_backup_while_another_thread_writes_is_consistent(tmp_path):
    sids = [f"{i:016x}" for i in range(300)]
    db = tmp_path / "kb.db"
    bare_kb(db, sids).close()
    committed: list[int] = []
    stop = threading.Event()

    def writer() -> None:
        conn = open_rw(db)
        try:
            for i, sid in enumerate(sids):
                if stop.is_set():
                    break
                with transaction(conn):
                    upsert_symbol(
                        conn, sid, f"fn_{i}", provenance="human", confidence=1.0, actor="human:test"
                    )
                committed.append(i)
        finally:
            conn.close()

    t = threading.Thread(target=writer)
    t.start()
    copies = []
    try:
        for n in range(4):
            before = len(committed)  # names committed before this backup began
            out = tmp_path / f"copy{n}.db"
            backup(db, out)
            copies.append((out, before))
    finally:
        stop.set()
        t.join()
    for out, before in copies:
        assert not Path(f"{out}-wal").exists()
        conn = sqlite3.connect(out)
        try:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            names = {r[0] for r in conn.execute("SELECT name FROM symbols")}
            events = conn.execute("SELECT COUNT(*) FROM annotation_events").fetchone()[0]
        finally:
            conn.close()
        assert {f"fn_{i}" for i in range(before)} <= names
        assert events == len(names)  # each name with its event: one commit, never half of one
    conn = open_ro(copies[-1][0])  # the copy is a KB kbtool opens
    assert queries.list_versions(conn)
    conn.close()


def test_backup_command_refuses_the_kb_itself_and_an_existing_file(small_kb, tmp_path, capsys):
    db, sids = small_kb
    out = tmp_path / "out.db"
    assert main(["--db", str(db), "backup", str(out)]) == 0
    assert "integrity ok" in capsys.readouterr().out
    assert main(["--db", str(db), "backup", str(db)]) == 1
    assert "is the KB itself" in capsys.readouterr().err
    (tmp_path / "same.db").symlink_to(db)
    assert main(["--db", str(db), "backup", str(tmp_path / "same.db")]) == 1
    assert "is the KB itself" in capsys.readouterr().err
    conn = open_rw(db)
    upsert_symbol(
        conn, sids[0], "later_name", provenance="human", confidence=1.0, actor="human:test"
    )
    conn.close()
    assert main(["--db", str(db), "backup", str(out)]) == 1
    assert "--force" in capsys.readouterr().err
    assert name_in_db_alone(out, tmp_path, sids[0]) is None  # untouched
    assert main(["--db", str(db), "backup", str(out), "--force"]) == 0
    capsys.readouterr()
    assert name_in_db_alone(out, tmp_path, sids[0]) == "later_name"
    assert main(["--db", str(tmp_path / "missing.db"), "backup", str(tmp_path / "x.db")]) == 1
    assert "no KB at" in capsys.readouterr().err
