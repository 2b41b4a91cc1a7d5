"""A new KB file gets the migrations' end state in one script (kbtool.kb.schema_fresh):
the same ``sqlite_master`` (every object's stored SQL, in the same order) and ``meta`` rows
as running migrations 1..SCHEMA_VERSION one by one."""

from __future__ import annotations

import sqlite3

import pytest

from kbtool.kb import schema
from kbtool.kb.schema_fresh import FRESH_SCRIPT, FRESH_VERSION, generate


def _dump(conn: sqlite3.Connection) -> tuple[list, list]:
    master = conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid"
    ).fetchall()
    meta = conn.execute("SELECT key, value FROM meta ORDER BY key").fetchall()
    return master, meta


def _fresh(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    schema.ensure_schema(conn, path)
    return conn


def test_fresh_script_is_the_current_schema_version() -> None:
    # a new migration needs FRESH_SCRIPT regenerated (see kbtool/kb/schema_fresh.py)
    assert FRESH_VERSION == schema.SCHEMA_VERSION


def test_fresh_kb_equals_the_migrated_one(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    one_script = _dump(_fresh(str(tmp_path / "fresh.db")))
    # the same call with the one-script path switched off runs every migration
    monkeypatch.setattr(schema, "FRESH_VERSION", -1)
    migrated = _dump(_fresh(str(tmp_path / "migrated.db")))
    assert one_script == migrated
    assert ("kind", schema.KB_KIND) in one_script[1]
    assert ("schema_version", str(schema.SCHEMA_VERSION)) in one_script[1]
    assert {row[1] for row in one_script[0] if row[0] == "table"} >= set(schema.TABLES)


def test_fresh_kb_is_current_and_reopens_unchanged(tmp_path) -> None:
    path = str(tmp_path / "kb.db")
    conn = _fresh(path)
    before = _dump(conn)
    schema.check_schema(conn, path)  # raises unless exactly this code's version
    schema.ensure_schema(conn, path)  # already current: nothing to do
    assert _dump(conn) == before


def test_fresh_script_is_what_the_migrations_generate() -> None:
    # `python -m kbtool.kb.schema_fresh` regenerates it after a new migration
    assert generate() == FRESH_SCRIPT
