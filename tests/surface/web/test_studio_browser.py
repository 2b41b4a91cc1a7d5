"""The studio in headless Chromium against a real `kbtool serve`: the function list, the
Raw WASM / Inferred C / Cleaned C toggle, and `kbtool deep` run in another process showing up
live in the Agents panel and in the code view without a reload."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from tests.support.web import (
    BROWSER_MARKS,
    XSS_SCRIPT,
    ServerProcess,
    copy_kb,
    launch_chromium,
)

pytestmark = BROWSER_MARKS


@pytest.fixture()
def served(kb, tmp_path):
    db = copy_kb(kb, tmp_path / "served.db")
    with ServerProcess(db) as srv:
        yield srv, db


def _until(page, expression: str, seconds: float = 30.0) -> None:
    """Poll a page expression from Python (the page's CSP forbids string evaluation, which
    Playwright's wait_for_function needs)."""
    end = time.monotonic() + seconds
    while not page.evaluate(expression):
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {expression}")
        time.sleep(0.1)


def _studio(browser, srv, vid: int, index: int, errors: list[str]):
    """A new page on the studio at function ``index``; page errors go to ``errors``."""
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.set_default_timeout(30_000)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{srv.url.rstrip('/')}/studio#v={vid}&f={index}")
    return page


def test_studio_shows_deep_work_live(served):
    from playwright.sync_api import sync_playwright

    srv, db = served
    conn = open_ro(db)
    vid = queries.latest_version_id(conn)
    unnamed = next(f for f in queries.list_functions(conn, vid) if f["name"] is None)
    conn.close()
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        errors: list[str] = []
        page = _studio(browser, srv, vid, unnamed["index"], errors)
        page.wait_for_selector(f".fn.sel[data-index='{unnamed['index']}']")
        # the hostile name from the fixture KB is listed literally, and never runs
        page.fill("#filter", "script")
        assert XSS_SCRIPT in page.inner_text("#flist")
        assert page.evaluate("window.__xss") is None
        page.fill("#filter", f"#{unnamed['index']}")
        page.click("#v-wasm")
        _until(page, "document.querySelector('#code').textContent.includes('end')")
        page.click("#v-c")
        _until(page, "document.querySelector('#code').textContent.includes('{')")
        page.click("#v-clean")
        # the hint before deep ran (after "loading…" if the knowledge is still on its way)
        _until(page, "document.querySelector('#code').textContent.includes('kbtool deep')")
        before = page.locator("#feed .ev").count()

        t0 = time.monotonic()
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "kbtool.cli",
                "deep",
                str(vid),
                "-f",
                str(unnamed["index"]),
                "--db",
                str(db),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        page.wait_for_selector("#feed .ev[data-kind='deep-done']")
        latency = time.monotonic() - t0
        assert page.locator("#feed .ev").count() > before
        # the cleaned C appears in place of the hint, without a reload
        # (the view reads "loading…" while the understanding is fetched again: wait past it)
        _until(
            page,
            "(t => !t.includes('kbtool deep') && t.includes('{'))"
            "(document.querySelector('#code').textContent)",
        )
        assert "kbtool deep" not in page.inner_text("#code")
        assert "confidence" in page.inner_text("#understanding")
        print(f"feed latency (deep finished -> shown): {latency:.2f} s")
        assert errors == []
        browser.close()


def test_provider_understanding_is_shown_literally(served):
    """`kbtool deep --backend provider_b` (the openai SDK against a fake server) writes a
    hostile understanding; the studio shows it as text, marked agent, and runs nothing."""
    pytest.importorskip("openai")
    import json

    from playwright.sync_api import sync_playwright

    from testkit.llm_server import FakeLLMServer
    from tests.support.web import XSS_IMG

    srv, db = served
    conn = open_ro(db)
    vid = queries.latest_version_id(conn)
    unnamed = [f for f in queries.list_functions(conn, vid) if f["name"] is None][1]
    conn.close()
    hostile = (
        f"Reads {XSS_SCRIPT} then {XSS_IMG} and </script> \x1b[31mRED\x1b[0m; returns the count."
    )
    answer = json.dumps({"understanding": hostile, "name": "read_things", "confidence": 0.6})
    with FakeLLMServer([("text", answer)]) as fake:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PROVIDER_")}
        env.update(
            PROVIDER_B_API_KEY="k",
            PROVIDER_B_BASE_URL=fake.url + "/v1",
            PROVIDER_B_MODEL="fake-gpt",
            NO_PROXY="127.0.0.1",
            no_proxy="127.0.0.1",
        )
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "kbtool.cli",
                "deep",
                str(vid),
                "-f",
                str(unnamed["index"]),
                "--backend",
                "provider_b",
                "--db",
                str(db),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
    assert out.returncode == 0, out.stderr
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        errors: list[str] = []
        page = _studio(browser, srv, vid, unnamed["index"], errors)
        page.wait_for_selector("#understanding-text")
        text = page.inner_text("#understanding-text")
        assert XSS_SCRIPT in text and XSS_IMG in text and "</script> [31mRED [0m;" in text
        assert page.inner_text("#understanding-by") == "agent"
        assert "provider_b / fake-gpt" in page.inner_text("#understanding")
        assert page.locator("#understanding img, #understanding script").count() == 0
        assert page.evaluate("window.__xss") is None
        assert errors == []
        browser.close()
