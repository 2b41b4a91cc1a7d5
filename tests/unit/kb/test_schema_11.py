"""Schema 11 drops two indexes that serve no query, ``functions_shape`` (on ``shape_hash``)
and ``data_items_id`` (on ``data_id``): every read of the query layer, run on a KB that still
has them, is planned without them (EXPLAIN QUERY PLAN of each statement it ran); no SQL in
kbtool filters, joins, sorts or groups on either column; a schema-10 KB migrates to 11 with
its rows and its answers unchanged, and a fresh KB never has them."""

from __future__ import annotations

import ast
import re
import shutil
import sqlite3
from pathlib import Path

from kbtool.kb import schema
from kbtool.kb.db import open_ro, open_rw
from testkit.kbcompare import rows, tables
from tests.support.kb_reads import read_everything, reader
from tests.support.paths import ROOT

DROPPED = {
    "functions_shape": "CREATE INDEX functions_shape ON functions(shape_hash)",
    "data_items_id": "CREATE INDEX data_items_id ON data_items(data_id)",
}


def _as_schema_10(path: Path) -> None:
    """Make ``path`` what kbtool wrote at schema 10: the same rows, the two indexes, version 10."""
    raw = sqlite3.connect(path, isolation_level=None)
    for ddl in DROPPED.values():
        raw.execute(ddl)
    raw.execute("UPDATE meta SET value = '10' WHERE key = 'schema_version'")
    raw.close()


def _indexes_used(conn: sqlite3.Connection, statements: list[str]) -> set[str]:
    used: set[str] = set()
    for sql in statements:
        if not re.match(r"\s*(SELECT|WITH|UPDATE|DELETE)\b", sql, re.I):
            continue
        for row in conn.execute("EXPLAIN QUERY PLAN " + sql):
            used |= set(re.findall(r"USING (?:COVERING )?INDEX (\w+)", row[-1]))
    return used


def test_no_read_of_the_query_layer_uses_the_dropped_indexes(demo_kb_master, tmp_path):
    path = tmp_path / "kb.db"
    shutil.copy(demo_kb_master, path)
    _as_schema_10(path)
    conn = reader(path)
    ran: list[str] = []
    conn.set_trace_callback(ran.append)
    answers = read_everything(conn)
    conn.set_trace_callback(None)
    assert len(answers) > 70 and len(ran) > 100
    used = _indexes_used(conn, ran)
    conn.close()
    assert not used & set(DROPPED), sorted(used & set(DROPPED))
    # the plans name the indexes that serve (so this check can see one)
    assert {"functions_stable_id", "data_items_label"} <= used


def test_no_sql_in_kbtool_filters_joins_sorts_or_groups_on_the_indexed_columns():
    cond = re.compile(
        r"\b(?:WHERE|AND|OR|ON|BY|DISTINCT|MIN|MAX)\s*\(?\s*(?:\w+\.)?(shape_hash|data_id)\b"
        r"|\b(shape_hash|data_id)\s*(?:=|<|>|IN\b|LIKE\b|BETWEEN\b|IS\b)",
        re.I,
    )
    sql = re.compile(r"\b(SELECT|UPDATE|DELETE|WHERE|JOIN)\b")
    hits = []
    for py in sorted((ROOT / "kbtool").rglob("*.py")):
        for node in ast.walk(ast.parse(py.read_text(encoding="utf-8"))):
            if isinstance(node, ast.JoinedStr):  # an f-string: its literal parts
                text = "".join(
                    v.value if isinstance(v, ast.Constant) else " ? " for v in node.values
                )
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
            else:
                continue
            if sql.search(text) and cond.search(text):
                hits.append(f"{py.relative_to(ROOT)}:{node.lineno}: {text[:200]}")
    # only the schema 8 migration's, which compares the shape hashes of rows it finds by
    # primary key (and shows this check sees a condition on the column)
    assert hits and all(h.startswith("kbtool/kb/schema.py:") for h in hits), hits


def test_a_schema_10_kb_migrates_with_its_rows_and_answers_unchanged(demo_kb_master, tmp_path):
    path = tmp_path / "kb.db"
    shutil.copy(demo_kb_master, path)
    _as_schema_10(path)
    old = reader(path)
    before_rows = {t: rows(old, t) for t in tables(old) if t != "meta"}
    before = read_everything(old)
    old.close()

    conn = open_rw(path, create=False)  # migrates, as `kbtool migrate` does
    conn.close()
    conn = open_ro(path)
    assert schema.read_schema_version(conn) == schema.SCHEMA_VERSION >= 11
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert not names & set(DROPPED)
    assert {"functions_stable_id", "data_items_label"} <= names
    assert {t: rows(conn, t) for t in tables(conn) if t != "meta"} == before_rows
    assert read_everything(conn) == before
    conn.close()


def test_a_fresh_kb_and_its_first_ingest_never_build_them(tmp_path):
    from kbtool.services.ingest import ingest_file
    from tests.support.paths import DEMO_DIR

    conn = open_rw(tmp_path / "kb.db", create=True)
    ran: list[str] = []
    conn.set_trace_callback(ran.append)
    ingest_file(conn, str(DEMO_DIR / "zstd-1.5.5.wasm"), label="1")
    conn.set_trace_callback(None)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    conn.close()
    assert not names & set(DROPPED)
    assert not [s for s in ran if any(n in s for n in DROPPED)]
