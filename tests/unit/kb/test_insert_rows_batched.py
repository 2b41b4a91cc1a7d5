"""``store.insert_rows_batched`` (ingest's bulk writes, many rows per ``INSERT``) stores
exactly what one ``executemany`` of the single-row statement stores: the same rows in the
same order, whatever the row count against the batch size or SQLite's parameter limit; a
row of the wrong width fails before anything is written."""

from __future__ import annotations

import sqlite3

import pytest

from kbtool.kb import store


@pytest.fixture(autouse=True, params=["as shipped", "every full statement batched"])
def _batching(request, monkeypatch) -> None:
    """Each test twice: with the shipped threshold (a few hundred rows run one by one) and
    with multi-row statements from the first full one (every statement boundary)."""
    if request.param != "as shipped":
        monkeypatch.setattr(store, "MIN_BATCHED_ROWS", 1)


_DDL = "CREATE TABLE {} (v INTEGER, a INTEGER, b TEXT, c BLOB, d REAL)"


def _pair() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute(_DDL.format("one"))
    conn.execute(_DDL.format("many"))
    return conn


def _rows(n: int) -> list[tuple]:
    return [
        (i, f"t{i}" if i % 3 else None, bytes([i % 256]) * (i % 5), store.NULL if i % 4 else i / 7)
        for i in range(n)
    ]


@pytest.mark.parametrize("n", [0, 1, 99, 100, 101, 250, 1003])
def test_same_rows_as_executemany(n: int) -> None:
    conn = _pair()
    rows = _rows(n)
    conn.executemany("INSERT INTO one (v, a, b, c, d) VALUES (7, ?, ?, ?, ?)", rows)
    store.insert_rows_batched(conn, "INSERT INTO many (v, a, b, c, d)", "(7, ?, ?, ?, ?)", rows)
    one = conn.execute("SELECT rowid, * FROM one ORDER BY rowid").fetchall()
    many = conn.execute("SELECT rowid, * FROM many ORDER BY rowid").fetchall()
    assert len(many) == n
    assert many == one
    # the NaN stand-in for None is stored as NULL here too
    assert conn.execute("SELECT count(*) FROM many WHERE d IS NULL").fetchone()[0] == sum(
        1 for i in range(n) if i % 4
    )


def test_a_low_parameter_limit_makes_smaller_statements() -> None:
    conn = _pair()
    conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 10)  # 2 rows of 4 values at most
    rows = _rows(9)
    store.insert_rows_batched(conn, "INSERT INTO many (v, a, b, c, d)", "(1, ?, ?, ?, ?)", rows)
    got = conn.execute("SELECT a, b, c, d FROM many ORDER BY rowid").fetchall()
    assert [r[0] for r in got] == list(range(9))


def test_a_row_of_the_wrong_width_writes_nothing() -> None:
    conn = _pair()
    rows = [*_rows(150), (1, "x", b"", 0.0, 5)]  # (a longer row after the first batch)
    with pytest.raises(sqlite3.ProgrammingError):
        store.insert_rows_batched(conn, "INSERT INTO many (v, a, b, c, d)", "(1, ?, ?, ?, ?)", rows)
    with pytest.raises(sqlite3.ProgrammingError):
        store.insert_rows_batched(conn, "INSERT INTO many (a, b)", "(?, ?)", [(1, "a"), (2,)])
    assert conn.execute("SELECT count(*) FROM many").fetchone()[0] == 0
