"""The Starlette app through a real ``kbtool serve`` subprocess (uvicorn on 127.0.0.1)."""

from __future__ import annotations

import json
import socket
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from kbtool.kb.db import open_rw
from kbtool.kb.gate import upsert_symbol
from tests.support.web import ROOT, ServerProcess, copy_kb, env, kbtool_cmd, request


@pytest.fixture(scope="module")
def server(kb, tmp_path_factory):
    path = copy_kb(kb, tmp_path_factory.mktemp("http") / "served.db")
    with ServerProcess(
        path, "--allow-host", "kb.test", "--allow-host", "proxy.example:8080"
    ) as srv:
        yield srv


def get_json(server, path, **kw):
    status, headers, body = request(server.port, path, **kw)
    assert headers["content-type"].startswith("application/json")
    return status, headers, json.loads(body)


def test_url_printed_once(server):
    assert server.out[0].strip().startswith(f"kbtool dashboard on http://127.0.0.1:{server.port}/")


def test_page_headers_and_csp(server):
    status, headers, body = request(server.port, "/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    csp = [d.strip() for d in headers["content-security-policy"].split(";")]
    for directive in (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
        "require-trusted-types-for 'script'",
        "trusted-types 'none'",
    ):
        assert directive in csp
    assert (
        "unsafe" not in headers["content-security-policy"]
        and "sha256-" not in headers["content-security-policy"]
    )
    assert (
        b"<style" not in body and b'<script type="module" src="/static/main.js"></script>' in body
    )
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"
    assert headers["x-frame-options"] == "DENY"
    assert "server" not in headers


@pytest.mark.parametrize(
    "name,ctype",
    [
        ("main.js", "text/javascript"),
        ("dom.js", "text/javascript"),
        ("heatmap.js", "text/javascript"),
        ("dashboard.css", "text/css"),
        ("provenance.css", "text/css"),
    ],
)
def test_static_files(server, name, ctype):
    status, headers, body = request(server.port, "/static/" + name)
    assert status == 200 and headers["content-type"].startswith(ctype) and body
    assert headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    "path",
    [
        "/static/../kbtool/web/router.py",
        "/static/%2e%2e/router.py",
        "/static/",
        "/static/router.py",
        "/static/main.js/x",
        "/static//etc/passwd",
    ],
)
def test_static_outside_the_whitelist_404(server, path):
    status, headers, body = request(server.port, path)
    assert status == 404 and list(json.loads(body)) == ["error"]


@pytest.mark.parametrize(
    "headers,ok",
    [
        ({}, True),
        ({"Sec-Fetch-Site": "same-origin"}, True),
        ({"Sec-Fetch-Site": "none"}, True),
        ({"Sec-Fetch-Site": "cross-site"}, False),
        ({"Sec-Fetch-Site": "same-site"}, False),  # another port of 127.0.0.1 is same-site
        ({"Origin": "http://127.0.0.1:{port}"}, True),
        ({"Origin": "http://127.0.0.1:{port}", "Sec-Fetch-Site": "same-origin"}, True),
        ({"Origin": "http://127.0.0.1:1"}, False),
        ({"Origin": "http://localhost:{port}"}, False),  # Host says 127.0.0.1: another origin
        ({"Origin": "https://127.0.0.1:{port}"}, False),
        ({"Origin": "https://evil.example"}, False),
        ({"Origin": "null"}, False),
    ],
)
@pytest.mark.parametrize(
    "path", ["/api/diff?from={a}&to={b}", "/api/versions", "/static/main.js", "/"]
)
def test_cross_origin_requests_refused(server, kb, headers, ok, path):
    h = {k: v.format(port=server.port) for k, v in headers.items()}
    url = path.format(a=kb.version_ids[-1], b=kb.version_ids[0])
    status, resp_headers, body = request(server.port, url, headers=h)
    if ok:
        assert status == 200, (h, url, body[:200])
    else:
        assert status == 403, (h, url)
        assert "cross-origin" in json.loads(body)["error"]


def test_cross_site_navigation_to_the_page_is_answered(server):
    """A link from another site opens the dashboard; its own requests are then same-origin."""
    nav = {
        "Sec-Fetch-Site": "cross-site",
        "Sec-Fetch-Mode": "navigate",
        "Sec-Fetch-Dest": "document",
    }
    assert request(server.port, "/", headers=nav)[0] == 200
    assert request(server.port, "/api/versions", headers=nav)[0] == 403


