"""A new KB's first load is written once (rollback journal), then the KB is in WAL mode again;
a KB someone else holds, or one that is not new, keeps WAL throughout."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from kbtool.kb.bulk import first_load
from kbtool.kb.db import open_ro, open_rw, transaction


def _mode(conn: sqlite3.Connection) -> str:
    return conn.execute("PRAGMA journal_mode").fetchone()[0].lower()


def _wal_pages(db: Path) -> int:
    wal = Path(f"{db}-wal")
    return wal.stat().st_size if wal.exists() else 0


def test_a_fresh_kb_is_loaded_without_a_wal_then_back_in_wal(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    conn = open_rw(db)
    try:
        assert _mode(conn) == "wal"
        with first_load(conn, fresh=True):
            assert _mode(conn) == "delete"
            with transaction(conn):
                conn.execute("INSERT INTO meta(key, value) VALUES ('x', ?)", ("y" * 100_000,))
            assert _wal_pages(db) == 0  # the pages went to the KB file itself
        assert _mode(conn) == "wal"
    finally:
        conn.close()
    ro = open_ro(db)
    try:
        assert ro.execute("SELECT length(value) FROM meta WHERE key = 'x'").fetchone()[0] == 100_000
    finally:
        ro.close()


def test_a_failed_load_leaves_the_kb_as_it_was_in_wal(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    conn = open_rw(db)
    try:
        with pytest.raises(RuntimeError), first_load(conn, fresh=True), transaction(conn):
            conn.execute("INSERT INTO meta(key, value) VALUES ('x', 'y')")
            raise RuntimeError("boom")
        assert _mode(conn) == "wal"
        assert conn.execute("SELECT count(*) FROM meta WHERE key = 'x'").fetchone()[0] == 0
    finally:
        conn.close()


def test_not_fresh_or_held_by_a_reader_keeps_wal(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    conn = open_rw(db)
    try:
        with first_load(conn, fresh=False):
            assert _mode(conn) == "wal"
        reader = open_ro(db)  # another process's view of the same file
        try:
            reader.execute("SELECT count(*) FROM meta").fetchone()
            with first_load(conn, fresh=True):
                assert _mode(conn) == "wal"  # not switched under the reader; no wait
                with transaction(conn):
                    conn.execute("INSERT INTO meta(key, value) VALUES ('x', 'y')")
            assert reader.execute("SELECT value FROM meta WHERE key = 'x'").fetchone()[0] == "y"
        finally:
            reader.close()
    finally:
        conn.close()
