"""The dashboard in a real headless Chromium (Debian's /usr/bin/chromium, driven by Playwright)
against a real ``kbtool serve`` subprocess: every step a user takes, and no script from the KB
ever runs."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import urllib.request

import pytest

from tests.web.support import (
    CHROMIUM,
    XSS_IMG,
    XSS_SCRIPT,
    XSS_SUMMARY,
    ServerProcess,
    copy_kb,
    launch_chromium,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)"),
    pytest.mark.skipif(importlib.util.find_spec("playwright") is None, reason="playwright is not installed"),
]

# Every page records CSP violations, so an injected inline script would show up even though
# the policy blocks it.
INIT = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
"""


@pytest.fixture(scope="module")
def server(kb, tmp_path_factory):
    with ServerProcess(copy_kb(kb, tmp_path_factory.mktemp("browser") / "served.db")) as srv:
        yield srv


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = launch_chromium(pw)
        yield b
        b.close()


@pytest.fixture()
def page(browser, server):
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    pg = ctx.new_page()
    pg.set_default_timeout(10_000)
    pg.add_init_script(INIT)
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    pg.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" and "404" not in m.text else None)
    pg.errors = errors
    yield pg
    assert pg.evaluate("window.__xss") is None, "a script from the KB ran"
    assert pg.evaluate("window.__csp") == [], "the page triggered CSP violations"
    assert errors == []
    ctx.close()


def api(server, path):
    with urllib.request.urlopen(server.url.rstrip("/") + path, timeout=10) as r:
        return json.loads(r.read())


def open_page(page, server, fragment=""):
    page.goto(server.url + fragment)
    page.wait_for_selector("body[data-ready='1']")


