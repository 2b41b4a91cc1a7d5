"""The Data tab, the function panel's data xrefs and the studio's, in headless Chromium
against a real `kbtool serve` on an analysed module whose only string is hostile HTML: the
string is shown as text and never runs, a click lists its xrefs, a function in the xrefs
opens in the panel (issue 26)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kbtool.kb.db import open_rw
from kbtool.services.analyze import analyze_version
from kbtool.services.ingest import ingest_file
from testkit.wasmbuild import FIXTURES, build_wat, have_wabt
from tests.support.web import BROWSER_MARKS, ServerProcess, launch_chromium

pytestmark = [*BROWSER_MARKS, pytest.mark.skipif(not have_wabt(), reason="wat2wasm not installed")]
HOSTILE = "<img src=x onerror=__xss=9>"


def _kb(d: Path) -> Path:
    wat = (FIXTURES / "datamodel.wat").read_text()
    old = '"create table %s' + "\\00" * 16 + '"'
    wat = wat.replace(old, '"' + HOSTILE + "\\00" * (32 - len(HOSTILE)) + '"')
    wasm = build_wat(wat, d, name="hostile")
    db = d / "kb.db"
    conn = open_rw(str(db), create=True)
    try:
        ingest_file(conn, str(wasm), label="1.0")
        analyze_version(conn, 1)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return db


def _until(page, expression: str, seconds: float = 30.0) -> None:
    end = time.monotonic() + seconds
    while not page.evaluate(expression):
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {expression}")
        time.sleep(0.1)


def test_data_tab_xrefs_and_panels(tmp_path):
    from playwright.sync_api import sync_playwright

    db = _kb(tmp_path)
    with ServerProcess(db) as srv, sync_playwright() as pw:
        browser = launch_chromium(pw)
        errors: list[str] = []
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.set_default_timeout(30_000)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(srv.url)
        page.wait_for_selector("body[data-ready='1']")
        page.click("#tab-data")
        page.wait_for_selector("#data-strings tbody tr.ds")
        assert HOSTILE in page.inner_text("#data-strings")  # shown as text
        assert page.locator("#data-strings img").count() == 0
        page.wait_for_selector(
            "#data-globals tbody tr.dg"
        )  # loaded by its own request, not the strings'
        assert "__stack_pointer" in page.inner_text("#data-globals")

        page.click("#data-strings tbody tr.ds")  # its xrefs: function 1, kind addr
        page.wait_for_selector("#data-xrefs tr.xr")
        assert HOSTILE in page.inner_text("#xrefs-target")
        row = page.locator("#data-xrefs tr.xr").first
        assert row.get_attribute("data-func") == "1" and "addr" in row.inner_text()

        page.click("#data-globals tbody tr.dg[data-index='0']")  # the stack pointer
        _until(page, "document.querySelectorAll('#data-xrefs tr.xr').length === 3")
        assert "__stack_pointer" in page.inner_text("#xrefs-target")

        page.fill("#data-target", "0x420")
        page.press("#data-target", "Enter")
        _until(page, "document.querySelector('#xrefs-target')?.textContent.includes('0x420')")
        assert "load" in page.inner_text("#data-xrefs")

        page.click("#data-xrefs tr.xr a.tag")  # opens function 1 in the panel
        page.wait_for_selector("#fn-view:not(.hidden) #fn-data a.dataref")
        assert any(HOSTILE in t for t in page.locator("#fn-data a.dataref").all_inner_texts())
        page.locator("#fn-data a.dataref", has_text="g0").click()
        _until(page, "document.querySelectorAll('#fn-data tr.xr').length === 3")

        studio = browser.new_page(viewport={"width": 1440, "height": 900})
        studio.on("pageerror", lambda e: errors.append(str(e)))
        studio.goto(srv.url.rstrip("/") + "/studio#v=1&f=1")
        studio.wait_for_selector("#dataxrefs a.dataref")
        assert HOSTILE in studio.inner_text("#dataxrefs")
        studio.locator("#dataxrefs a.dataref").first.click()
        studio.wait_for_selector("#dataxrefs tr.xr")

        for p in (page, studio):
            assert p.evaluate("window.__xss") is None
        assert errors == []
        browser.close()
