"""The dashboard in a real headless Chromium (Debian's /usr/bin/chromium, driven by Playwright)
against a real ``kbtool serve`` subprocess: every step a user takes, and no script from the KB
ever runs."""

from __future__ import annotations

import json
import re
import time
import urllib.request

import pytest

from tests.support.web import (
    BIDI_NAME,
    BIDI_SHOWN,
    BIDI_SUMMARY_SHOWN,
    BROWSER_MARKS,
    XSS_IMG,
    XSS_SCRIPT,
    XSS_SUMMARY,
    ServerProcess,
    copy_kb,
)

pytestmark = BROWSER_MARKS

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


@pytest.fixture()
def page(browser, server):
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    pg = ctx.new_page()
    pg.set_default_timeout(30_000)
    pg.add_init_script(INIT)
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    pg.on(
        "console",
        lambda m: (
            errors.append(f"console {m.type}: {m.text}")
            if m.type == "error" and "404" not in m.text
            else None
        ),
    )
    pg.errors = errors
    pg.expected_csp = False  # a test of the policy itself sets it: its Trusted Types refusals
    yield pg
    assert pg.evaluate("window.__xss") is None, "a script from the KB ran"
    csp = pg.evaluate("window.__csp")
    if pg.expected_csp:  # reported by events that may still come after the test: not counted
        csp = [v for v in csp if not v.startswith("require-trusted-types-for ")]
        errors = [e for e in errors if not re.search(r"requires 'Trusted(HTML|Script)'", e)]
    assert csp == [], "the page triggered CSP violations"
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
    return box["x"] + (position % cols) * cell + cell / 2, box["y"] + (
        position // cols
    ) * cell + cell / 2


def search_and_open(page, text, name):
    page.fill("#search", text)
    page.wait_for_function(
        "(q) => document.getElementById('search-results').dataset.q === q", arg=text
    )
    item = page.locator("#search-results .sr", has=page.locator(".nm", has_text=name)).first
    item.wait_for()
    item.click()
    page.wait_for_function("(n) => document.getElementById('fn-name').textContent === n", arg=name)


def test_load_page_and_pick_a_version(page, server, kb):
    open_page(page, server)
    rows = page.locator("#versions tbody tr")
    assert rows.count() == len(kb.version_ids)
    assert page.get_attribute("body", "data-version") == str(
        kb.version_ids[-1]
    )  # latest by default
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
    page.wait_for_function(
        "(n) => document.getElementById('fn-name').textContent === n", arg=XSS_SCRIPT
    )
    assert page.get_attribute("#heatmap", "data-sel") == str(fns[pos]["index"])
    assert kb.script_sid in page.text_content("#fn-sub")
    detail = page.text_content("#fn-detail")
    assert XSS_SUMMARY in detail and "Evidence (1)" in detail and "oracle:test" in detail
    # an unnamed cell
    upos = next(i for i, f in enumerate(fns) if f["stable_id"] == kb.unnamed_sid)
    x, y = cell_center(page, upos)
    page.mouse.move(x, y)
    page.wait_for_function(
        "(s) => document.getElementById('tooltip').textContent.includes(s)", arg=kb.unnamed_sid
    )
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
    page.wait_for_function(
        "(s) => document.getElementById('fn-sub').textContent.includes(s)", arg=fns[0]["stable_id"]
    )
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
    assert report["from"] in page.text_content("#diff-head") and report["to"] in page.text_content(
        "#diff-head"
    )
    # the default filter is "changed" (modified + new + deleted; docs/diff.md)
    changed = [
        c for c in report["changes"] if c["classification"] in ("modified", "new", "deleted")
    ]
    assert f"{len(changed):,} of {len(report['changes']):,} changes" in page.text_content(
        "#diff-count"
    )
    page.select_option("#diff-class", "all")
    page.wait_for_function(
        "(n) => document.getElementById('diff-count').textContent.startsWith(n)",
        arg=f"{len(report['changes']):,} of",
    )
    named = next((c for c in report["changes"] if c["name"]), None)
    if named:
        page.fill("#diff-filter", named["name"])
        page.wait_for_function(
            "(n) => [...document.querySelectorAll('#diff-table tbody td.nm')].every(td => td.textContent.toLowerCase().includes(n.toLowerCase()))"
            " && document.querySelectorAll('#diff-table tbody tr').length > 0",
            arg=named["name"],
        )
        page.click("#diff-table tbody tr >> nth=0")
        page.wait_for_selector("#fn-view:not(.hidden)")
        page.wait_for_function(
            "() => document.getElementById('fn-name').textContent !== 'loading…'"
        )


def test_search_as_you_type_and_open(page, server, kb):
    open_page(page, server)
    page.locator("body").press("/")
    assert page.evaluate("document.activeElement.id") == "search"
    needle = kb.human_name[:4]
    page.keyboard.type(needle, delay=30)
    page.wait_for_function(
        "(q) => document.getElementById('search-results').dataset.q === q", arg=needle
    )
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
    page.wait_for_function(
        "() => document.querySelector('#search-results .head').textContent.includes('no named symbol')"
    )


