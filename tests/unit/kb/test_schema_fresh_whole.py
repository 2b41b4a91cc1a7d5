"""A new KB's schema is written whole or not at all (``kbtool.kb.schema.ensure_schema``; the
fresh script runs in one ``executescript`` call since session 30 S): a statement that fails
leaves no table, no open transaction and the file still a new one, and another writer holding
the file is waited for, not committed through."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

from kbtool.kb import schema


def _tables(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT name FROM sqlite_master ORDER BY name")]


def test_a_failing_statement_leaves_nothing(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "kb.db")
    broken = schema.FRESH_SCRIPT + "\nCREATE TABLE meta (key TEXT);\n"  # (meta exists: fails)
    monkeypatch.setattr(schema, "FRESH_SCRIPT", broken)
    conn = sqlite3.connect(path, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError, match="already exists"):
        schema.ensure_schema(conn, path)
    assert not conn.in_transaction
    assert _tables(conn) == []
    assert schema.read_schema_version(conn) == 0
    monkeypatch.setattr(schema, "FRESH_SCRIPT", broken[: -len("CREATE TABLE meta (key TEXT);\n")])
    schema.ensure_schema(conn, path)  # (the same file made a KB afterwards)
    assert schema.read_schema_version(conn) == schema.SCHEMA_VERSION
    assert set(schema.TABLES) <= set(_tables(conn))


def test_the_schema_waits_for_another_writer(tmp_path) -> None:
    path = str(tmp_path / "kb.db")
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("CREATE TABLE held (x)")  # (another writer's transaction, not committed)
    conn = sqlite3.connect(path, isolation_level=None, timeout=10)
    released = threading.Event()

    def release() -> None:
        time.sleep(0.3)
        other.execute("ROLLBACK")
        released.set()

    t = threading.Thread(target=release)
    t.start()
    schema.ensure_schema(conn, path)  # (its BEGIN IMMEDIATE waits for the rollback)
    t.join()
    assert released.is_set()
    assert "held" not in _tables(conn)
    assert schema.read_schema_version(conn) == schema.SCHEMA_VERSION
    assert not conn.in_transaction
