"""``/api/diff`` asked again is not encoded again (issue 30: a whole ffmpeg diff is 5.7 MB,
~20 ms of encoding per request): the same bytes while the diff cache answers the same report,
each order its own body, and a rename (a new report) is encoded again and shown."""

from __future__ import annotations

import json

import orjson

from kbtool.kb import gate
from kbtool.kb.db import open_rw
from kbtool.services.diff.triage import order_changes
from kbtool.web import router
from tests.support.diff_kb import two_versions_kb


def test_a_diff_asked_again_is_served_from_its_bytes_and_follows_renames(tmp_path, monkeypatch):
    db = str(two_versions_kb(tmp_path))
    encoded: list[int] = []
    real = router._encode

    def counting(value):
        encoded.append(1)
        return real(value)

    monkeypatch.setattr(router, "_encode", counting)
    query = {"from": ["1"], "to": ["2"]}
    first = router.route(db, "/api/diff", query)
    again = router.route(db, "/api/diff", query)
    assert first[0] == 200 and again == first and len(encoded) == 1
    report = json.loads(first[2])
    assert report["changes"]

    for order in ("triage", "index"):
        status, _, body = router.route(db, "/api/diff", {**query, "order": [order]})
        assert status == 200
        assert orjson.loads(body) == {
            **report,
            "order": order,
            "changes": order_changes(report["changes"], order),
        }
    assert router.route(db, "/api/diff", {**query, "order": ["index"]})[2] == body
    assert router.route(db, "/api/diff", query) == first and len(encoded) == 3

    target = next(c for c in report["changes"] if c["to_stable_id"])
    conn = open_rw(db)
    try:
        gate.human_rename(conn, target["to_stable_id"], "renamed_after_answer", actor="test")
        conn.commit()
    finally:
        conn.close()
    after = json.loads(router.route(db, "/api/diff", query)[2])
    names = {c["to_stable_id"]: c["name"] for c in after["changes"]}
    assert names[target["to_stable_id"]] == "renamed_after_answer"
    assert len(encoded) == 4
    # a bad order is still refused, before any diff work
    assert router.route(db, "/api/diff", {**query, "order": ["sideways"]})[0] == 400


def test_a_call_graph_asked_again_is_served_from_its_bytes_and_follows_renames(
    tmp_path, monkeypatch
):
    db = str(two_versions_kb(tmp_path))
    encoded: list[int] = []
    real = router._encode

    def counting(value):
        encoded.append(1)
        return real(value)

    monkeypatch.setattr(router, "_encode", counting)
    first = router.route(db, "/api/callgraph/2")
    assert first[0] == 200 and router.route(db, "/api/callgraph/2") == first
    assert len(encoded) == 1
    graph = json.loads(first[2])
    node = next(n for n in graph["nodes"] if n["stable_id"] and n["status"] != "import")
    conn = open_rw(db)
    try:
        gate.human_rename(conn, node["stable_id"], "renamed_in_graph", actor="test")
        conn.commit()
    finally:
        conn.close()
    after = json.loads(router.route(db, "/api/callgraph/2")[2])
    names = {n["index"]: n["name"] for n in after["nodes"]}
    assert names[node["index"]] == "renamed_in_graph" and len(encoded) == 2
    assert router.route(db, "/api/callgraph/99")[0] == 404
