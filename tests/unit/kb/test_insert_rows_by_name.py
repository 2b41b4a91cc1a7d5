"""Ingest's bulk writer (:func:`kbtool.kb.store._insert_rows`) binds by position but takes
each value by its column name: rows whose keys come in another order land in the right
columns, a row missing a column fails and the transaction leaves nothing behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbtool.kb import store
from kbtool.kb.db import open_rw, transaction


def test_values_are_taken_by_name_whatever_the_key_order(tmp_path: Path) -> None:
    conn = open_rw(tmp_path / "kb.db")
    first = {"version_id": 1, "caller": 3, "callee": 7}
    other = {"callee": 9, "version_id": 1, "caller": 4}  # same keys, another order
    with transaction(conn):
        store.insert_call_edges(conn, [first, other])
        pid = store.ensure_program(conn, "p")
    rows = conn.execute("SELECT version_id, caller, callee FROM call_edges ORDER BY caller")
    assert [tuple(r) for r in rows] == [(1, 3, 7), (1, 4, 9)]
    assert conn.execute("SELECT name FROM programs WHERE id = ?", (pid,)).fetchone()[0] == "p"
    with pytest.raises(KeyError), transaction(conn):
        store.insert_call_edges(conn, [{"version_id": 2, "caller": 1, "callee": 2}, {"caller": 5}])
    assert conn.execute("SELECT count(*) FROM call_edges WHERE version_id = 2").fetchone()[0] == 0
    conn.close()
