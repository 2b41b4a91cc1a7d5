"""``queries.heatmap_rows`` returns named records (issue #25 point 5), still plain tuples."""

from __future__ import annotations

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.kb.queries.functions import HeatmapRow


def test_heatmap_rows_are_named_records_matching_the_function_list(tui_kb):
    conn = open_ro(tui_kb)
    try:
        rows = queries.heatmap_rows(conn, 2)
        entries = queries.list_functions(conn, 2)
    finally:
        conn.close()
    assert rows and all(type(r) is HeatmapRow for r in rows)
    assert HeatmapRow._fields == (
        "index",
        "stable_id",
        "name",
        "provenance",
        "confidence",
        "body_size",
    )
    assert [(r.index, r.stable_id, r.name, r.provenance, r.confidence) for r in rows] == [
        (e["index"], e["stable_id"], e["name"], e["provenance"], e["confidence"]) for e in entries
    ]
    index, stable_id, *_rest, size = rows[0]  # unpacking keeps working
    assert (index, stable_id, size) == (rows[0].index, rows[0].stable_id, rows[0].body_size)
    assert all(r.body_size > 0 for r in rows)
