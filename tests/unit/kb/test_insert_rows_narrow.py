"""``store.insert_rows_batched`` runs :data:`store.ROWS_PER_NARROW_INSERT` rows per statement
for a row of at most :data:`store.NARROW_ROW` bound values (ingest's call edges)
and :data:`store.ROWS_PER_INSERT` for a wider one; either way the rows stored are exactly
what ``executemany`` of the one-row statement stores, around every batch boundary. Fewer
than :data:`store.MIN_BATCHED_ROWS` rows, and the rows after the last full statement, run
one by one (session 30 S: a statement made once costs its parse)."""

from __future__ import annotations

import sqlite3

import pytest

from kbtool.kb import store

WIDE = store.NARROW_ROW + 1


def _conn(width: int) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    cols = ", ".join(f"c{k}" for k in range(width))
    conn.execute(f"CREATE TABLE one (v INTEGER, {cols})")
    conn.execute(f"CREATE TABLE many (v INTEGER, {cols})")
    return conn


def _rows(n: int, width: int) -> list[tuple]:
    return [
        tuple(
            (i * 31 + k) if k % 3 else (f"s{i}-{k}" if (i + k) % 5 else None) for k in range(width)
        )
        for i in range(n)
    ]


def _insert(conn: sqlite3.Connection, width: int, rows: list[tuple]) -> list[str]:
    cols = ", ".join(f"c{k}" for k in range(width))
    marks = ", ".join("?" * width)
    conn.executemany(f"INSERT INTO one (v, {cols}) VALUES (3, {marks})", rows)  # noqa: S608
    ran: list[str] = []
    conn.set_trace_callback(ran.append)
    store.insert_rows_batched(conn, f"INSERT INTO many (v, {cols})", f"(3, {marks})", rows)
    conn.set_trace_callback(None)
    return [q for q in ran if q.startswith("INSERT")]


def _expected(n: int, per: int) -> int:
    """Statements run for ``n`` rows at ``per`` a statement: the full ones when there are
    enough of them, then one per remaining row."""
    full = n // per if n >= store.MIN_BATCHED_ROWS else 0
    return full + (n - full * per)


@pytest.mark.parametrize("width", [1, 2, store.NARROW_ROW, WIDE, 9, 19])
@pytest.mark.parametrize("extra", [-1, 0, 1, 2])
def test_batches_of_the_row_width_store_what_executemany_stores(width: int, extra: int) -> None:
    per = store.ROWS_PER_NARROW_INSERT if width <= store.NARROW_ROW else store.ROWS_PER_INSERT
    for n in ((store.MIN_BATCHED_ROWS // per + 1) * per + extra, 2 * per + extra):
        conn = _conn(width)
        rows = _rows(n, width)
        statements = _insert(conn, width, rows)
        one = conn.execute("SELECT rowid, * FROM one ORDER BY rowid").fetchall()
        many = conn.execute("SELECT rowid, * FROM many ORDER BY rowid").fetchall()
        assert len(many) == n
        assert many == one
        assert len(statements) == _expected(n, per)
        batched = n >= store.MIN_BATCHED_ROWS
        assert statements[0].count("(3,") == (per if batched else 1)
        assert statements[-1].count("(3,") == (1 if n % per or not batched else per)


def test_narrow_rows_run_more_rows_per_statement_than_wide_ones() -> None:
    assert store.ROWS_PER_NARROW_INSERT > store.ROWS_PER_INSERT
    n = 8 * store.ROWS_PER_NARROW_INSERT
    assert n >= store.MIN_BATCHED_ROWS
    narrow = _conn(2)
    assert len(_insert(narrow, 2, _rows(n, 2))) == n // store.ROWS_PER_NARROW_INSERT
    wide = _conn(WIDE)
    assert len(_insert(wide, WIDE, _rows(n, WIDE))) == n // store.ROWS_PER_INSERT


def test_the_parameter_limit_still_bounds_a_narrow_statement() -> None:
    conn = _conn(2)
    conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 50)  # 25 rows of 2 values at most
    full = store.MIN_BATCHED_ROWS // 25 + 1
    rows = _rows(25 * full + 20, 2)
    statements = _insert(conn, 2, rows)
    assert len(statements) == full + 20
    assert [q.count("(3,") for q in statements[:full]] == [25] * full
    assert (
        conn.execute("SELECT * FROM many ORDER BY rowid").fetchall()
        == conn.execute("SELECT * FROM one ORDER BY rowid").fetchall()
    )
