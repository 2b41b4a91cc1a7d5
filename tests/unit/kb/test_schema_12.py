"""Schema 12 keeps the long rows (``facts``, ``data_ref_chunks``, ``data_ref_targets``) in
rowid tables: a row of up to a page stays in its leaf instead of spilling to an overflow page
of its own. A schema-11 KB (the three tables WITHOUT ROWID) migrates with every row, in key
order, and every answer of the query layer and the data model unchanged; the primary keys
still refuse a duplicate; a fresh KB has the new layout."""

from __future__ import annotations

import inspect
import shutil
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from kbtool.kb import datamodel, queries, schema
from kbtool.kb.db import _configure, open_ro, open_rw
from kbtool.kb.errors import KBError
from testkit.kbcompare import rows, tables

LONG = ("facts", "data_ref_chunks", "data_ref_targets")
# reads of the data model the query layer re-exports nowhere (kbtool/kb/datamodel.py)
DATA_READS = (
    "model_row",
    "model_info",
    "list_items",
    "item_at",
    "item_by_label",
    "items_by_text",
    "globals_of",
    "refs_to",
    "refs_from",
    "function_names_for",
    "function_by_name",
)


def _has_rowid(conn: sqlite3.Connection, table: str) -> bool:
    try:
        conn.execute(f"SELECT rowid FROM {table} LIMIT 1")  # noqa: S608
    except sqlite3.OperationalError:
        return False
    return True


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


def _reader(path: Path) -> sqlite3.Connection:
    """A read-only connection configured as ``open_ro``'s, without its schema check (which
    refuses a schema-11 KB): the readers of schema 11 on that file."""
    conn = sqlite3.connect(
        "file:" + quote(str(path.resolve())) + "?mode=ro", uri=True, isolation_level=None
    )
    _configure(conn)
    conn.execute("PRAGMA query_only = ON")
    return conn


def _samples(conn: sqlite3.Connection) -> dict[str, list[Any]]:
    """Argument values by parameter name, taken from the KB itself."""
    vids = [r[0] for r in conn.execute("SELECT id FROM versions ORDER BY id")]
    fn = conn.execute(
        "SELECT f.version_id, f.idx, f.stable_id, s.name FROM functions f JOIN symbols s"
        " USING (stable_id) WHERE f.imported = 0 AND s.name IS NOT NULL ORDER BY 1, 2"
        " LIMIT 1"
    ).fetchone()
    item = conn.execute(
        "SELECT address, label, text FROM data_items WHERE version_id = ? AND text IS NOT NULL"
        " ORDER BY address LIMIT 1",
        (vids[-1],),
    ).fetchone()
    sha, label = conn.execute("SELECT sha256, label FROM versions ORDER BY id LIMIT 1").fetchone()
    return {
        "version_id": vids,
        "from_version_id": vids[:1],
        "to_version_id": vids[-1:],
        "index": [fn[1]],
        "func_index": [fn[1], fn[1] + 3],
        "indices": [[fn[1], fn[1] + 1, fn[1] + 7]],
        "stable_id": [fn[2], "nosuch"],
        "query": [fn[3][:4]],
        "text": [item[2][:3]],
        "name": [fn[3]],
        "label": [label, item[1]],
        "address": [item[0]],
        "values": [[0, 1, 4]],
        "sha256": [sha],
        "backend": ["ollama"],
        "model": [None],
        "prompt_hash": ["0" * 16],
        "target_kind": ["data", "global"],
        "lo": [item[0], 0],
        "include_imports": [True],
        "offset": [0, 3],
        "count": [50],
    }


def _plain(x: Any) -> Any:
    if isinstance(x, sqlite3.Row):
        return tuple(x)
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_plain(v) for v in x]
    return x


def _read_everything(conn: sqlite3.Connection) -> dict[str, Any]:
    """Every public read of the query layer and the data model, with every sample of its
    parameters: name -> answers."""
    samples = _samples(conn)
    fns = [
        (n, f)
        for n, f in vars(queries).items()
        if inspect.isfunction(f) and not n.startswith("_") and n != "parse_mem_ops"
    ]
    fns += [(f"datamodel.{n}", getattr(datamodel, n)) for n in DATA_READS]
    out: dict[str, Any] = {}
    for name, f in sorted(fns):
        params = [
            p
            for p in list(inspect.signature(f).parameters.values())[1:]
            if p.default is inspect.Parameter.empty
        ]
        missing = [p.name for p in params if p.name not in samples]
        assert not missing, f"{name}: no sample for {missing} (add one to _samples)"
        combos: list[dict[str, Any]] = [{}]
        for p in params:
            combos = [{**c, p.name: v} for c in combos for v in samples[p.name]]
        answers = []
        for kwargs in combos:
            try:
                answers.append(repr(_plain(f(conn, **kwargs))))
            except KBError as exc:  # an unknown id: the answer is the refusal
                answers.append(f"{type(exc).__name__}: {exc}")
        out[name] = answers
    return out


def _key_rows(conn: sqlite3.Connection, table: str) -> list[tuple]:
    key = "version_id, idx" if table == "facts" else "version_id, chunk"
    return [tuple(r) for r in conn.execute(f"SELECT * FROM {table} ORDER BY {key}")]  # noqa: S608


def test_a_schema_11_kb_migrates_with_its_rows_and_answers_unchanged(demo_kb_master, tmp_path):
    path = tmp_path / "kb.db"
    shutil.copy(demo_kb_master, path)
    _as_schema_11(path)
    old = _reader(path)
    assert not any(_has_rowid(old, t) for t in LONG)
    before_rows = {t: rows(old, t) for t in tables(old) if t != "meta"}
    assert all(before_rows[t][1] for t in LONG)  # (the demo KB has rows in each)
    before = _read_everything(old)
    old.close()

    conn = open_rw(path, create=False)  # migrates, as `kbtool migrate` does
    conn.close()
    conn = open_ro(path)
    assert schema.read_schema_version(conn) == schema.SCHEMA_VERSION == 12
    assert all(_has_rowid(conn, t) for t in LONG)
    # rowid order is key order (testkit's row comparison reads a rowid table by rowid)
    assert {t: rows(conn, t) for t in tables(conn) if t != "meta"} == before_rows
    for t in LONG:
        assert [r[1:] for r in conn.execute(f"SELECT rowid, * FROM {t} ORDER BY rowid")] == (
            _key_rows(conn, t)
        )
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"data_ref_chunks_func", "data_ref_targets_key"} <= names
    assert _read_everything(conn) == before
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


def test_the_primary_keys_still_refuse_a_duplicate(tmp_path):
    conn = open_rw(tmp_path / "kb.db", create=True)
    assert all(_has_rowid(conn, t) for t in LONG)
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