def test_history_time_travel(page, server, kb):
    open_page(page, server)
    search_and_open(page, "ZSTD_copy", "ZSTD_copy16")
    page.click("#tab-history")
    page.wait_for_selector("#fn-history:not(.hidden) #timeline")
    timeline = page.text_content("#timeline")
    for text in (
        "maybe_memcpy",
        "ZSTD_copy16",
        "copy_bytes",
        "refused",
        "agent:offline",
        "oracle:test",
    ):
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
    assert XSS_SCRIPT in page.text_content("#fn-detail")  # in the evidence
    search_and_open(page, "<script", XSS_SCRIPT)
    assert XSS_SUMMARY in page.text_content("#fn-detail")
    page.click("#tab-history")
    page.wait_for_selector("#fn-history:not(.hidden) #timeline")
    assert XSS_SCRIPT in page.text_content("#timeline")
    # nothing from the KB became an element
    assert page.evaluate("document.scripts.length") == 2  # dashboard-early.js, main.js
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
    # the violations are reported by events queued after the script ran (a fixed wait here
    # was too short on a slow machine): wait for the first
    page.wait_for_function("() => window.__csp.length >= 1")
    assert page.evaluate("window.__xss") is None
    assert all(v.startswith("require-trusted-types-for ") for v in page.evaluate("window.__csp"))
    # the violations were the point of this test, and so were the console errors reporting
    # them (the fixture leaves out those two kinds only, even those that come later)
    page.expected_csp = True


def test_empty_kb(browser, tmp_path):
    from kbtool.kb.db import open_rw

    open_rw(tmp_path / "empty.db").close()
    with ServerProcess(tmp_path / "empty.db") as srv:
        pg = browser.new_page()
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(srv.url)
        pg.wait_for_selector("body[data-ready='1']")
        assert pg.is_visible("#versions-empty") and "no versions yet" in pg.text_content(
            "#versions-empty"
        )
        assert pg.is_visible("#hm-empty")
        pg.fill("#search", "x")
        pg.wait_for_function("() => document.getElementById('search-results').dataset.q === 'x'")
        assert "no named symbol" in pg.text_content("#search-results")
        assert errors == []
        pg.close()


def test_bidi_and_invisible_characters_are_shown_as_escapes(page, server, kb):
    """A right-to-left override in a name never reorders what the user reads."""
    open_page(page, server)
    page.fill("#search", "exe.txt")
    page.wait_for_function(
        "() => document.getElementById('search-results').dataset.q === 'exe.txt'"
    )
    names = page.locator("#search-results .sr .nm").all_text_contents()
    assert names == [BIDI_SHOWN]
    page.locator("#search-results .sr").first.click()
    page.wait_for_function(
        "(n) => document.getElementById('fn-name').textContent === n", arg=BIDI_SHOWN
    )
    detail = page.text_content("#fn-detail")
    assert BIDI_SUMMARY_SHOWN in detail and BIDI_SHOWN in detail  # summary and evidence
    page.click("#tab-history")
    page.wait_for_selector("#fn-history:not(.hidden) #timeline")
    assert BIDI_SHOWN in page.text_content("#timeline")
    # the heatmap tooltip too
    fns = api(server, f"/api/versions/{kb.version_ids[-1]}/functions")
    pos = next(i for i, f in enumerate(fns) if f["stable_id"] == kb.bidi_sid)
    assert fns[pos]["name"] == BIDI_NAME  # the API keeps the raw name
    page.mouse.move(*cell_center(page, pos))
    page.wait_for_function(
        "(n) => document.getElementById('tooltip').textContent.includes(n)", arg=BIDI_SHOWN
    )
    # no raw control character anywhere in the document's text or attributes
    raw = page.evaluate("""() => {
        const bad = /[\\u202a-\\u202e\\u2066-\\u2069\\u200b-\\u200f]/;
        const all = [document.body.textContent];
        for (const e of document.querySelectorAll('*')) for (const a of e.attributes) all.push(a.value);
        return all.filter((t) => bad.test(t)).length;
    }""")
    assert raw == 0


