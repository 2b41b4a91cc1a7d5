"""Ingest's tuple writers (``store.insert_*_values``) name their columns: values land in the
columns the caller lists, in its order, whatever the table's own column order; a row of the
wrong width fails and the transaction leaves nothing behind."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from kbtool.kb import store
from kbtool.kb.db import open_rw, transaction


def test_values_land_in_the_columns_named(tmp_path: Path) -> None:
    conn = open_rw(tmp_path / "kb.db")
    with transaction(conn):
        store.insert_call_edge_values(conn, ("callee", "version_id", "caller"), [(7, 1, 3)])
        store.insert_fact_values(
            conn,
            ("loops", "idx", "version_id", "calls", "call_indirect", "ref_funcs", "consts")
            + ("strings", "globals_used", "mem_ops", "atomic_sites", "ops"),
            [(5, 2, 1, "[3]", 0, "[]", "[42]", "[]", "[]", "[]", 0, b"\x01\x00")],
        )
    assert tuple(conn.execute("SELECT version_id, caller, callee FROM call_edges").fetchone()) == (
        1,
        3,
        7,
    )
    row = conn.execute("SELECT idx, loops, calls, consts, ops FROM facts").fetchone()
    assert tuple(row) == (2, 5, "[3]", "[42]", b"\x01\x00")
    with pytest.raises(sqlite3.ProgrammingError), transaction(conn):
        store.insert_call_edge_values(conn, ("version_id", "caller", "callee"), [(2, 1, 2), (2, 5)])
    assert conn.execute("SELECT count(*) FROM call_edges WHERE version_id = 2").fetchone()[0] == 0
    conn.close()
