"""/api/search navigation forms: ``q=#N`` / ``q=V:N`` by index, ``string=``, ``const=``."""

from __future__ import annotations

import json

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.web.router import route


def _get(db, path, **q):
    status, ctype, body = route(str(db), path, {k: [v] for k, v in q.items()})
    assert ctype == "application/json" and b"Traceback" not in body
    return status, json.loads(body)


def _facts(db, version, index):
    conn = open_ro(str(db))
    try:
        return queries.get_function_facts(conn, version, index), queries.get_function(
            conn, version, index
        )
    finally:
        conn.close()


def test_search_by_index_latest_and_explicit_version(demo_kb_master):
    _f, fn = _facts(demo_kb_master, 2, 51)
    status, hits = _get(demo_kb_master, "/api/search", q="#51")
    assert status == 200 and len(hits) == 1
    assert hits[0]["stable_id"] == fn["stable_id"] and hits[0]["index"] == 51
    assert hits[0]["version_id"] == 2 and hits[0]["name"] == fn["name"]
    _f1, fn1 = _facts(demo_kb_master, 1, 51)
    assert (
        _get(demo_kb_master, "/api/search", q="#51", version="1")[1][0]["stable_id"]
        == fn1["stable_id"]
    )
    assert _get(demo_kb_master, "/api/search", q="1:51")[1][0]["stable_id"] == fn1["stable_id"]
    assert _get(demo_kb_master, "/api/search", q="#999999")[1] == []
    assert _get(demo_kb_master, "/api/search", q="#1", version="77")[0] == 404
    assert _get(demo_kb_master, "/api/search", q="#1", version="x")[0] == 400


def test_name_search_unchanged(demo_kb_master):
    status, hits = _get(demo_kb_master, "/api/search", q="ZSTD_cParam")
    assert status == 200 and hits and all("ZSTD_cParam" in h["name"] for h in hits)
    assert set(hits[0]) == {"stable_id", "name", "provenance", "confidence"}


def test_search_by_string(demo_kb_master):
    facts, _fn = _facts(demo_kb_master, 2, 51)
    needle = facts["referenced_strings"][1]  # "(null)"
    status, hits = _get(demo_kb_master, "/api/search", string=needle.upper())
    assert status == 200 and 51 in [h["index"] for h in hits]
    for h in hits:
        assert h["strings"] and all(needle.lower() in s.lower() for s in h["strings"])
        f, _ = _facts(demo_kb_master, 2, h["index"])
        assert any(needle.lower() in s.lower() for s in f["referenced_strings"])
    assert _get(demo_kb_master, "/api/search", string="no such string anywhere zz")[1] == []


def test_search_by_const(demo_kb_master):
    facts, _fn = _facts(demo_kb_master, 2, 51)
    value = max(c for c in facts["constants"] if isinstance(c, int))
    for spelled in (str(value), hex(value)):
        status, hits = _get(demo_kb_master, "/api/search", const=spelled)
        assert status == 200 and 51 in [h["index"] for h in hits]
        for h in hits:
            assert value in _facts(demo_kb_master, 2, h["index"])[0]["constants"]
    status, body = _get(demo_kb_master, "/api/search", const="0xZZ")
    assert status == 400 and "integer" in body["error"]
    assert _get(demo_kb_master, "/api/search", const="0x" + "f" * 40)[0] == 200
