"""``store.insert_module_bytes`` writes the module through SQLite's incremental blob I/O:
the stored row is the one a bound value stores (same bytes, a blob, empty included), a
second row for the version is refused, and a rolled back ingest leaves none."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from kbtool.kb import store
from kbtool.kb.db import open_rw, transaction


def _kb(tmp_path: Path) -> sqlite3.Connection:
    conn = open_rw(tmp_path / "kb.db", page_size=1024)  # (a small page: long overflow chains)
    conn.execute("INSERT INTO programs (name, created_at) VALUES ('p', 'x')")
    for label in ("a", "b", "c"):
        conn.execute(
            "INSERT INTO versions (label, sha256, size, imported_functions, defined_functions,"
            " exported_functions, ingested_at, program_id) VALUES (?, ?, 1, 0, 0, 0, 'x', 1)",
            (label, label),
        )
    return conn


@pytest.mark.parametrize("size", [0, 1, 1000, 250_000])
def test_the_row_a_bound_value_stores(tmp_path: Path, size: int) -> None:
    conn = _kb(tmp_path)
    data = os.urandom(size)
    with transaction(conn):
        store.insert_module_bytes(conn, 2, data)
        conn.execute("INSERT INTO modules (version_id, data) VALUES (3, ?)", (data,))
    rows = conn.execute(
        "SELECT version_id, typeof(data), length(data), data FROM modules ORDER BY version_id"
    ).fetchall()
    assert [tuple(r) for r in rows] == [(2, "blob", size, data), (3, "blob", size, data)]
    conn.close()


def test_a_second_row_for_the_version_is_refused(tmp_path: Path) -> None:
    conn = _kb(tmp_path)
    with transaction(conn):
        store.insert_module_bytes(conn, 1, b"first")
    with pytest.raises(sqlite3.IntegrityError), transaction(conn):
        store.insert_module_bytes(conn, 1, b"second")
    assert [tuple(r) for r in conn.execute("SELECT data FROM modules")] == [(b"first",)]
    conn.close()


def test_a_rolled_back_ingest_leaves_no_row(tmp_path: Path) -> None:
    conn = _kb(tmp_path)
    with pytest.raises(RuntimeError), transaction(conn):
        store.insert_module_bytes(conn, 1, b"x" * 5000)
        raise RuntimeError("the ingest fails later")
    assert conn.execute("SELECT count(*) FROM modules").fetchone()[0] == 0
    conn.close()
