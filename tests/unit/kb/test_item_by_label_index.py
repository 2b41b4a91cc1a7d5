"""A data item found by its label (what `/api/xrefs?target=<label>` and the MCP xref tools do
first) is one probe of the (version_id, label) index, not a scan of the version's items:
SQLite 3.40 prefers the primary key's version_id prefix when left to choose."""

from __future__ import annotations

from kbtool.kb import datamodel
from kbtool.kb.db import open_ro


def test_item_by_label_probes_the_label_index(demo_kb_master):
    conn = open_ro(demo_kb_master)
    try:
        vid, label, address = conn.execute(
            "SELECT version_id, label, address FROM data_items ORDER BY version_id DESC,"
            " address DESC LIMIT 1"
        ).fetchone()
        ran: list[str] = []
        conn.set_trace_callback(ran.append)
        item = datamodel.item_by_label(conn, vid, label)
        conn.set_trace_callback(None)
        assert item is not None and item["label"] == label and item["address"] == address
        assert datamodel.item_by_label(conn, vid, label + "_nosuch") is None
        query = next(q for q in ran if "FROM data_items" in q)
        plan = " ".join(str(r[-1]) for r in conn.execute("EXPLAIN QUERY PLAN " + query))
        assert "data_items_label" in plan and "label=?" in plan.replace(" ", "")
    finally:
        conn.close()