def test_legend_and_tints_follow_the_vocabulary(page, server, kb):
    open_page(page, server)
    vocab = api(server, "/api/provenance")
    legend = page.eval_on_selector_all(
        "#legend .lg",
        "bs => bs.map(b => [b.dataset.prov, getComputedStyle(b.querySelector('.sw')).backgroundColor])",
    )

    def rgb(hex_colour):
        return tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))

    assert (
        [p for p, _ in legend]
        == vocab["order"]
        == ["human", "oracle", "export", "agent", "diff-carry", "unnamed"]
    )
    for p, css in legend:
        assert css == "rgb({}, {}, {})".format(*rgb(vocab["colours"][p])), p
    # classification and provenance classes come from /static/provenance.css
    colours = page.evaluate("""() => {
        const out = {};
        for (const cls of ['c-moved', 'c-new', 'p-agent', 'p-diff-carry']) {
            const e = document.createElement('span'); e.className = 'chip ' + cls; document.body.append(e);
            out[cls] = getComputedStyle(e).color; e.remove();
        }
        return out;
    }""")
    assert colours["c-moved"] == "rgb({}, {}, {})".format(
        *rgb(vocab["classification_colours"]["moved"])
    )
    assert colours["c-new"] == "rgb({}, {}, {})".format(
        *rgb(vocab["classification_colours"]["new"])
    )
    assert colours["p-agent"] == "rgb({}, {}, {})".format(*rgb(vocab["colours"]["agent"]))
    # a heatmap cell is the oracle tint at the symbol's confidence over the background
    fns = api(server, f"/api/versions/{kb.version_ids[-1]}/functions")
    pos = next(i for i, f in enumerate(fns) if f["stable_id"] == kb.script_sid)
    cell = int(page.get_attribute("#heatmap", "data-cell"))
    cols = int(page.get_attribute("#heatmap", "data-cols"))
    pixel = page.evaluate(
        """([x, y]) => {
        const c = document.getElementById('heatmap'), d = window.devicePixelRatio || 1;
        return Array.from(c.getContext('2d').getImageData(Math.floor(x * d), Math.floor(y * d), 1, 1).data.slice(0, 3));
    }""",
        [(pos % cols) * cell + 1, (pos // cols) * cell + 1],
    )
    bg, tint, alpha = (
        (0x0F, 0x13, 0x1A),
        rgb(vocab["colours"]["oracle"]),
        0.22 + 0.78 * round(0.9 * 20) / 20,
    )
    assert all(
        abs(p - round(b + (t - b) * alpha)) <= 1 for p, b, t in zip(pixel, bg, tint, strict=True)
    ), pixel


EVIL_PAGE = """<!doctype html><title>another origin</title><script>
window.results = {};
async function attempt(name, init) {
  try { const r = await fetch(window.TARGET, init); window.results[name] = {type: r.type, status: r.status}; }
  catch (e) { window.results[name] = {error: e.name}; }
}
</script>"""


class _EvilSite:
    """A page on another loopback port (a second origin) that tries to use the dashboard."""

    def __enter__(self):
        import http.server
        import threading

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                body = EVIL_PAGE.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def url(self, host="127.0.0.1"):
        return f"http://{host}:{self.httpd.server_address[1]}/"

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize(
    "evil_host", ["127.0.0.1", "localhost"]
)  # same-site other port; cross-site
def test_another_origin_cannot_make_the_dashboard_work(browser, server, kb, evil_host):
    a, b = kb.version_ids[-1], kb.version_ids[0]  # not stored: would compute
    target = f"{server.url}api/diff?from={a}&to={b}"
    ctx = browser.new_context()
    pg = ctx.new_page()
    # the real status of every answer, even those the page may not read (DevTools protocol)
    cdp = ctx.new_cdp_session(pg)
    cdp.send("Network.enable")
    urls: dict[str, str] = {}
    statuses: dict[str, int] = {}
    cdp.on(
        "Network.requestWillBeSent", lambda e: urls.__setitem__(e["requestId"], e["request"]["url"])
    )
    cdp.on(
        "Network.responseReceivedExtraInfo",
        lambda e: statuses.__setitem__(e["requestId"], e.get("statusCode")),
    )
    with _EvilSite() as evil:
        pg.goto(evil.url(evil_host))
        pg.evaluate("(t) => { window.TARGET = t; }", target)
        pg.evaluate(
            "() => Promise.all([attempt('cors', {}), attempt('no-cors', {mode: 'no-cors'}),"
            " attempt('cred', {mode: 'no-cors', credentials: 'include'})])"
        )
        pg.evaluate(
            """(t) => new Promise((done) => { const i = new Image(); i.onload = i.onerror = done;
                       i.src = t + '&img=1'; document.body.append(i); })""",
            target,
        )
        results = pg.evaluate("window.results")
        # the protocol's events come after the page's answers: wait until every request to
        # the dashboard has its status (a fixed 200 ms was too short on a slow machine)
        deadline = time.monotonic() + 20
        while True:
            seen = [
                (url, statuses.get(rid)) for rid, url in urls.items() if url.startswith(server.url)
            ]
            if len(seen) >= 4 and all(status is not None for _, status in seen):
                break
            if time.monotonic() > deadline:
                break  # the assertions below say what is missing
            pg.wait_for_timeout(50)
    ctx.close()
    # the page reads nothing: CORS fails; no-cors fails too (CORP same-origin) or stays opaque
    assert results["cors"] == {"error": "TypeError"}, results
    for name in ("no-cors", "cred"):
        assert results[name] in ({"error": "TypeError"}, {"type": "opaque", "status": 0}), results
    # and the dashboard did no work: every request the browser sent was refused
    assert len(seen) >= 4 and all(status == 403 for _, status in seen), seen


def test_the_dashboard_itself_still_runs_a_diff_after_refusals(page, server, kb):
    open_page(page, server)
    page.click("#tab-diff")
    page.select_option("#diff-from", str(kb.version_ids[-1]))
    page.select_option("#diff-to", str(kb.version_ids[0]))
    page.click("#diff-run")
    page.wait_for_selector("#diff-out:not(.hidden) #diff-summary .sum")
    assert "computed on the fly" in page.text_content("#diff-state")
