"""No HTTP route can write: every route, every method, SQL injection in every parameter.

The KB file's bytes (and its WAL, if any) are hashed before and after; the logical content
is compared too. The router is driven directly (every combination) and through a real
``kbtool serve`` subprocess (every route and parameter, a smaller set of payloads).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import urllib.parse
from pathlib import Path

import pytest

from kbtool.kb.db import open_ro
from kbtool.web.router import route
from tests.support.web import INJECTIONS, METHODS, ServerProcess, request


def _routes(kb, p: str) -> list[tuple[str, dict[str, list[str]]]]:
    """Every route with ``p`` placed in each of its parameters in turn."""
    v = str(kb.version_ids[0])
    q = urllib.parse.quote(p, safe="")
    return [
        ("/", {"x": [p]}),
        ("/api/versions", {"id": [p]}),
        (f"/api/versions/{q}/functions", {}),
        (f"/api/versions/{v}/functions", {"include_imports": [p]}),
        (f"/api/versions/{q}/coverage", {}),
        ("/api/diff", {"from": [p], "to": [v]}),
        ("/api/diff", {"from": [v], "to": [p]}),
        ("/api/diff", {"from": [p], "to": [p]}),
        ("/api/changelog", {"from": [p], "to": [v]}),
        ("/api/changelog", {"from": [v], "to": [p]}),
        ("/api/search", {"q": [p]}),
        ("/api/search", {"q": [p], "limit": [p]}),
        ("/api/search", {"q": ["#1"], "version": [p]}),
        ("/api/search", {"string": [p]}),
        ("/api/search", {"const": [p], "version": [v]}),
        (f"/api/symbol/{q}", {}),
        (f"/api/history/{q}", {}),
        (f"/api/history/{kb.history_sid}", {"version": [p]}),
        ("/api/provenance", {"x": [p]}),
        (f"/api/analysis/{q}", {}),
        (f"/api/renames/{q}", {}),
        ("/api/events", {"since": [p]}),
        ("/api/events", {"since": ["0"], "limit": [p]}),
        (f"/api/disasm/{q}/1", {}),
        (f"/api/disasm/{v}/{q}", {}),
        (f"/api/callgraph/{q}", {}),
        (f"/api/disasm/{v}/1", {"kind": [p], "offset": [p], "limit": [p]}),
        (f"/api/strings/{q}", {}),
        (f"/api/strings/{v}", {"q": [p], "offset": [p], "limit": [p]}),
        (f"/api/data/{q}", {}),
        (f"/api/data/{v}", {"kind": [p], "offset": [p], "limit": [p]}),
        (f"/api/globals/{q}", {}),
        (f"/api/xrefs/{q}", {"target": ["g:0"]}),
        (f"/api/xrefs/{v}", {"target": [p], "offset": [p], "limit": [p]}),
        (f"/api/memory/{q}", {"address": ["1024"], "length": ["16"]}),
        (f"/api/memory/{v}", {"address": [p], "length": [p]}),
        ("/api/types", {"offset": [p], "limit": [p]}),
        (f"/api/types/{q}", {"history": [p]}),
    ]


def test_every_route_is_attacked(kb):
    """A new route cannot escape the read-only proof: each pattern is in the list above."""
    from kbtool.web.router import ROUTES

    paths = [path for path, _q in _routes(kb, "x1")]
    for r in ROUTES:
        assert any(r.pattern.match(path) for path in paths), r.pattern.pattern


def _fingerprint(path: Path) -> tuple[str, str]:
    h = hashlib.sha256()
    for suffix in ("", "-wal"):
        f = Path(str(path) + suffix)
        if f.exists():
            h.update(f.read_bytes())
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        dump = hashlib.sha256("\n".join(conn.iterdump()).encode()).hexdigest()
    finally:
        conn.close()
    return h.hexdigest(), dump


def test_router_cannot_write(kb_copy):
    kb, path = kb_copy
    before = _fingerprint(path)
    answers = 0
    for payload in INJECTIONS:
        for p, query in _routes(kb, payload):
            # route() receives the decoded path, as the ASGI server gives it
            decoded = urllib.parse.unquote(p)
            for method in METHODS:
                status, ctype, body = route(str(path), decoded, query, method)
                answers += 1
                assert status < 500, (p, method, body[:200])
                assert b"Traceback" not in body
                if ctype == "application/json" and status != 200:
                    assert list(json.loads(body)) == ["error"]
                if method not in ("GET", "HEAD"):
                    assert status == 405
    assert answers == len(INJECTIONS) * len(_routes(kb, "x")) * len(METHODS)
    assert _fingerprint(path) == before


def test_router_connection_refuses_writes(kb_copy):
    """What the router opens cannot write even if a handler tried to."""
    _, path = kb_copy
    before = _fingerprint(path)
    conn = open_ro(path)
    try:
        for sql in (
            "DELETE FROM symbols",
            "INSERT INTO meta VALUES ('k', 'v')",
            "DROP TABLE versions",
            "CREATE TABLE t (x)",
        ):
            with pytest.raises(sqlite3.OperationalError):
                conn.execute(sql)
        conn.execute("PRAGMA query_only = OFF")  # even then: the file is opened mode=ro
        with pytest.raises(sqlite3.OperationalError):
            conn.execute("DELETE FROM symbols")
    finally:
        conn.close()
    assert _fingerprint(path) == before


def test_http_cannot_write(kb_copy):
    kb, path = kb_copy
    before = _fingerprint(path)
    with ServerProcess(path) as srv:
        for payload in INJECTIONS[:9] + [INJECTIONS[-3]]:
            for p, query in _routes(kb, payload):
                url = p + ("?" + urllib.parse.urlencode(query, doseq=True) if query else "")
                for method in ("GET", "POST", "PUT", "DELETE"):
                    status, headers, body = request(
                        srv.port,
                        url,
                        method=method,
                        body=b"DELETE FROM symbols" if method != "GET" else None,
                    )
                    assert status < 500, (url, method, body[:200])
                    assert b"Traceback" not in body
                    if method != "GET":
                        assert status == 405
    assert _fingerprint(path) == before