def test_expensive_routes_are_bounded(kb, monkeypatch):
    """At most two diffs compute at once; the next waits (bounded), then gets 503 + Retry-After."""
    import threading

    from kbtool.web import app as webapp
    from tests.support.web import held_client

    client, release, entered = held_client(monkeypatch, kb.path, lambda p, q: p == "/api/diff")
    url = f"/api/diff?from={kb.version_ids[-1]}&to={kb.version_ids[0]}"
    results: list = []

    def get(u):
        r = client.get(u)
        results.append((u, r.status_code, r.headers.get("retry-after"), r.json()))

    first = [threading.Thread(target=get, args=(url,)) for _ in range(2)]
    for t in first:
        t.start()
    for _ in first:
        assert entered.acquire(timeout=30)  # both slots taken
    more = [threading.Thread(target=get, args=(url,)) for _ in range(3)]
    for t in more:
        t.start()
    cheap = client.get("/api/versions")  # cheap routes are not limited
    assert cheap.status_code == 200
    for t in more:
        t.join(30)
    busy = [r for r in results if r[1] == 503]
    assert len(busy) == 3 and all(
        r[2] == str(webapp.RETRY_AFTER) and list(r[3]) == ["error"] for r in busy
    )
    release.set()
    for t in first:
        t.join(30)
    assert sorted(r[1] for r in results) == [200, 200, 503, 503, 503]
    # the slots are free again
    assert client.get(url).status_code == 200


def test_bound_socket_sets_tcp_nodelay():
    """Accepted connections get TCP_NODELAY (no Nagle + delayed-ACK stall on keep-alive)."""
    from kbtool.web.app import bind

    sock = bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        client = socket.create_connection(sock.getsockname())
        conn, _ = sock.accept()
        try:
            assert conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        finally:
            conn.close()
            client.close()
    finally:
        sock.close()


def test_api_over_http(server, kb):
    status, headers, data = get_json(server, "/api/versions")
    assert status == 200 and [v["id"] for v in data] == kb.version_ids
    assert headers["content-security-policy"].startswith("default-src 'none'")
    assert headers["cache-control"] == "no-store"
    vid = kb.version_ids[-1]
    status, _, fns = get_json(server, f"/api/versions/{vid}/functions")
    assert (
        status == 200
        and fns
        and set(fns[0]) == {"index", "stable_id", "type", "name", "provenance", "confidence"}
    )
    assert get_json(server, f"/api/versions/{vid}/coverage")[0] == 200
    assert get_json(server, "/api/search?q=")[2] == []
    assert get_json(server, "/api/search")[2] == []
    status, _, res = get_json(server, "/api/search?q=%3Cscript")
    assert [r["stable_id"] for r in res] == [kb.script_sid]
    assert get_json(server, f"/api/symbol/{kb.script_sid}")[0] == 200
    assert get_json(server, f"/api/history/{kb.history_sid}")[0] == 200


@pytest.mark.parametrize(
    "path,status",
    [
        ("/nope", 404),
        ("/api/versions/999999/functions", 404),
        ("/api/versions/abc/coverage", 400),
        ("/api/symbol/0000000000000000", 404),
        ("/api/symbol/%3Cx%3E", 400),
        ("/api/history/0000000000000000", 404),
        ("/api/diff", 400),
        ("/api/diff?from=1", 400),
        ("/api/diff?from=x&to=1", 400),
        ("/api/diff?from=1&to=999999", 404),
    ],
)
def test_errors_over_http(server, path, status):
    got, _, data = get_json(server, path)
    assert got == status and list(data) == ["error"]


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_methods_405(server, method):
    status, headers, body = request(
        server.port, "/api/versions", method=method, body=b'{"name": "x"}'
    )
    assert status == 405 and list(json.loads(body)) == ["error"]
    assert headers["allow"] == "GET, HEAD"


def test_head(server):
    status, headers, body = request(server.port, "/api/versions", method="HEAD")
    assert status == 200 and body == b""
    _, _, full = request(server.port, "/api/versions")
    assert int(headers["content-length"]) == len(full)


