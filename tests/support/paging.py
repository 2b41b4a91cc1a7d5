"""Helpers of the browser paging tests (not a test module): a KB holding one huge function
(a few thousand instructions, its cleaned C from an offline ``kbtool deep``, a hostile name on
another function), and page polling from Python."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from kbtool.kb import queries
from kbtool.kb.db import open_rw
from kbtool.kb.gate import upsert_symbol
from kbtool.services.ingest import ingest_file
from testkit.wasmbuild import build_wat
from tests.support.web import XSS_IMG, request

CALLS = 1500  # 3,000+ instructions: ten windows of the pages' 300 lines
WINDOW = 300  # lines per window (code.js)
KEEP = 4  # windows that keep their lines in the DOM (code.js)
BIG = 2  # function index of the huge one


def huge_wat() -> str:
    body = "\n".join(f"    i32.const {i}\n    call $sink" for i in range(CALLS))
    return f"""(module
  (func $sink (export "sink") (param i32))
  (func $evil)
  (func $big (export "big")
{body}
    call $evil)
)
"""


def build_huge_kb(d: Path) -> tuple[Path, int, dict[int, dict]]:
    """``d/kb.db`` with the huge module ingested, the huge function's cleaned C, and the
    hostile name on function 1. Returns ``(db, version id, functions by index)``."""
    wasm = build_wat(huge_wat(), d, name="huge")
    db = d / "kb.db"
    conn = open_rw(str(db), create=True)
    try:
        ingest_file(conn, str(wasm), label="1.0")
        vid = queries.latest_version_id(conn)
        fns = {f["index"]: f for f in queries.list_functions(conn, vid)}
    finally:
        conn.close()
    # the cleaned C of the huge function (offline `kbtool deep`, about a second); before the
    # hostile name, so that its understanding line does not carry the name to the first window
    out = subprocess.run(
        [sys.executable, "-m", "kbtool.cli", "deep", str(vid), "-f", str(BIG), "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    conn = open_rw(str(db))
    try:
        decision = upsert_symbol(
            conn,
            fns[1]["stable_id"],
            XSS_IMG,
            provenance="oracle",
            confidence=0.9,
            actor="oracle:test",
        )
        assert decision["written"], decision
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return db, vid, fns


def until(page, expression: str, seconds: float = 30.0) -> None:
    """Poll a page expression from Python (the page's CSP forbids string evaluation)."""
    end = time.monotonic() + seconds
    while not page.evaluate(expression):
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {expression}")
        time.sleep(0.05)


def windows(requests: list[str], kind: str) -> list[tuple[int, int]]:
    """(offset, limit) of every /api/disasm window of ``kind`` the page asked for."""
    out = []
    for url in requests:
        u = urlparse(url)
        q = parse_qs(u.query)
        if u.path.startswith("/api/disasm/") and q.get("kind") == [kind]:
            out.append((int(q["offset"][0]), int(q["limit"][0])))
    return out


def all_lines(srv, vid: int, index: int = BIG, kind: str = "wasm") -> list[str]:
    """Every line of a function's code in one window (straight from the API)."""
    status, _, body = request(srv.port, f"/api/disasm/{vid}/{index}?kind={kind}&limit=20000")
    assert status == 200, body[:200]
    out = json.loads(body)
    assert out["next_offset"] is None
    return out["lines"]


def new_page(browser, requests: list[str], errors: list[str]):
    """A page that records its requests' URLs and its script errors."""
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.set_default_timeout(30_000)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    return page


def held_page(browser, pattern: str, requests: list[str], errors: list[str]):
    """A new page whose requests matching ``pattern`` are held: ``(page, held routes, the
    compiled pattern)`` (``route.continue_()`` lets one through, ``page.unroute`` the rest)."""
    page = new_page(browser, requests, errors)
    held: list = []
    compiled = re.compile(pattern)
    page.route(compiled, lambda route: held.append(route))
    return page, held, compiled


def serve_until(page, done: Callable[[], bool], seconds: float = 30.0) -> None:
    """Serve the page's events (held routes' callbacks run then) until ``done()`` or
    ``seconds``; the caller asserts what it needs."""
    end = time.monotonic() + seconds
    while not done() and time.monotonic() < end:
        page.wait_for_timeout(50)
