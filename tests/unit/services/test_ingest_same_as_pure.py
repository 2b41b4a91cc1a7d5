"""An ingest through the compiled twins (the decoder's and the data walk's) stores exactly
what the pure code stores: every table of two fresh KBs, row by row (real ``kbtool ingest``
subprocesses, ``KBTOOL_DECODE``/``KBTOOL_DATASCAN`` = compiled / pure). Skips when a twin is
not built (``python -m kbtool.lift.accel build decoder datawalk``)."""

from __future__ import annotations

import pytest

from kbtool.analysis import datawalk_active
from kbtool.wasm import active
from testkit.kbcompare import compare, same_as_pure
from tests.support.paths import corpus_file

pytestmark = pytest.mark.skipif(
    active.load_compiled() is None or datawalk_active.load_compiled() is None,
    reason=f"compiled decoder {active.compiled_state()}, data walk"
    f" {datawalk_active.compiled_state()}",
)


def test_every_stored_row_equal(tmp_path):
    n, diff, _tc, _tp = same_as_pure(corpus_file("release/sql.js-1.12.0.sql-wasm.wasm"), tmp_path)
    assert diff is None
    assert n > 3000  # functions, facts, call edges, data items and references...


def test_compare_names_the_first_difference(tmp_path):
    """The check itself finds a changed row (so an equal answer means something)."""
    import sqlite3

    path = corpus_file("gt/zstd-1.5.7.O2.stripped.wasm")
    same_as_pure(path, tmp_path)
    conn = sqlite3.connect(tmp_path / "pure.db")
    conn.execute("UPDATE data_ref_chunks SET hi_func = hi_func + 1 WHERE chunk = 0")
    conn.commit()
    conn.close()
    n, diff = compare(tmp_path / "compiled.db", tmp_path / "pure.db")
    assert diff is not None and diff.startswith("data_ref_chunks: first differing row")
