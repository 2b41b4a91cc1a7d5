"""``kbtool serve`` prepares the two newest versions as it starts, newest first (issue 30
point 1: the studio opened on the version before the newest shows code without waiting),
and a background preparation waits while a request prepares a version itself (the request's
is what a person waits for)."""

from __future__ import annotations

import shutil
import threading
import time

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.services import code, code_prepared
from kbtool.services.ingest import ingest_bytes
from tests.support.codefixtures import build_module, code_kb_fixture  # noqa: F401  (fixture)


@pytest.fixture
def three(code_kb, tmp_path):
    """The two-release KB with a third release."""
    db = tmp_path / "three.db"
    shutil.copyfile(code_kb, db)
    conn = open_rw(str(db))
    try:
        ingest_bytes(conn, build_module(1), label="app-3", force=True)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    code.clear_cache()
    yield db
    code.clear_cache()


def test_serve_prepares_the_two_newest_versions_at_start(three):
    from kbtool.web import app as webapp

    conn = open_ro(three)
    try:
        ids = [v["id"] for v in queries.list_versions(conn)]
        assert len(ids) == 3 and not any(code.is_cached(conn, v) for v in ids)
        app = webapp.create_app(str(three), prepare_ahead=True, prepare_at_start=True)
        app.state.adapter.prepared.result(timeout=60)
        assert [v for v in ids if code.is_cached(conn, v)] == sorted(ids)[-2:]
    finally:
        conn.close()


def test_a_background_preparation_waits_for_a_request_s_own(three):
    conn = open_ro(three)
    try:
        with code_prepared._LOCK:  # a request's thread is preparing a version
            code_prepared._ASKED[0] += 1
        try:
            soon = code.prepare_soon(str(three), 1)
            time.sleep(0.3)  # far more than this tiny module's preparation
            assert not soon.done() and not code.is_cached(conn, 1)
        finally:
            with code_prepared._LOCK:
                code_prepared._ASKED[0] -= 1
        soon.result(timeout=60)
        assert code.is_cached(conn, 1)
        # a request's own preparation does not wait for anything
        code.clear_cache()
        code.code_module(conn, 2)
        assert code.is_cached(conn, 2) and code_prepared._ASKED[0] == 0
    finally:
        conn.close()


def test_a_background_preparation_waits_while_a_request_is_answered(three, monkeypatch):
    """The web app answers each request within ``answering()``: the background waits
    meanwhile, but never for a request that waits for that very preparation."""
    monkeypatch.setattr(code_prepared, "YIELD_MAX", 600.0)  # no way out but the rule
    conn = open_ro(three)
    try:
        with code_prepared.answering():  # a request is being answered
            soon = code.prepare_soon(str(three), 1)
            time.sleep(0.3)
            assert not soon.done() and not code.is_cached(conn, 1)
            got: list = []

            def request_for_the_same_version() -> None:
                other = open_ro(three)
                try:
                    with code_prepared.answering():
                        got.append(code.code_module(other, 1))
                finally:
                    other.close()

            asker = threading.Thread(target=request_for_the_same_version, daemon=True)
            asker.start()
        # the first request done: the background goes on, and the second request (waiting
        # for it, so not holding it back) gets that preparation
        asker.join(timeout=60)
        assert not asker.is_alive() and got
        soon.result(timeout=60)
        assert code.is_cached(conn, 1) and code_prepared._ASKED[0] == 0
    finally:
        conn.close()


def test_the_version_before_the_newest_waits_for_the_requests_to_go_quiet(three):
    """A page opened right after start prepares what it asks for with nothing beside it:
    the second version is prepared only once no request has been answered for a while."""
    from kbtool.web import app as webapp

    conn = open_ro(three)
    try:
        ids = sorted(v["id"] for v in queries.list_versions(conn))
        app = webapp.create_app(str(three), prepare_at_start=True)
        with code_prepared.answering():  # a page's requests keep coming
            time.sleep(code_prepared.QUIET + 0.5)
            assert not code.is_cached(conn, ids[-2])
        app.state.adapter.prepared.result(timeout=60)
        assert [v for v in ids if code.is_cached(conn, v)] == ids[-2:]
    finally:
        conn.close()
