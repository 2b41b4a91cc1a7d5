"""``/api/versions/{id}/functions?form=cells``: the heatmap's columns (what the dashboard
paints before the whole list), ``latest`` as the id, and the encoded answers kept per KB
change (a write is seen at once)."""

from __future__ import annotations

import json

from kbtool.kb.db import open_rw
from kbtool.kb.gate import upsert_symbol
from kbtool.web import list_routes, router


def get(db, path: str, **query: str) -> tuple[int, object]:
    status, ctype, body = router.route(str(db), path, {k: [v] for k, v in query.items()})
    assert ctype == "application/json" and b"Traceback" not in body
    return status, json.loads(body)


def test_cells_are_the_list_in_columns(kb):
    for vid in kb.version_ids:
        _, fns = get(kb.path, f"/api/versions/{vid}/functions")
        status, cells = get(kb.path, f"/api/versions/{vid}/functions", form="cells")
        assert status == 200 and cells["version_id"] == vid and cells["count"] == len(fns)
        order = cells["provenances"]
        assert order == router.provenance.vocabulary()["order"]
        assert cells["index"] == [f["index"] for f in fns]
        shown = [order[p] for p in cells["provenance"]]
        assert shown == [f["provenance"] if f["name"] else "unnamed" for f in fns]
        assert cells["confidence"] == [f["confidence"] or 0 for f in fns]
        assert cells["coverage"] == get(kb.path, f"/api/versions/{vid}/coverage")[1]
        assert "stable_id" not in json.dumps(cells) and "name" not in cells


def test_latest_is_the_newest_version_and_only_for_cells(kb):
    status, latest = get(kb.path, "/api/versions/latest/functions", form="cells")
    newest = get(kb.path, f"/api/versions/{kb.version_ids[-1]}/functions", form="cells")[1]
    assert status == 200 and latest == newest
    status, err = get(kb.path, "/api/versions/latest/functions")
    assert status == 400 and "malformed version id" in err["error"]
    status, err = get(kb.path, "/api/versions/1/functions", form="names")
    assert status == 400 and err == {"error": "unknown form 'names': use list or cells"}
    status, err = get(kb.path, "/api/versions/999999/functions", form="cells")
    assert status == 404 and "unknown version id 999999" in err["error"]


def test_kept_answers_follow_a_write(kb_copy):
    kb, db = kb_copy
    list_routes.clear()
    vid = kb.version_ids[-1]
    before = get(db, f"/api/versions/{vid}/functions")[1]
    cells = get(db, f"/api/versions/{vid}/functions", form="cells")[1]
    versions = get(db, "/api/versions")[1]
    pos = next(i for i, f in enumerate(before) if f["stable_id"] == kb.unnamed_sid)
    assert cells["provenances"][cells["provenance"][pos]] == "unnamed"
    assert get(db, f"/api/versions/{vid}/functions")[1] == before  # kept: the same answer
    conn = open_rw(db)
    try:
        decision = upsert_symbol(
            conn, kb.unnamed_sid, "now_named", provenance="human", confidence=1.0, actor="human:t"
        )
        assert decision["written"]
    finally:
        conn.close()
    after = get(db, f"/api/versions/{vid}/functions")[1]
    assert after[pos]["name"] == "now_named" and after[pos]["provenance"] == "human"
    cells = get(db, f"/api/versions/{vid}/functions", form="cells")[1]
    assert cells["provenances"][cells["provenance"][pos]] == "human"
    assert cells["confidence"][pos] == 1.0
    assert get(db, "/api/versions")[1] != versions  # its coverage moved
    list_routes.clear()
