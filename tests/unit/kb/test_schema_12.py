"""Schema 12 keeps the long rows (``facts``, ``data_ref_chunks``, ``data_ref_targets``) in
rowid tables: a row of up to a page stays in its leaf instead of spilling to an overflow page
of its own. A schema-11 KB (the three tables WITHOUT ROWID) migrates with every row, in key
order, and every answer of the query layer and the data model unchanged; the primary keys
still refuse a duplicate; a fresh KB has the new layout."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from kbtool.kb import schema
from kbtool.kb.db import open_ro, open_rw
from testkit.kbcompare import has_rowid, rows, tables
from tests.support.kb_reads import read_everything, reader

LONG = ("facts", "data_ref_chunks", "data_ref_targets")


def _as_schema_11(path: Path) -> None:
    """Make ``path`` what kbtool wrote at schema 11: the same rows, the three tables
    WITHOUT ROWID (their DDL of schema 11), version 11."""
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("BEGIN")
    for table in LONG:
        ddl = raw.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone()[0]
        indexes = [
            r[0]
            for r in raw.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ?"
                " AND sql IS NOT NULL",
                (table,),
            )
        ]
        raw.execute(f"ALTER TABLE {table} RENAME TO old_{table}")
        for sql in indexes:
            raw.execute(f"DROP INDEX {sql.split()[2]}")
        raw.execute(ddl + " WITHOUT ROWID")
        raw.execute(f"INSERT INTO {table} SELECT * FROM old_{table}")  # noqa: S608
        raw.execute(f"DROP TABLE old_{table}")
        for sql in indexes:
            raw.execute(sql)
    raw.execute("UPDATE meta SET value = '11' WHERE key = 'schema_version'")
    raw.execute("COMMIT")
    raw.close()


def _key_rows(conn: sqlite3.Connection, table: str) -> list[tuple]:
    key = "version_id, idx" if table == "facts" else "version_id, chunk"
    return [tuple(r) for r in conn.execute(f"SELECT * FROM {table} ORDER BY {key}")]  # noqa: S608


def test_a_schema_11_kb_migrates_with_its_rows_and_answers_unchanged(demo_kb_master, tmp_path):
    path = tmp_path / "kb.db"
    shutil.copy(demo_kb_master, path)
    _as_schema_11(path)
    old = reader(path)
    assert not any(has_rowid(old, t) for t in LONG)
    before_rows = {t: rows(old, t) for t in tables(old) if t != "meta"}
    assert all(before_rows[t][1] for t in LONG)  # (the demo KB has rows in each)
    before = read_everything(old)
    old.close()

    conn = open_rw(path, create=False)  # migrates, as `kbtool migrate` does
    conn.close()
    conn = open_ro(path)
    assert schema.read_schema_version(conn) == schema.SCHEMA_VERSION >= 12
    assert all(has_rowid(conn, t) for t in LONG)
    # rowid order is key order (testkit's row comparison reads a rowid table by rowid)
    assert {t: rows(conn, t) for t in tables(conn) if t != "meta"} == before_rows
    for t in LONG:
        assert [r[1:] for r in conn.execute(f"SELECT rowid, * FROM {t} ORDER BY rowid")] == (
            _key_rows(conn, t)
        )
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"data_ref_chunks_func", "data_ref_targets_key"} <= names
    # the range lookups still answer from their index alone (it ends with ``chunk``)
    for table, col in (("data_ref_chunks", "func"), ("data_ref_targets", "key")):
        plan = " ".join(
            r[-1]
            for r in conn.execute(
                f"EXPLAIN QUERY PLAN SELECT chunk FROM {table} WHERE version_id = 1"  # noqa: S608
                f" AND hi_{col} >= 1 AND lo_{col} <= 1"
            )
        )
        assert f"COVERING INDEX {table}_{col}" in plan, plan
    assert read_everything(conn) == before
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


def test_the_primary_keys_still_refuse_a_duplicate(tmp_path):
    conn = open_rw(tmp_path / "kb.db", create=True)
    assert all(has_rowid(conn, t) for t in LONG)
    conn.execute(
        "INSERT INTO versions (id, label, sha256, size, imported_functions, defined_functions,"
        " exported_functions, ingested_at) VALUES (1, 'a', 'x', 0, 0, 1, 0, 't')"
    )
    fact = "INSERT INTO facts VALUES (1, 0, '[]', 0, '[]', '[]', '[]', '[]', '[]', 0, 0, x'', '[]')"
    conn.execute(fact)
    for sql in (
        fact,
        "INSERT INTO data_ref_chunks VALUES (1, 0, 1, 0, 0, x'00'), (1, 0, 1, 0, 0, x'00')",
        "INSERT INTO data_ref_targets VALUES (1, 0, 1, 0, 0, x'00'), (1, 0, 1, 0, 0, x'00')",
    ):
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(sql)
    conn.close()


def test_a_long_row_stays_in_its_page(tmp_path):
    """Facts rows of 12 KB on 32 KB pages: two to a leaf page at schema 12, where schema 11's
    layout gave each an overflow page of its own (most of it empty)."""
    pages = {}
    for layout in ("11", "12"):
        path = tmp_path / f"kb{layout}.db"
        conn = open_rw(path, create=True, page_size=32768)
        conn.execute(
            "INSERT INTO versions (id, label, sha256, size, imported_functions,"
            " defined_functions, exported_functions, ingested_at)"
            " VALUES (1, 'a', 'x', 0, 0, 1, 0, 't')"
        )
        conn.close()
        if layout == "11":
            _as_schema_11(path)
        raw = sqlite3.connect(path, isolation_level=None)
        start = raw.execute("PRAGMA page_count").fetchone()[0]
        raw.executemany(
            "INSERT INTO facts VALUES (1, ?, '[]', 0, '[]', '[]', '[]', '[]', '[]', 0, 0, ?, '[]')",
            [(i, bytes([i % 251]) * 12_000) for i in range(64)],
        )
        pages[layout] = raw.execute("PRAGMA page_count").fetchone()[0] - start
        raw.close()
    assert pages["12"] <= 36 < 60 <= pages["11"], pages