@pytest.mark.parametrize(
    "host,ok",
    [
        ("127.0.0.1", True),
        ("localhost", True),
        ("[::1]", True),
        ("LOCALHOST", True),
        ("127.0.0.1:{port}", True),
        ("localhost:{port}", True),
        ("[::1]:{port}", True),
        ("kb.test", True),
        ("kb.test:{port}", True),
        ("proxy.example", True),
        ("evil.example", False),
        ("evil.example:{port}", False),
        ("127.0.0.1.evil.example", False),
        ("localhost.evil.example", False),
        ("kb.test.evil.example", False),
        ("192.168.1.10", False),
        ("", False),
        (None, False),
    ],
)
def test_host_header_dns_rebinding(server, host, ok):
    h = host.format(port=server.port) if host is not None else None
    for path in ("/", "/api/versions"):
        status, headers, body = request(server.port, path, host=h)
        if ok:
            assert status == 200, (host, path)
        elif host is None:  # HTTP/1.1 without Host: uvicorn (h11) refuses it before the app
            assert status in (400, 403)
        else:
            assert status == 403, (host, path)
            assert list(json.loads(body)) == ["error"]


def test_every_request_reads_the_file_afresh(server, kb):
    """No cache, no long-lived connection: a name written by the CLI shows up at once."""
    conn = open_rw(server.db)
    try:
        upsert_symbol(
            conn,
            kb.unnamed_sid,
            "fresh_name_seen_by_web",
            provenance="human",
            confidence=1.0,
            actor="human:test",
        )
    finally:
        conn.close()
    _, _, res = get_json(server, "/api/search?q=fresh_name_seen")
    assert [r["stable_id"] for r in res] == [kb.unnamed_sid]


def test_concurrent_requests(server, kb):
    paths = [
        "/api/search?q=a",
        f"/api/versions/{kb.version_ids[0]}/coverage",
        "/",
        f"/api/history/{kb.history_sid}",
    ] * 25
    with ThreadPoolExecutor(16) as pool:
        statuses = list(pool.map(lambda p: request(server.port, p)[0], paths))
    assert statuses == [200] * len(paths)


def test_port_in_use_is_a_clear_error(kb, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        proc = subprocess.run(
            kbtool_cmd("serve", "--db", str(kb.path), "--port", str(port)),
            cwd=ROOT,
            env=env(),
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert proc.returncode == 1
    assert "cannot listen" in proc.stderr and "--port" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_kb_is_a_clear_error(tmp_path):
    proc = subprocess.run(
        kbtool_cmd("serve", "--db", str(tmp_path / "none.db"), "--port", "0"),
        cwd=ROOT,
        env=env(),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 1 and "no KB at" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "none.db").exists()


def test_non_loopback_bind_warns_loudly(kb, monkeypatch, capsys):
    """serve() on 0.0.0.0 prints the warning (bound to loopback here: nothing is exposed)."""
    import uvicorn

    from kbtool.web import app as webapp

    real_bind = webapp.bind
    seen = {}
    monkeypatch.setattr(
        webapp,
        "bind",
        lambda host, port: (seen.setdefault("host", host), real_bind("127.0.0.1", 0))[1],
    )
    monkeypatch.setattr(
        uvicorn.Server, "run", lambda self, sockets=None: seen.setdefault("app", self.config.app)
    )
    webapp.serve(str(kb.path), host="0.0.0.0", port=0)
    err = capsys.readouterr().err
    assert "WARNING" in err and "NO authentication" in err and "0.0.0.0" in err
    assert seen["host"] == "0.0.0.0"
    webapp.serve(str(kb.path), host="127.0.0.1", port=0)
    assert "WARNING" not in capsys.readouterr().err


def test_create_app_is_embeddable(kb):
    """The factory works in-process (Starlette's TestClient, no server)."""
    from starlette.testclient import TestClient

    from kbtool.web.app import create_app

    client = TestClient(create_app(str(kb.path)), base_url="http://127.0.0.1")
    r = client.get("/api/versions")
    assert r.status_code == 200 and r.json()[0]["id"] == kb.version_ids[0]
    assert client.post("/api/versions").status_code == 405
    assert client.get("/api/versions", headers={"host": "evil.example"}).status_code == 403
    r = client.get("/")
    assert r.status_code == 200 and "script-src 'self'" in r.headers["content-security-policy"]
    assert client.get("/api/versions", headers={"sec-fetch-site": "cross-site"}).status_code == 403


def test_server_stops_cleanly_on_sigterm(kb, tmp_path):
    path = copy_kb(kb, tmp_path / "k.db")
    srv = ServerProcess(path)
    with srv:
        pass
    assert srv.proc.returncode in (0, -15)
