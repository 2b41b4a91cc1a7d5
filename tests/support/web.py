"""Helpers of the web tests (not a test module, not fixtures): the hostile strings the
fixture KB holds, a ``kbtool serve`` subprocess, one raw HTTP request, Chromium launch."""

from __future__ import annotations

import hashlib
import http.client
import importlib.util
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.paths import ROOT

XSS_SCRIPT = "<script>window.__xss=1</script>"
XSS_IMG = '<img src=x onerror="window.__xss=2">'
XSS_SUMMARY = "<b>bold?</b><svg onload=window.__xss=3>"
#: a right-to-left override: shown raw, "\u202eexe.txt" reads "txt.exe"
BIDI_NAME = "\u202eexe.txt"
BIDI_SHOWN = "⟨U+202E⟩exe.txt"
BIDI_SUMMARY = "isolate \u2067abc\u2069 and zero width \u200b here"
BIDI_SUMMARY_SHOWN = "isolate ⟨U+2067⟩abc⟨U+2069⟩ and zero width ⟨U+200B⟩ here"

#: what the read-only proofs send in every parameter of every route, and every method
INJECTIONS = [
    "1; DROP TABLE versions; --",
    "1'); DELETE FROM symbols; --",
    "' OR '1'='1",
    "1 OR 1=1",
    "x' UNION SELECT sql FROM sqlite_master --",
    "'; UPDATE symbols SET name='pwned'; --",
    "1); INSERT INTO versions(label) VALUES('evil'); --",
    "%' ; ATTACH DATABASE '/tmp/evil.db' AS e; --",
    '"; PRAGMA query_only=OFF; DELETE FROM functions; --',
    "0x7fffffffffffffff",
    "\x00",
    "../../../../etc/passwd",
    "<script>alert(1)</script>",
    "%",
    "_",
    "a" * 5000,
]
METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH"]

CHROMIUM = os.environ.get("KBTOOL_CHROMIUM", "/usr/bin/chromium")
# a browser test: skipped without Chromium or Playwright (no browser is ever downloaded)
BROWSER_MARKS = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    ),
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None, reason="playwright is not installed"
    ),
]
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
]


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def copy_kb(kb, dest: Path) -> Path:
    """A private copy of a fixture KB's file at ``dest``."""
    dest = Path(dest)
    shutil.copyfile(kb.path, dest)
    return dest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kbtool_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "kbtool.cli", *args]


def env() -> dict[str, str]:
    out = dict(os.environ)
    out["PYTHONPATH"] = str(ROOT) + os.pathsep + out.get("PYTHONPATH", "")
    out["PYTHONUNBUFFERED"] = "1"
    out.setdefault("COLUMNS", "200")
    return out


class ServerProcess:
    """``kbtool serve --db PATH --port N`` in a subprocess, stopped on exit."""

    def __init__(self, db: Path, *extra: str, port: int | None = None) -> None:
        self.db, self.extra = db, extra
        # 0: the server binds a free port itself and prints it. A port picked here and bound
        # there could be taken in between (another test worker's server, any client socket's
        # ephemeral port): "server did not start" on a busy machine.
        self.port = port or 0
        self.proc: subprocess.Popen[str] | None = None
        self.out: list[str] = []

    def __enter__(self) -> ServerProcess:
        self.proc = subprocess.Popen(
            kbtool_cmd("serve", "--db", str(self.db), "--port", str(self.port), *self.extra),
            cwd=ROOT,
            env=env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline()  # the URL, printed once when listening
        self.out.append(line)
        bound = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if not bound or (self.port and int(bound.group(1)) != self.port):
            self.proc.kill()
            raise RuntimeError(f"server did not start: {line!r} {self.proc.stderr.read()!r}")
        self.port = int(bound.group(1))
        deadline = time.monotonic() + 60  # listening: answering is quick, but for a busy CI VM
        while time.monotonic() < deadline:
            try:
                if request(self.port, "/api/versions")[0] == 200:
                    return self
            except OSError:
                pass
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


def request(
    port: int,
    path: str,
    *,
    method: str = "GET",
    host: str | None = "default",
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
):
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


def launch_chromium(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)


def held_client(monkeypatch, kb_path: Path, held: Callable[[str, dict], bool]):
    """A Starlette TestClient over the web app (2 expensive slots, a 0.2 s wait for one)
    whose requests ``held(path, query)`` selects block in the router until the returned
    event is set; the returned semaphore is released as each of them enters.
    Returns ``(client, release, entered)``."""
    from starlette.testclient import TestClient

    from kbtool.web import app as webapp
    from kbtool.web import router

    release, entered, real = threading.Event(), threading.Semaphore(0), router.route

    def route(db_path, path, query=None, method="GET"):
        if held(path, query or {}):
            entered.release()
            assert release.wait(30)
        return real(db_path, path, query, method)

    monkeypatch.setattr(router, "route", route)
    app = webapp.create_app(str(kb_path), expensive_limit=2, expensive_wait=0.2)
    return TestClient(app, base_url="http://127.0.0.1"), release, entered
