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


def test_serve_prepares_the_newest_version_at_start(code_kb):
    """``kbtool serve`` prepares the newest version (what the studio opens first) as it
    starts, before any request, and the one before it (test_serve_start_prepares.py: only
    those two)."""
    from kbtool.kb import queries
    from kbtool.web import app as webapp

    code.clear_cache()
    conn = open_ro(code_kb)
    try:
        ids = [v["id"] for v in queries.list_versions(conn)]
        assert not any(code.is_cached(conn, v) for v in ids)
        app = webapp.create_app(str(code_kb), prepare_ahead=True, prepare_at_start=True)
        app.state.adapter.prepared.result(timeout=60)
        assert [v for v in ids if code.is_cached(conn, v)] == sorted(ids)[-2:]
    finally:
        conn.close()
        code.clear_cache()


def test_serve_start_on_a_kb_without_versions_prepares_nothing(tmp_path):
    from kbtool.kb.db import open_rw
    from kbtool.web import app as webapp

    db = tmp_path / "empty.db"
    open_rw(str(db)).close()
    code.clear_cache()
    app = webapp.create_app(str(db), prepare_at_start=True)
    assert app.state.adapter.prepared.result(timeout=60) is None  # no error, nothing kept
    missing = webapp.create_app(str(tmp_path / "gone.db"), prepare_at_start=True)
    assert missing.state.adapter.prepared.result(timeout=60) is None
    assert not (tmp_path / "gone.db").exists()  # read-only: nothing created
