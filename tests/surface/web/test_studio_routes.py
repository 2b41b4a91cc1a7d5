"""Studio JSON routes: /api/analysis, /api/renames, /api/events (read-only, 404/400 JSON)."""

from __future__ import annotations

import hashlib
import json

from kbtool.kb import queries
from kbtool.kb.db import open_rw
from kbtool.kb.gate import upsert_symbol
from kbtool.services.deep import run_deep
from kbtool.web.router import route


def _get(db, path, **q):
    status, ctype, body = route(str(db), path, {k: [v] for k, v in q.items()})
    assert ctype == "application/json" and b"Traceback" not in body
    return status, json.loads(body)


def test_studio_routes(demo_kb):
    conn = open_rw(demo_kb)
    f = queries.get_function(conn, 2, 60)
    sid = f["stable_id"]
    status, body = _get(demo_kb, f"/api/analysis/{sid}")
    assert status == 404 and "kbtool deep" in body["error"]
    assert _get(demo_kb, "/api/analysis/nope-nope")[0] == 404
    assert _get(demo_kb, "/api/analysis/bad%20id")[0] == 400
    _status, feed0 = _get(demo_kb, "/api/events")
    run_deep(conn, 2, functions=[60])
    upsert_symbol(conn, sid, "first_name", provenance="human", confidence=1.0, actor="human:t")
    upsert_symbol(conn, sid, "second_name", provenance="human", confidence=1.0, actor="human:t")
    conn.close()
    before = hashlib.sha256(demo_kb.read_bytes()).hexdigest()

    status, rec = _get(demo_kb, f"/api/analysis/{sid}")
    assert status == 200
    assert {"raw_c", "clean_c", "understanding", "rename_map", "status", "confidence"} <= set(rec)
    status, trail = _get(demo_kb, f"/api/renames/{sid}")
    assert status == 200 and [t["to"] for t in trail[:2]] == ["second_name", "first_name"]
    assert _get(demo_kb, "/api/renames/unknown_sid")[0] == 404

    status, feed = _get(demo_kb, "/api/events", since=str(feed0["last_id"]))
    assert status == 200 and feed["events"] and feed["last_id"] > feed0["last_id"]
    assert all(e["id"] > feed0["last_id"] for e in feed["events"])
    status, tail = _get(demo_kb, "/api/events", since=str(feed["last_id"]))
    assert tail == {"last_id": feed["last_id"], "events": []}
    assert _get(demo_kb, "/api/events", since="-1")[0] == 400
    assert _get(demo_kb, "/api/events", since="abc")[0] == 400
    status, page = _get(demo_kb, "/api/events", since="0", limit="2")
    assert status == 200 and len(page["events"]) == 2
    assert hashlib.sha256(demo_kb.read_bytes()).hexdigest() == before  # read-only


def test_history_carries_the_analysis_of_the_function(demo_kb):
    from kbtool.services.analyze import analyze_version

    conn = open_rw(demo_kb)
    _status, before = _get(
        demo_kb, "/api/history/" + queries.get_function(conn, 2, 27)["stable_id"]
    )
    assert before["threads"] == [] and before["structs"] == []  # not analysed yet
    result = analyze_version(conn, 2)
    member = next(
        m["func_index"]
        for s in result["structs"]
        for m in s.get("members", [])
        if isinstance(m, dict)
    )
    sid = queries.get_function(conn, 2, member)["stable_id"]
    conn.close()
    status, hist = _get(demo_kb, f"/api/history/{sid}", version="2")
    assert status == 200 and hist["structs"]
    assert all({"name", "fields"} <= set(s) for s in hist["structs"])
