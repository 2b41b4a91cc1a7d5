"""``store.insert_rows_batched``'s literals for ingest's rows store exactly what one
``executemany`` of the single-row statement stores: a first value shared by a statement's
rows (``lead``), a str or NULL shared by them (``constants``). Statements whose rows differ
there bind the values as given."""

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


_DDL = "CREATE TABLE {} (v INTEGER NOT NULL, a INTEGER, b TEXT, c BLOB, d REAL)"
_COLS = "(v, a, b, c, d)"


def _pair() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute(_DDL.format("one"))
    conn.execute(_DDL.format("many"))
    return conn


def _stored(conn: sqlite3.Connection, table: str) -> list[tuple]:
    sql = f"SELECT rowid, v, typeof(v), a, b, c, typeof(c), d FROM {table} ORDER BY rowid"  # noqa: S608
    return [tuple(r) for r in conn.execute(sql)]


def _same_as_executemany(rows: list[tuple], **kw) -> list[tuple]:
    conn = _pair()
    conn.executemany(f"INSERT INTO one {_COLS} VALUES (?, ?, ?, ?, ?)", rows)
    store.insert_rows_batched(conn, f"INSERT INTO many {_COLS}", "(?, ?, ?, ?, ?)", rows, **kw)
    many = _stored(conn, "many")
    assert many == _stored(conn, "one")
    return many


def _row(v, i: int, c) -> tuple:
    return (v, i, f"t{i}" if i % 3 else None, c, store.NULL if i % 4 else i / 7)


@pytest.mark.parametrize("n", [1, 99, 100, 101, 250])
def test_one_version_id(n: int) -> None:
    rows = [_row(3, i, bytes([i % 256]) * (i % 5)) for i in range(n)]
    got = _same_as_executemany(rows, lead=True)
    assert {(r[1], r[2]) for r in got} == {(3, "integer")}
    assert {r[6] for r in got} == {"blob"}


def test_first_values_that_differ_between_or_inside_statements() -> None:
    rows = [_row(1 if i < 150 else 2, i, b"x") for i in range(300)]
    rows[20] = _row(7, 20, b"y")  # (one row of the first statement differs)
    rows[230] = _row(2.0, 230, b"z")  # (equal to the lead, a float: stored as the int)
    got = _same_as_executemany(rows, lead=True)
    assert [r[1] for r in got][:21] == [1] * 20 + [7]
    assert got[230][1:3] == (2, "integer")


def test_a_column_of_mixed_types_is_bound_as_given() -> None:
    rows = [_row(1, i, b"ab" if i % 7 else (None if i % 2 else "text")) for i in range(210)]
    got = _same_as_executemany(rows, lead=True)
    assert {r[6] for r in got} == {"blob", "null", "text"}


def test_an_int_first_value_past_64_bits_is_bound_not_written_as_a_real() -> None:
    conn = _pair()
    rows = [_row(2**63, i, b"") for i in range(3)]
    with pytest.raises(OverflowError):  # (what binding it does; a literal would be a REAL)
        store.insert_rows_batched(
            conn, f"INSERT INTO many {_COLS}", "(?, ?, ?, ?, ?)", rows, lead=True
        )


def test_a_row_of_the_wrong_width_still_writes_nothing() -> None:
    conn = _pair()
    rows = [*(_row(1, i, b"") for i in range(150)), (1, 2, "x")]
    with pytest.raises(sqlite3.ProgrammingError):
        store.insert_rows_batched(
            conn, f"INSERT INTO many {_COLS}", "(?, ?, ?, ?, ?)", rows, lead=True
        )
    assert conn.execute("SELECT count(*) FROM many").fetchone()[0] == 0


def _text_rows(n: int, odd: dict[int, object]) -> list[tuple]:
    return [(1, i, odd.get(i, "[]"), b"", store.NULL) for i in range(n)]


@pytest.mark.parametrize(
    "odd",
    [
        {},
        {150: "[7]"},  # (a later statement where the constant does not hold)
        {3: "x"},  # (not constant in the first statement: always bound)
        {120: None, 121: store.NULL, 122: float("nan"), 123: 5, 124: "[]"[:1] + "]"},
    ],
)
def test_constant_texts_and_nulls_as_literals(odd: dict[int, object]) -> None:
    rows = _text_rows(260, odd)
    got = _same_as_executemany(rows, lead=True, constants=True)
    texts = [r[4] for r in got]
    assert texts.count("[]") == 260 - len(odd) + (124 in odd)
    assert [texts[i] for i in sorted(odd) if odd[i] is None or odd[i] != odd[i]] == [
        None for i in odd if odd[i] is None or odd[i] != odd[i]
    ]
    if 123 in odd:  # (an int bound into TEXT: stored as its text, as bound)
        assert texts[123] == "5"


@pytest.mark.parametrize("text", ["it's", "a\x00b", "ünï", "?", "'); DROP TABLE many; --"])
def test_awkward_texts_store_as_bound(text: str) -> None:
    rows = [(1, i, text, None, store.NULL) for i in range(130)]
    got = _same_as_executemany(rows, lead=True, constants=True)
    assert {r[4] for r in got} == {text}


def test_a_long_constant_text_is_bound() -> None:
    text = "x" * 5000
    rows = [(1, i, text, None, store.NULL) for i in range(120)]
    got = _same_as_executemany(rows, lead=True, constants=True)
    assert {r[4] for r in got} == {text}
