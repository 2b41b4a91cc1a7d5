"""Schema 13 keys ``call_edges`` by (version_id, callee, caller) and drops its callee index:
the table itself answers a function's callers (a range of its key, in caller order), its
callees are the distinct values of its ``facts.calls``. A schema-12 KB migrates with the same
rows and every answer of the query layer and the data model unchanged; callees read from the
facts equal what the schema-12 statement read from the edges, for every function; a fresh
ingest writes the edges in key order and builds no index for them."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from kbtool.kb import queries, schema
from kbtool.kb.db import open_ro, open_rw
from testkit.kbcompare import rows, tables
from tests.support.kb_reads import read_everything, reader
from tests.support.paths import DEMO_DIR

V12_TABLE = """CREATE TABLE call_edges (
    version_id INTEGER NOT NULL,
    caller INTEGER NOT NULL,
    callee INTEGER NOT NULL,
    PRIMARY KEY (version_id, caller, callee)
) WITHOUT ROWID"""
V12_INDEX = "CREATE INDEX call_edges_callee ON call_edges(version_id, callee)"
OLD_CALLEES = "SELECT callee FROM call_edges WHERE version_id = ? AND caller = ? ORDER BY callee"
CALLERS = "SELECT caller FROM call_edges WHERE version_id = ? AND callee = ? ORDER BY caller"


def _as_schema_12(path: Path) -> None:
    """Make ``path`` what kbtool wrote at schema 12: the same edges keyed (version_id, caller,
    callee), the callee index, version 12."""
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("BEGIN")
    raw.execute("ALTER TABLE call_edges RENAME TO new_edges")
    raw.execute(V12_TABLE)
    raw.execute("INSERT INTO call_edges SELECT version_id, caller, callee FROM new_edges")
    raw.execute("DROP TABLE new_edges")
    raw.execute(V12_INDEX)
    raw.execute("UPDATE meta SET value = '12' WHERE key = 'schema_version'")
    raw.execute("COMMIT")
    raw.close()


def _all_rows(conn: sqlite3.Connection) -> dict[str, list[tuple]]:
    """Every table's rows (in key or rowid order; the edges, whose key changes, sorted)."""
    out = {t: [tuple(r) for r in rows(conn, t)[1]] for t in tables(conn) if t != "meta"}
    out["call_edges"].sort()
    return out


def _key(conn: sqlite3.Connection) -> list[str]:
    info = [tuple(r) for r in conn.execute("PRAGMA table_info(call_edges)")]
    return [r[1] for r in sorted(info, key=lambda r: r[5]) if r[5]]  # (r[5]: place in key)


def _plan(conn: sqlite3.Connection, sql: str) -> str:
    return " ".join(r[-1] for r in conn.execute("EXPLAIN QUERY PLAN " + sql, (1, 1)))


def test_a_schema_12_kb_migrates_with_its_rows_and_answers_unchanged(demo_kb_master, tmp_path):
    path = tmp_path / "kb.db"
    shutil.copy(demo_kb_master, path)
    _as_schema_12(path)
    old = reader(path)
    assert "call_edges_callee" in _plan(old, CALLERS)
    before_rows = _all_rows(old)
    assert len(before_rows["call_edges"]) > 1000  # (the demo KB has edges to move)
    before = read_everything(old)
    old.close()

    conn = open_rw(path, create=False)  # migrates, as `kbtool migrate` does
    conn.close()
    conn = open_ro(path)
    assert schema.read_schema_version(conn) == schema.SCHEMA_VERSION >= 13
    assert _key(conn) == ["version_id", "callee", "caller"]
    names = {
        r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE tbl_name = 'call_edges'")
    }
    assert names == {"call_edges"}  # no index beside the table
    assert _all_rows(conn) == before_rows
    assert read_everything(conn) == before
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


def test_callees_from_the_facts_are_the_edges_schema_12_read(demo_kb_master, tmp_path):
    path = tmp_path / "kb.db"
    shutil.copy(demo_kb_master, path)
    _as_schema_12(path)
    old = reader(path)
    funcs = old.execute("SELECT version_id, idx FROM functions ORDER BY 1, 2").fetchall()
    want = {(v, i): [r[0] for r in old.execute(OLD_CALLEES, (v, i))] for v, i in funcs}
    old.close()
    assert sum(map(bool, want.values())) > 500
    conn = open_rw(path, create=False)
    conn.close()
    conn = open_ro(path)
    for (v, i), callees in want.items():
        assert [c["index"] for c in queries.callees(conn, v, i)] == callees, (v, i)
    conn.close()


def test_callers_are_a_range_of_the_key_in_caller_order(demo_kb_master):
    conn = open_ro(demo_kb_master)
    plan = _plan(conn, CALLERS)
    assert "USING PRIMARY KEY (version_id=? AND callee=?)" in plan, plan
    assert "TEMP B-TREE" not in plan, plan
    v, callee, n = conn.execute(
        "SELECT version_id, callee, count(*) FROM call_edges GROUP BY 1, 2 ORDER BY 3 DESC"
    ).fetchone()
    assert n > 3
    callers = [r[0] for r in conn.execute(CALLERS, (v, callee))]
    assert callers == sorted(set(callers)) and len(callers) == n
    assert [c["index"] for c in queries.callers(conn, v, callee)] == callers
    conn.close()


def test_a_fresh_ingest_writes_the_edges_in_key_order_and_no_index(tmp_path):
    from kbtool.services.ingest import ingest_file

    conn = open_rw(tmp_path / "kb.db", create=True)
    ran: list[str] = []
    conn.set_trace_callback(ran.append)
    ingest_file(conn, str(DEMO_DIR / "zstd-1.5.5.wasm"), label="1")
    conn.set_trace_callback(None)
    assert not [s for s in ran if "INDEX" in s and "call_edges" in s]
    assert _key(conn) == ["version_id", "callee", "caller"]
    edges = conn.execute("SELECT caller, callee FROM call_edges WHERE version_id = 1").fetchall()
    distinct = {
        (i, c)
        for i, calls in conn.execute("SELECT idx, calls FROM facts WHERE version_id = 1")
        for c in json.loads(calls)
    }
    assert len(edges) > 100 and sorted(map(tuple, edges)) == sorted(distinct)
    conn.close()
