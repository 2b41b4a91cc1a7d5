"""``queries.heatmap_cells``: the heatmap worked out by SQLite (issue 30, the TUI's start) gives
the cells, indices and named counts the screen made from ``queries.heatmap_rows``."""

from __future__ import annotations

import random
import sqlite3

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.kb.queries.functions import _code_sql
from kbtool.tui.widgets.heatmap import BUCKETS, cell_code
from kbtool.tui.widgets.palette import PROVENANCES


def _from_rows(conn: sqlite3.Connection, version_id: int):
    rows = queries.heatmap_rows(conn, version_id)
    codes = bytes(cell_code(r.provenance, r.confidence) for r in rows)
    named = [r for r in rows if r.name is not None]
    by_slot = tuple(sum(r.provenance == p for r in named) for p in PROVENANCES if p is not None)
    return codes, [r.index for r in rows], len(named), by_slot


def _cells(conn: sqlite3.Connection, version_id: int):
    cells = queries.heatmap_cells(conn, version_id, PROVENANCES, BUCKETS)
    return cells.codes, list(cells.indices), cells.named, cells.named_by_slot


def test_cells_equal_the_rows_cells(tui_kb):
    conn = open_ro(tui_kb)
    try:
        for v in (1, 2):
            cells = queries.heatmap_cells(conn, v, PROVENANCES, BUCKETS)
            assert isinstance(cells.indices, range)  # a module's defined functions: contiguous
            assert _cells(conn, v) == _from_rows(conn, v)
            assert cells.named > 0 and len(set(cells.codes)) > 1
    finally:
        conn.close()


def test_gaps_in_the_indices_and_odd_symbols(tui_kb):
    conn = sqlite3.connect(tui_kb)
    try:
        idx = [r[0] for r in conn.execute("SELECT idx FROM functions WHERE version_id = 2")]
        conn.execute(
            "UPDATE functions SET imported = 1 WHERE version_id = 2 AND idx = ?", (idx[-3],)
        )
        sids = [r[0] for r in conn.execute("SELECT stable_id FROM symbols ORDER BY stable_id")]
        odd = [("Human", 0.5), ("weird", 0.25), ("agent", 0.25), ("oracle", 0.35), ("human", -1.0)]
        odd += [("export", 7.0), ("diff-carry", 0.05), ("agent", 0.95), ("human", 0.45)]
        for sid, (prov, conf) in zip(sids, odd, strict=False):
            conn.execute(
                "UPDATE symbols SET provenance = ?, confidence = ? WHERE stable_id = ?",
                (prov, conf, sid),
            )
        conn.execute("UPDATE symbols SET name = NULL WHERE stable_id = ?", (sids[-1],))
        conn.commit()
    finally:
        conn.close()
    conn = open_ro(tui_kb)
    try:
        for v in (1, 2):
            assert _cells(conn, v) == _from_rows(conn, v)
        assert not isinstance(queries.heatmap_cells(conn, 2, PROVENANCES, BUCKETS).indices, range)
    finally:
        conn.close()


def test_an_empty_version(tui_kb):
    conn = sqlite3.connect(tui_kb)
    conn.execute("UPDATE functions SET imported = 1 WHERE version_id = 1")
    conn.commit()
    conn.close()
    conn = open_ro(tui_kb)
    try:
        assert _cells(conn, 1) == (b"", [], 0, (0,) * (len(PROVENANCES) - 1))
    finally:
        conn.close()


@pytest.mark.parametrize("seed", [1, 2])
def test_the_code_sql_is_cell_code(seed):
    """Every provenance (and unknown ones) by confidences at and around each bucket's edges
    (the halves round to even as Python's round does), out of range, None and random."""
    rnd = random.Random(seed)
    confs: list[float | None] = [None, 0.0, 1.0, -0.3, -0.05, 1.04, 1.06, 2.0, 1e-300, -0.0]
    confs += [i / 20 for i in range(21)] + [i / 1000 for i in range(-20, 1021)]
    confs += [c + d for c in (0.05, 0.15, 0.25, 0.35, 0.45) for d in (-1e-12, 1e-12)]
    confs += [rnd.random() for _ in range(500)]
    provs = [*PROVENANCES, "weird", "Human", ""]
    conn = sqlite3.connect(":memory:")
    sql = f"SELECT {_code_sql(PROVENANCES, BUCKETS)} FROM (SELECT ? AS p, ? AS c)"
    got = [conn.execute(sql, (p, c)).fetchone()[0] for p in provs for c in confs]
    assert got == [cell_code(p, c) for p in provs for c in confs]
