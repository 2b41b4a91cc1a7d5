"""A KB file created by ``open_rw`` switches to WAL without a rollback journal's file and
syncs (issue 30.4, session 28 S): that first write of page 1 protects no content. What it
leaves is the KB a synced switch left, and every KB is back at ``synchronous = NORMAL``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from kbtool.kb import db
from kbtool.kb.db import open_rw
from kbtool.kb.schema import BIG_PAGE_SIZE
from tests.support.paths import ROOT


def _settings(conn) -> tuple[str, int, int]:
    return (
        conn.execute("PRAGMA journal_mode").fetchone()[0],
        conn.execute("PRAGMA synchronous").fetchone()[0],
        conn.execute("PRAGMA page_size").fetchone()[0],
    )


@pytest.mark.parametrize("page_size", [None, BIG_PAGE_SIZE])
def test_a_new_kb_is_wal_synced_normally_and_keeps_what_it_commits(tmp_path, page_size):
    path = tmp_path / "kb.db"
    conn = open_rw(path, page_size=page_size)
    assert _settings(conn) == ("wal", 1, page_size or 4096)  # 1: NORMAL
    with db.transaction(conn):
        conn.execute("INSERT INTO programs (name, created_at) VALUES ('p', 'now')")
    conn.close()
    head = path.read_bytes()[:20]
    assert head[:16] == b"SQLite format 3\x00" and head[18:20] == b"\x02\x02"  # WAL file format
    again = open_rw(path)
    assert _settings(again) == ("wal", 1, page_size or 4096)
    assert [r[0] for r in again.execute("SELECT name FROM programs")] == ["p"]
    again.close()


def test_only_a_file_created_here_skips_the_syncs(tmp_path, monkeypatch):
    seen: list[str] = []
    monkeypatch.setattr(
        db,
        "_unsynced_first_write",
        lambda conn: seen.append(conn.execute("PRAGMA page_count").fetchone()[0]),
    )
    path = tmp_path / "kb.db"
    open_rw(path).close()
    assert seen == [0]  # the new, empty file
    open_rw(path).close()
    path.with_name("empty.db").touch()  # an existing empty file: opened as before
    open_rw(path.with_name("empty.db")).close()
    assert seen == [0]


_OPEN = """
import sys
from kbtool.kb.db import open_rw
open_rw(sys.argv[1]).close()
"""


def test_no_rollback_journal_nor_sync_before_the_wal(tmp_path):
    # the system calls of one new KB's open: no -journal file, no sync before the WAL's
    strace = shutil.which("strace")
    if strace is None or subprocess.run([strace, "-o", os.devnull, "true"]).returncode:
        pytest.skip("strace cannot trace here")
    log, path = tmp_path / "trace", tmp_path / "kb.db"
    r = subprocess.run(
        [strace, "-f", "-e", "trace=openat,fsync,fdatasync", "-o", str(log)]
        + [sys.executable, "-c", _OPEN, str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    calls = [line for line in log.read_text().splitlines() if str(path) in line or "sync(" in line]
    assert not [c for c in calls if "kb.db-journal" in c]
    first_wal = next(i for i, c in enumerate(calls) if "kb.db-wal" in c)
    assert not [c for c in calls[:first_wal] if "sync(" in c]
    assert any("sync(" in c for c in calls[first_wal:])  # the WAL's header and the checkpoint


def test_a_file_another_process_made_a_kb_meanwhile_is_opened_as_before(tmp_path, monkeypatch):
    # the path did not exist at open_rw's check, then another writer made it a KB before
    # the connection: it has pages, so its WAL switch is not redone without syncs
    path = tmp_path / "kb.db"
    open_rw(tmp_path / "other.db").close()
    seen: list[int] = []
    monkeypatch.setattr(db, "_unsynced_first_write", lambda conn: seen.append(1))
    real = db._require_writable

    def meanwhile(p):
        (tmp_path / "other.db").rename(path)  # (what the other writer left)
        real(p)

    monkeypatch.setattr(db, "_require_writable", meanwhile)
    conn = open_rw(path)
    assert seen == []
    assert _settings(conn) == ("wal", 1, 4096)
    conn.close()
