"""The studio (read-only) shows a function's comment, prototype and local names, tinted by
provenance, literally (a hostile comment never runs), in headless Chromium against a real
`kbtool serve`; and the JSON of /api/disasm carries them."""

from __future__ import annotations

import importlib.util
import json
import os
import time

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_rw
from kbtool.services import knowledge as ks
from kbtool.web.router import route
from tests.support.web import CHROMIUM, XSS_SCRIPT, ServerProcess, copy_kb, launch_chromium


def _annotate(db) -> tuple[int, int]:
    conn = open_rw(db)
    vid = queries.latest_version_id(conn)
    f = next(
        f
        for f in queries.list_functions(conn, vid)
        if not queries.get_function(conn, vid, f["index"])["imported"]
        and f["type"].startswith("(i32")
    )
    ks.set_comment(conn, f"{vid}:{f['index']}", f"Reads {XSS_SCRIPT} the header.")
    ks.rename_local(
        conn, f"{vid}:{f['index']}", "0", "hdr", provenance="agent", confidence=0.6, actor="agent:t"
    )
    conn.close()
    return vid, f["index"]


def test_disasm_json_carries_knowledge(kb, tmp_path):
    db = copy_kb(kb, tmp_path / "k.db")
    vid, idx = _annotate(db)
    status, _ctype, body = route(str(db), f"/api/disasm/{vid}/{idx}", {})
    assert status == 200
    k = json.loads(body)["knowledge"]
    assert (
        k["comment"]["text"] == f"Reads {XSS_SCRIPT} the header."
        and k["comment"]["provenance"] == "human"
    )
    assert k["locals"][0] == {
        "index": 0,
        "name": "hdr",
        "provenance": "agent",
        "confidence": 0.6,
        "locked": False,
        "carried": None,
    }


@pytest.mark.browser
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no Chromium at {CHROMIUM}")
@pytest.mark.skipif(
    importlib.util.find_spec("playwright") is None, reason="playwright is not installed"
)
def test_studio_shows_knowledge(kb, tmp_path):
    from playwright.sync_api import sync_playwright

    db = copy_kb(kb, tmp_path / "served.db")
    vid, idx = _annotate(db)
    with ServerProcess(db) as srv, sync_playwright() as pw:
        browser = launch_chromium(pw)
        errors: list[str] = []
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{srv.url.rstrip('/')}/studio#v={vid}&f={idx}")
        end = time.monotonic() + 30
        while "the header" not in page.inner_text("#knowledge"):
            assert time.monotonic() < end, page.inner_text("#knowledge")
            time.sleep(0.1)
        text = page.inner_text("#knowledge")
        assert XSS_SCRIPT in text and "hdr" in text and "agent" in text and "human" in text
        assert page.evaluate("window.__xss") is None
        assert page.locator("#knowledge .p-agent").count() == 1
        assert errors == []
        browser.close()
