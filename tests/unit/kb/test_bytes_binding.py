"""Importing ``kbtool.kb.store`` registers ``bytes.__bytes__`` as pysqlite's adapter for bytes
(pysqlite otherwise misses its registry and fails an attribute lookup on a type for every
bytes value bound: the facts' op arrays, the packed references). The adapter must hand back
the very object and every stored value must be what binding bytes without it stores: a
BLOB of the same bytes, in every column type, for a bytes subclass too."""

from __future__ import annotations

import sqlite3

from hypothesis import given
from hypothesis import strategies as st

from kbtool.kb import store

KEY = (bytes, sqlite3.PrepareProtocol)


class _Sub(bytes):
    pass


def _rows(values: list[bytes]) -> list[tuple]:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (a TEXT, b INTEGER, c REAL, d BLOB, e)")
    conn.executemany("INSERT INTO t VALUES (?,?,?,?,?)", [(v,) * 5 for v in values])
    got = conn.execute(
        "SELECT a, b, c, d, e, typeof(a), typeof(b), typeof(c), typeof(d), typeof(e),"
        " hex(a) FROM t ORDER BY rowid"
    ).fetchall()
    conn.close()
    return got


def test_the_adapter_is_registered_and_hands_back_the_same_object():
    assert sqlite3.adapters.get(KEY) is bytes.__bytes__
    for b in (b"", b"\x00", b"\x00\x01\xff" * 1000, bytes(range(256))):
        assert sqlite3.adapters[KEY](b) is b
    assert store.NULL != store.NULL  # (the module's other stand-in untouched)


@given(st.lists(st.binary(max_size=300), min_size=1, max_size=8))
def test_bytes_store_the_same_with_and_without_the_adapter(values):
    values = [*values, _Sub(values[0])]
    with_adapter = _rows(values)
    saved = sqlite3.adapters.pop(KEY)
    try:
        without = _rows(values)
    finally:
        sqlite3.adapters[KEY] = saved
    assert with_adapter == without
    for v, row in zip(values, with_adapter, strict=True):
        assert row[:5] == (bytes(v),) * 5
        assert row[5:10] == ("blob",) * 5
        assert row[10] == bytes(v).hex().upper()