def cell_center(page, position):
    """Page coordinates of heatmap cell ``position`` (index order)."""
    box = page.locator("#heatmap").bounding_box()
    cell = int(page.get_attribute("#heatmap", "data-cell"))
    cols = int(page.get_attribute("#heatmap", "data-cols"))
    return box["x"] + (position % cols) * cell + cell / 2, box["y"] + (position // cols) * cell + cell / 2


def search_and_open(page, text, name):
    page.fill("#search", text)
    page.wait_for_function("(q) => document.getElementById('search-results').dataset.q === q", arg=text)
    item = page.locator("#search-results .sr", has=page.locator(".nm", has_text=name)).first
    item.wait_for()
    item.click()
    page.wait_for_function("(n) => document.getElementById('fn-name').textContent === n", arg=name)


def test_load_page_and_pick_a_version(page, server, kb):
    open_page(page, server)
    rows = page.locator("#versions tbody tr")
    assert rows.count() == len(kb.version_ids)
    assert page.get_attribute("body", "data-version") == str(kb.version_ids[-1])  # latest by default
    first = kb.version_ids[0]
    page.click(f"#versions tr[data-vid='{first}']")
    page.wait_for_selector(f"body[data-version='{first}']")
    cov = api(server, f"/api/versions/{first}/coverage")
    assert f"{cov['named']} / {cov['defined']} defined" in page.text_content("#cov-counts")
    assert page.text_content("#cov-pct").startswith(f"{cov['coverage_pct']:.1f}")
    assert "sel" in page.get_attribute(f"#versions tr[data-vid='{first}']", "class").split()
    metrics = page.evaluate("window.kbMetrics")
    assert metrics["version"] == first and metrics["cells"] == cov["defined"]
    assert page.get_attribute("#heatmap", "data-cells") == str(cov["defined"])
    # the legend shows a count per provenance
    legend = page.text_content("#legend")
    for p in ("human", "oracle", "export", "diff-carry", "agent", "unnamed"):
        assert p in legend
    # the canvas really has the provenance tints in it
    colors = page.evaluate("""() => {
        const c = document.getElementById('heatmap'), d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        const seen = new Set();
        for (let i = 0; i < d.length; i += 4 * 7) seen.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
        return seen.size;
    }""")
    assert colors >= 3


def test_hover_and_click_a_heatmap_cell(page, server, kb):
    open_page(page, server)
    fns = api(server, f"/api/versions/{kb.version_ids[-1]}/functions")
    pos = next(i for i, f in enumerate(fns) if f["stable_id"] == kb.script_sid)
    x, y = cell_center(page, pos)
    page.mouse.move(x, y)
    tip = page.locator("#tooltip")
    tip.wait_for(state="visible")
    text = tip.text_content()
    assert XSS_SCRIPT in text and kb.script_sid in text and "oracle" in text
    assert f"#{fns[pos]['index']}" in text
    page.mouse.click(x, y)
    page.wait_for_function("(n) => document.getElementById('fn-name').textContent === n", arg=XSS_SCRIPT)
    assert page.get_attribute("#heatmap", "data-sel") == str(fns[pos]["index"])
    assert kb.script_sid in page.text_content("#fn-sub")
    detail = page.text_content("#fn-detail")
    assert XSS_SUMMARY in detail and "Evidence (1)" in detail and "oracle:test" in detail
    # an unnamed cell
    upos = next(i for i, f in enumerate(fns) if f["stable_id"] == kb.unnamed_sid)
    x, y = cell_center(page, upos)
    page.mouse.move(x, y)
    page.wait_for_function("(s) => document.getElementById('tooltip').textContent.includes(s)", arg=kb.unnamed_sid)
    assert "unnamed" in tip.text_content()
    page.mouse.click(x, y)
    page.wait_for_function("() => document.getElementById('fn-name').textContent === 'unnamed'")
    assert "no annotation yet" in page.text_content("#fn-detail")


def test_heatmap_keyboard(page, server):
    open_page(page, server)
    page.focus("#heatmap")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    page.wait_for_selector("#fn-view:not(.hidden)")
    fns = api(server, f"/api/versions/{page.get_attribute('body', 'data-version')}/functions")
    page.wait_for_function("(s) => document.getElementById('fn-sub').textContent.includes(s)", arg=fns[0]["stable_id"])
    page.keyboard.press("Escape")
    page.wait_for_selector("#fn-empty:not(.hidden)")


def test_run_a_diff(page, server, kb):
    open_page(page, server)
    page.click("#tab-diff")
    a, b = kb.version_ids[0], kb.version_ids[-1]
    page.select_option("#diff-from", str(a))
    page.select_option("#diff-to", str(b))
    page.click("#diff-run")
    page.wait_for_selector("#diff-out:not(.hidden) #diff-summary .sum")
    report = api(server, f"/api/diff?from={a}&to={b}")
    summary = page.text_content("#diff-summary")
    for key, value in report["summary"].items():
        assert key.replace("_", " ") in summary and f"{value:,}" in summary
    assert report["from"] in page.text_content("#diff-head") and report["to"] in page.text_content("#diff-head")
    changed = [c for c in report["changes"] if c["classification"] != "unchanged"]
    assert f"{len(changed):,} of {len(report['changes']):,} changes" in page.text_content("#diff-count")
    page.select_option("#diff-class", "")
    page.wait_for_function("(n) => document.getElementById('diff-count').textContent.startsWith(n)",
                           arg=f"{len(report['changes']):,} of")
    named = next((c for c in report["changes"] if c["name"]), None)
    if named:
        page.fill("#diff-filter", named["name"])
        page.wait_for_function(
            "(n) => [...document.querySelectorAll('#diff-table tbody td.nm')].every(td => td.textContent.toLowerCase().includes(n.toLowerCase()))"
            " && document.querySelectorAll('#diff-table tbody tr').length > 0", arg=named["name"])
        page.click("#diff-table tbody tr >> nth=0")
        page.wait_for_selector("#fn-view:not(.hidden)")
        page.wait_for_function("() => document.getElementById('fn-name').textContent !== 'loading…'")


def test_search_as_you_type_and_open(page, server, kb):
    open_page(page, server)
    page.locator("body").press("/")
    assert page.evaluate("document.activeElement.id") == "search"
    needle = kb.human_name[:4]
    page.keyboard.type(needle, delay=30)
    page.wait_for_function("(q) => document.getElementById('search-results').dataset.q === q", arg=needle)
    page.locator("#search-results .sr").first.wait_for()
    names = page.locator("#search-results .sr .nm").all_text_contents()
    assert kb.human_name in names
    assert all(needle.lower() in n.lower() for n in names)
    search_and_open(page, needle, kb.human_name)
    # the opened function is outlined on the heatmap of the selected version
    fns = api(server, f"/api/versions/{page.get_attribute('body', 'data-version')}/functions")
    index = next(f["index"] for f in fns if f["name"] == kb.human_name)
    assert page.get_attribute("#heatmap", "data-sel") == str(index)
    detail = page.text_content("#fn-detail")
    assert "Annotation" in detail and "human" in detail
    # no match
    page.fill("#search", "zz_no_such_symbol_zz")
    page.wait_for_function("() => document.querySelector('#search-results .head').textContent.includes('no named symbol')")


def test_history_time_travel(page, server, kb):
    open_page(page, server)
    search_and_open(page, "ZSTD_copy", "ZSTD_copy16")
    page.click("#tab-history")
    page.wait_for_selector("#fn-history:not(.hidden) #timeline")
    timeline = page.text_content("#timeline")
    for text in ("maybe_memcpy", "ZSTD_copy16", "copy_bytes", "refused", "agent:offline", "oracle:test"):
        assert text in timeline
    assert page.locator("#hist-versions tbody tr").count() == len(kb.version_ids)
    hist = api(server, f"/api/history/{kb.history_sid}")
    for v in hist["versions"]:
        row = page.locator(f"#hist-versions tr[data-vid='{v['version_id']}']").text_content()
        assert ("changed" in row) is v["body_changed"]
    slider = page.locator("#tt-slider")
    slider.fill("0")
    assert page.text_content("#tt-name") == "maybe_memcpy"
    slider.fill(str(len(kb.version_ids) - 1))
    assert page.text_content("#tt-name") == "ZSTD_copy16"
    for panel in ("#fn-view", "#tooltip", "#coverage"):
        text = page.text_content(panel)
        assert "null" not in text and "undefined" not in text and "NaN" not in text, panel


def test_hostile_names_are_shown_as_text(page, server, kb):
    open_page(page, server)
    page.fill("#search", "<")
    page.wait_for_function("() => document.getElementById('search-results').dataset.q === '<'")
    names = page.locator("#search-results .sr .nm").all_text_contents()
    assert XSS_SCRIPT in names and XSS_IMG in names
    search_and_open(page, "<img", XSS_IMG)
    assert XSS_SCRIPT in page.text_content("#fn-detail")   # in the evidence
    search_and_open(page, "<script", XSS_SCRIPT)
    assert XSS_SUMMARY in page.text_content("#fn-detail")
    page.click("#tab-history")
    page.wait_for_selector("#fn-history:not(.hidden) #timeline")
    assert XSS_SCRIPT in page.text_content("#timeline")
    # nothing from the KB became an element
    assert page.evaluate("document.scripts.length") == 1
    assert page.evaluate("document.querySelectorAll('img, svg, iframe, object, embed').length") == 0
    assert page.evaluate("window.__xss") is None


def test_deep_link(page, server, kb):
    open_page(page, server, f"#v={kb.version_ids[0]}&fn={kb.history_sid}")
    assert page.get_attribute("body", "data-version") == str(kb.version_ids[0])
    page.wait_for_function("() => document.getElementById('fn-name').textContent === 'ZSTD_copy16'")
    assert re.search(r"#\d+ in", page.text_content("#fn-sub"))


def test_csp_forbids_html_sinks(page, server):
    """Defence in depth: even a future innerHTML would throw (Trusted Types), and a script
    injected into the DOM never runs (hash-based script-src)."""
    open_page(page, server)
    result = page.evaluate("""() => {
        const out = {};
        try { document.getElementById('status').innerHTML = '<img src=x onerror="window.__xss=9">'; out.innerHTML = 'allowed'; }
        catch (e) { out.innerHTML = e.name; }
        const s = document.createElement('script');
        try { s.textContent = 'window.__xss = 10'; out.scriptText = 'allowed'; }
        catch (e) { out.scriptText = e.name; }
        s.appendChild(document.createTextNode('window.__xss = 11'));
        try { document.body.appendChild(s); } catch (e) { out.append = e.name; }
        s.remove();
        return out;
    }""")
    assert result["innerHTML"] == "TypeError" and result["scriptText"] == "TypeError"
    page.wait_for_timeout(100)
    assert page.evaluate("window.__xss") is None
    assert page.evaluate("window.__csp.length") >= 1
    page.evaluate("window.__csp = []")   # the violations were the point of this test
    page.errors.clear()                   # and so were the console errors reporting them


def test_empty_kb(browser, tmp_path):
    from kbtool.kb.db import open_rw

    open_rw(tmp_path / "empty.db").close()
    with ServerProcess(tmp_path / "empty.db") as srv:
        pg = browser.new_page()
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(srv.url)
        pg.wait_for_selector("body[data-ready='1']")
        assert pg.is_visible("#versions-empty") and "no versions yet" in pg.text_content("#versions-empty")
        assert pg.is_visible("#hm-empty")
        pg.fill("#search", "x")
        pg.wait_for_function("() => document.getElementById('search-results').dataset.q === 'x'")
        assert "no named symbol" in pg.text_content("#search-results")
        assert errors == []
        pg.close()
