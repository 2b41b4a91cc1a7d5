"""``data.build(names=...)`` (issue #30, session 30): the labels read the names the caller
gives (a later ingest builds the model before its function rows are written), the KB's
names otherwise; the same names give the same rows."""

from __future__ import annotations

import sqlite3

from kbtool.kb import queries
from kbtool.kb.db import open_rw
from kbtool.services import data as data_model
from kbtool.services.ingest import ingest_file
from kbtool.wasm import analyze_module
from tests.support.paths import DEMO_DIR

Z55 = DEMO_DIR / "zstd-1.5.5.wasm"


def _items(conn: sqlite3.Connection, vid: int) -> list[tuple]:
    return conn.execute(
        "SELECT * FROM data_items WHERE version_id = ? ORDER BY address", (vid,)
    ).fetchall()


def test_given_names_are_the_ones_the_labels_read(tmp_path, monkeypatch) -> None:
    conn = open_rw(tmp_path / "kb.db")
    vid = ingest_file(conn, Z55, label="a").version_id
    data = Z55.read_bytes()
    analysis = analyze_module(data)
    stored = _items(conn, vid)
    kb_names = queries.function_names(conn, vid)
    assert kb_names  # (the demo is named)

    seen: list[dict[int, str]] = []
    real = data_model.role_labels

    def spy(model, analysis, names):
        seen.append(dict(names))
        return real(model, analysis, names)

    monkeypatch.setattr(data_model, "role_labels", spy)
    asked: list[int] = []
    real_q = queries.function_names

    def spy_q(conn, version_id):
        asked.append(version_id)
        return real_q(conn, version_id)

    monkeypatch.setattr(queries, "function_names", spy_q)
    with conn:
        data_model.build(conn, vid, analysis, data)  # (the KB's names, read)
    assert asked == [vid] and seen[-1] == kb_names
    assert _items(conn, vid) == stored
    with conn:
        data_model.build(conn, vid, analysis, data, names=dict(kb_names))
    assert asked == [vid] and seen[-1] == kb_names  # (given: not read)
    assert _items(conn, vid) == stored
    # other names, other labels: every function of the malloc family, its state merged
    fam = {f.index: "malloc" for f in analysis.functions if not f.imported}
    with conn:
        data_model.build(conn, vid, analysis, data, names=fam)
    assert seen[-1] == fam
    other = _items(conn, vid)
    assert other != stored and any(r["label"] == "malloc_state" for r in other)
    conn.close()
