"""`kbtool serve`: a version's function list (what a page opens first) prepares that
version for the code routes in the background (issue 30), so the first code page does not
parse the module."""

from __future__ import annotations

from kbtool.kb.db import open_ro
from kbtool.services import code
from tests.support.codefixtures import code_kb_fixture  # noqa: F401  (fixture)


def test_web_function_list_prepares_its_version(code_kb):
    from starlette.testclient import TestClient

    from kbtool.web import app as webapp

    code.clear_cache()
    app = webapp.create_app(str(code_kb), prepare_ahead=True)
    client = TestClient(app, base_url="http://127.0.0.1")
    conn = open_ro(code_kb)
    try:
        assert not code.is_cached(conn, 1)
        assert client.get("/api/versions/1/functions").status_code == 200
        assert app.state.adapter.prepared is not None
        app.state.adapter.prepared.result(timeout=60)
        assert code.is_cached(conn, 1)
        assert client.get("/api/versions/99/functions").status_code == 404
    finally:
        conn.close()
        code.clear_cache()
