"""Ingest binds ``kbtool.kb.store.NULL`` (a NaN float) where a function row has no value:
pysqlite binds a float without its adapter lookup of a ``None``, and SQLite stores a NaN
double as NULL. The stored rows must be exactly what binding ``None`` stores (NULL, never a
REAL), in every column type, on a first ingest and on a later one (carried and new rows)."""

from __future__ import annotations

import math
import sqlite3

from hypothesis import given
from hypothesis import strategies as st

from kbtool.kb import store
from kbtool.kb.db import open_rw
from kbtool.services.ingest import ingest_file
from tests.support.paths import DEMO_DIR

V1 = DEMO_DIR / "zstd-1.5.5.wasm"
V2 = DEMO_DIR / "zstd-1.5.6.wasm"
NULLABLE = (
    "import_module",
    "import_field",
    "body_hash",
    "shape_hash",
    "raw_name",
    "prev_index",
    "match_score",
)


def test_this_sqlite_stores_the_nan_as_null():
    conn = sqlite3.connect(":memory:")
    assert math.isnan(store.NULL)
    assert store.null_binds_as_null(conn)
    conn.execute("CREATE TABLE t (a TEXT, b INTEGER, c REAL, d BLOB, e)")
    conn.execute("INSERT INTO t VALUES (?,?,?,?,?)", (store.NULL,) * 5)
    conn.execute("INSERT INTO t VALUES (?,?,?,?,?)", (None,) * 5)
    rows = conn.execute("SELECT a, b, c, d, e, typeof(a), typeof(c), typeof(e) FROM t").fetchall()
    assert rows[0] == rows[1] == (None,) * 5 + ("null",) * 3


@given(
    st.lists(
        st.one_of(
            st.none(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False), st.text()
        ),
        min_size=1,
        max_size=6,
    )
)
def test_null_for_none_stores_the_same_row(values):
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (a TEXT, b INTEGER, c REAL, d)")
    for v in values:
        conn.execute("DELETE FROM t")
        conn.execute("INSERT INTO t VALUES (?,?,?,?)", (v,) * 4)
        conn.execute("INSERT INTO t VALUES (?,?,?,?)", (store.NULL if v is None else v,) * 4)
        a, b = conn.execute("SELECT a, b, c, d, typeof(a), typeof(b), typeof(c), typeof(d) FROM t")
        assert a == b


def _function_rows(conn, version_id):
    cols = ", ".join(f"{c}, typeof({c})" for c in NULLABLE)
    return conn.execute(
        f"SELECT idx, match_method, {cols} FROM functions WHERE version_id = ? ORDER BY idx",  # noqa: S608
        (version_id,),
    ).fetchall()


def test_ingest_stores_null_not_nan(tmp_path):
    conn = open_rw(str(tmp_path / "kb.db"), create=True)
    first = ingest_file(conn, str(V1), label="1")
    later = ingest_file(conn, str(V2), label="2")
    assert later.parent_version_id == first.version_id and later.carried > 0
    for vid in (first.version_id, later.version_id):
        rows = _function_rows(conn, vid)
        assert rows
        for r in rows:
            values = dict(zip(NULLABLE, r[2::2], strict=True))
            types = dict(zip(NULLABLE, r[3::2], strict=True))
            for c in NULLABLE:
                assert (values[c] is None) == (types[c] == "null"), (r, c)
                if values[c] is not None:
                    assert not (isinstance(values[c], float) and math.isnan(values[c]))
            if r[1] == "new":  # no parent function: no index nor score
                assert values["prev_index"] is None and values["match_score"] is None
            else:
                assert isinstance(values["prev_index"], int)
                assert types["match_score"] == "real"
            for c in ("import_module", "import_field", "body_hash", "shape_hash", "raw_name"):
                assert types[c] in ("text", "null")
    imported = conn.execute(
        "SELECT count(*) FROM functions WHERE imported = 1 AND import_module IS NOT NULL"
    ).fetchone()[0]
    defined_null = conn.execute(
        "SELECT count(*) FROM functions WHERE imported = 0 AND import_module IS NULL"
        " AND import_field IS NULL"
    ).fetchone()[0]
    assert imported > 0 and defined_null == first.defined + later.defined
    conn.close()
