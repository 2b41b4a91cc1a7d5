"""The Starlette app through a real ``kbtool serve`` subprocess (uvicorn on 127.0.0.1)."""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kbtool.kb.db import open_rw
from kbtool.kb.gate import upsert_symbol
from tests.test_web_fixtures import copy_kb, web_kb

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kbtool_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "kbtool.cli", *args]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("COLUMNS", "200")
    return env


class ServerProcess:
    """``kbtool serve --db PATH --port N`` in a subprocess, stopped on exit."""

    def __init__(self, db: Path, *extra: str, port: int | None = None) -> None:
        self.db, self.extra = db, extra
        self.port = port or free_port()
        self.proc: subprocess.Popen[str] | None = None
        self.out: list[str] = []

    def __enter__(self) -> ServerProcess:
        self.proc = subprocess.Popen(
            kbtool_cmd("serve", "--db", str(self.db), "--port", str(self.port), *self.extra),
            cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()  # the URL, printed once when listening
        self.out.append(line)
        if f":{self.port}/" not in line:
            self.proc.kill()
            raise RuntimeError(f"server did not start: {line!r} {self.proc.stderr.read()!r}")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                if request(self.port, "/api/versions")[0] == 200:
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("server never answered")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream:
                stream.close()


def request(port: int, path: str, *, method: str = "GET", host: str | None = "default",
            body: bytes | None = None, headers: dict[str, str] | None = None):
    """One raw HTTP/1.1 request; ``host=None`` sends no Host header at all."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        if host == "default":
            host = f"127.0.0.1:{port}"
        if host is not None:
            conn.putheader("Host", host)
        for k, v in (headers or {}).items():
            conn.putheader(k, v)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
    finally:
        conn.close()


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    return web_kb(tmp_path_factory.getbasetemp())


@pytest.fixture(scope="module")
def server(kb, tmp_path_factory):
    path = copy_kb(kb, tmp_path_factory.mktemp("http") / "served.db")
    with ServerProcess(path, "--allow-host", "kb.test", "--allow-host", "proxy.example:8080") as srv:
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
    csp = headers["content-security-policy"]
    assert "default-src 'none'" in csp and "'unsafe-inline'" not in csp and "'unsafe-eval'" not in csp
    assert "frame-ancestors 'none'" in csp and "connect-src 'self'" in csp
    script = re.search(rb"<script>(.*?)</script>", body, re.S).group(1)
    style = re.search(rb"<style>(.*?)</style>", body, re.S).group(1)
    for block in (script, style):
        digest = base64.b64encode(hashlib.sha256(block).digest()).decode()
        assert f"'sha256-{digest}'" in csp
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"
    assert "server" not in headers


def test_api_over_http(server, kb):
    status, headers, data = get_json(server, "/api/versions")
    assert status == 200 and [v["id"] for v in data] == kb.version_ids
    assert headers["content-security-policy"].startswith("default-src 'none'")
    assert headers["cache-control"] == "no-store"
    vid = kb.version_ids[-1]
    status, _, fns = get_json(server, f"/api/versions/{vid}/functions")
    assert status == 200 and fns and set(fns[0]) == {"index", "stable_id", "type", "name", "provenance", "confidence"}
    assert get_json(server, f"/api/versions/{vid}/coverage")[0] == 200
    assert get_json(server, "/api/search?q=")[2] == []
    assert get_json(server, "/api/search")[2] == []
    status, _, res = get_json(server, "/api/search?q=%3Cscript")
    assert [r["stable_id"] for r in res] == [kb.script_sid]
    assert get_json(server, f"/api/symbol/{kb.script_sid}")[0] == 200
    assert get_json(server, f"/api/history/{kb.history_sid}")[0] == 200


@pytest.mark.parametrize("path,status", [
    ("/nope", 404), ("/api/versions/999999/functions", 404), ("/api/versions/abc/coverage", 400),
    ("/api/symbol/0000000000000000", 404), ("/api/symbol/%3Cx%3E", 400), ("/api/history/0000000000000000", 404),
    ("/api/diff", 400), ("/api/diff?from=1", 400), ("/api/diff?from=x&to=1", 400), ("/api/diff?from=1&to=999999", 404),
])
def test_errors_over_http(server, path, status):
    got, _, data = get_json(server, path)
    assert got == status and list(data) == ["error"]


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_methods_405(server, method):
    status, headers, body = request(server.port, "/api/versions", method=method, body=b'{"name": "x"}')
    assert status == 405 and list(json.loads(body)) == ["error"]
    assert headers["allow"] == "GET, HEAD"


def test_head(server):
    status, headers, body = request(server.port, "/api/versions", method="HEAD")
    assert status == 200 and body == b""
    _, _, full = request(server.port, "/api/versions")
    assert int(headers["content-length"]) == len(full)


@pytest.mark.parametrize("host,ok", [
    ("127.0.0.1", True), ("localhost", True), ("[::1]", True), ("LOCALHOST", True), ("127.0.0.1:{port}", True),
    ("localhost:{port}", True), ("[::1]:{port}", True), ("kb.test", True), ("kb.test:{port}", True),
    ("proxy.example", True),
    ("evil.example", False), ("evil.example:{port}", False), ("127.0.0.1.evil.example", False),
    ("localhost.evil.example", False), ("kb.test.evil.example", False), ("192.168.1.10", False),
    ("", False), (None, False),
])
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
        upsert_symbol(conn, kb.unnamed_sid, "fresh_name_seen_by_web", provenance="human",
                      confidence=1.0, actor="human:test")
    finally:
        conn.close()
    _, _, res = get_json(server, "/api/search?q=fresh_name_seen")
    assert [r["stable_id"] for r in res] == [kb.unnamed_sid]


def test_concurrent_requests(server, kb):
    paths = ["/api/search?q=a", f"/api/versions/{kb.version_ids[0]}/coverage", "/",
             f"/api/history/{kb.history_sid}"] * 25
    with ThreadPoolExecutor(16) as pool:
        statuses = list(pool.map(lambda p: request(server.port, p)[0], paths))
    assert statuses == [200] * len(paths)


def test_port_in_use_is_a_clear_error(kb, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        proc = subprocess.run(kbtool_cmd("serve", "--db", str(kb.path), "--port", str(port)),
                              cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1
    assert "cannot listen" in proc.stderr and "--port" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_kb_is_a_clear_error(tmp_path):
    proc = subprocess.run(kbtool_cmd("serve", "--db", str(tmp_path / "none.db"), "--port", "0"),
                          cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1 and "no KB at" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "none.db").exists()


def test_non_loopback_bind_warns_loudly(kb, monkeypatch, capsys):
    """serve() on 0.0.0.0 prints the warning (bound to loopback here: nothing is exposed)."""
    import uvicorn

    from kbtool.web import app as webapp

    real_bind = webapp.bind
    seen = {}
    monkeypatch.setattr(webapp, "bind", lambda host, port: (seen.setdefault("host", host), real_bind("127.0.0.1", 0))[1])
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: seen.setdefault("app", self.config.app))
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
    assert r.status_code == 200 and "sha256-" in r.headers["content-security-policy"]


def test_server_stops_cleanly_on_sigterm(kb, tmp_path):
    path = copy_kb(kb, tmp_path / "k.db")
    srv = ServerProcess(path)
    with srv:
        pass
    assert srv.proc.returncode in (0, -15)
