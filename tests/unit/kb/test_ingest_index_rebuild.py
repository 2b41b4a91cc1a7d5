"""Ingest into a fresh KB builds the secondary indexes of ``functions`` and ``data_items``
once, after their rows (cheaper than an entry per row at a random spot), and leaves exactly
the schema's indexes; a KB that already holds rows keeps its indexes in place (``functions``
with many rows added: once it holds ``FUNCTIONS_HELD_PER_ADDED`` times as many); a failed
ingest leaves them as they were (DDL is transactional)."""

from __future__ import annotations

import sqlite3

import pytest

from kbtool.kb import store
from kbtool.kb.db import open_rw
from kbtool.services.ingest import ingest_file
from tests.support.paths import DEMO_DIR

V1 = DEMO_DIR / "zstd-1.5.5.wasm"
V2 = DEMO_DIR / "zstd-1.5.6.wasm"
TABLES = ("functions", "data_items", "data_ref_chunks", "data_ref_targets", "call_edges")


def _index_ddl(conn: sqlite3.Connection) -> dict[str, str]:
    marks = ",".join("?" * len(TABLES))
    return dict(
        conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
            f" AND tbl_name IN ({marks})",  # noqa: S608
            TABLES,
        ).fetchall()
    )


def test_fresh_kb_rebuilds_then_later_ingests_update_in_place(tmp_path, monkeypatch):
    schema_only = open_rw(str(tmp_path / "empty.db"), create=True)
    want = _index_ddl(schema_only)
    schema_only.close()
    assert {"functions_stable_id", "data_items_label"} <= set(want)

    conn = open_rw(str(tmp_path / "kb.db"), create=True)
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    ingest_file(conn, str(V1), label="1")
    dropped = {s.split('"')[1] for s in statements if s.startswith('DROP INDEX "')}
    assert {"functions_stable_id", "data_items_label"} <= dropped
    assert _index_ddl(conn) == want  # the same indexes, from their own DDL
    plan = " ".join(
        r[-1]
        for r in conn.execute("EXPLAIN QUERY PLAN SELECT idx FROM functions WHERE stable_id = 'x'")
    )
    assert "functions_stable_id" in plan

    ingest_file(conn, str(V2), label="2")
    statements.clear()
    ingest_file(conn, str(V1), label="3", force=True)  # the tables hold more than it adds
    assert not [
        s for s in statements if 'DROP INDEX "functions' in s or 'DROP INDEX "data_items' in s
    ]
    assert _index_ddl(conn) == want
    # many function rows (FUNCTIONS_REBUILD_MIN_ROWS) into a table holding fewer than
    # FUNCTIONS_HELD_PER_ADDED times as many: rebuilt; in place beyond that
    monkeypatch.setattr(store, "FUNCTIONS_REBUILD_MIN_ROWS", 1)
    statements.clear()
    ingest_file(conn, str(V2), label="4", force=True)  # 3 releases held: fewer than 7x
    assert [s for s in statements if 'DROP INDEX "functions' in s]
    assert not [s for s in statements if 'DROP INDEX "data_items' in s]
    assert _index_ddl(conn) == want
    monkeypatch.setattr(store, "FUNCTIONS_HELD_PER_ADDED", 2)
    statements.clear()
    ingest_file(conn, str(V1), label="5", force=True)  # 4 releases held: more than 2x
    assert not [s for s in statements if 'DROP INDEX "functions' in s]
    assert _index_ddl(conn) == want
    conn.close()


def test_failed_ingest_keeps_the_indexes(tmp_path, monkeypatch):
    from kbtool.services import data as data_svc

    conn = open_rw(str(tmp_path / "kb.db"), create=True)
    want = _index_ddl(conn)

    def broken(*_a, **_k):
        raise RuntimeError("data model failed")

    monkeypatch.setattr(data_svc, "build", broken)  # after the functions are written
    with pytest.raises(RuntimeError, match="data model failed"):
        ingest_file(conn, str(V1), label="1")
    assert _index_ddl(conn) == want
    assert conn.execute("SELECT count(*) FROM functions").fetchone()[0] == 0
    conn.close()
