"""`kbtool serve`: a function panel opened on a version (``/api/history/SID?version=V``, what
the dashboard asks first for a deep link) makes V ready for the code routes at once, so the
panel's first lines, asked one round trip later, wait less (issue 30 point 1): its light
module when its preparation is kept on disk (kbtool.services.code_first; the first lines'
answer then prepares it in the background), else V prepared."""

from __future__ import annotations

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.services import code, code_first
from tests.support.codefixtures import code_kb_fixture  # noqa: F401  (fixture)


def test_history_of_a_version_prepares_it(code_kb):
    from starlette.testclient import TestClient

    from kbtool.web import app as webapp

    code.clear_cache()
    app = webapp.create_app(str(code_kb), prepare_ahead=True)
    adapter = app.state.adapter
    client = TestClient(app, base_url="http://127.0.0.1")
    conn = open_ro(code_kb)
    try:
        sid = queries.list_functions(conn, 1)[0]["stable_id"]
        assert client.get(f"/api/history/{sid}").status_code == 200
        assert adapter.panel_prepared is None  # no version asked: nothing prepared
        assert client.get(f"/api/history/{sid}?version=x1").status_code == 400
        assert adapter.panel_prepared is None
        assert not code.is_cached(conn, 1)
        assert client.get(f"/api/history/{sid}?version=1").status_code == 200
        assert adapter.panel_prepared is not None
        adapter.panel_prepared.join(timeout=60)
        assert code.is_cached(conn, 1) or code_first.has_light(conn, 1)
        index = queries.list_functions(conn, 1)[0]["index"]
        r = client.get(f"/api/disasm/1/{index}?kind=wasm&offset=0&limit=300")
        assert r.status_code == 200 and r.json()["stable_id"] == sid
        adapter.prepared.result(timeout=60)  # the first lines' answer prepares it after
        assert code.is_cached(conn, 1)
        # an unknown version: the history answers as before, the preparation gives up quietly
        assert client.get(f"/api/history/{sid}?version=99").status_code == 200
        adapter.panel_prepared.join(timeout=60)
        assert not adapter.panel_prepared.is_alive()
    finally:
        conn.close()
        code.clear_cache()


def test_history_prepares_nothing_without_prepare_ahead(code_kb):
    from starlette.testclient import TestClient

    from kbtool.web import app as webapp

    code.clear_cache()
    app = webapp.create_app(str(code_kb))
    client = TestClient(app, base_url="http://127.0.0.1")
    conn = open_ro(code_kb)
    try:
        sid = queries.list_functions(conn, 1)[0]["stable_id"]
        assert client.get(f"/api/history/{sid}?version=1").status_code == 200
        assert app.state.adapter.panel_prepared is None and not code.is_cached(conn, 1)
    finally:
        conn.close()
        code.clear_cache()
