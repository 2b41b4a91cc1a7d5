"""The code pager under forced timings (code.js ``pageCode``, studio.js's feed): a window
that arrives in the same frame as the reader scrolls on to the end is followed by the next
one (the observer alone reports crossings only, so that scroll used to ask for nothing and
the pane stayed short forever); the studio's first feed answer (history: a ``deep-done`` of
the open function from before the page loaded) does not re-open the function and throw the
reader back to line 1; a C view switched away from while its first window is on its way
leaves no "disassembly meanwhile" flag on the next view, and its stale answer does not
clear the flag of a later C view. Real ``kbtool serve``, headless Chromium, responses held
or scrolled against through Playwright."""

from __future__ import annotations

import json
import re
import time

import pytest

from testkit.wasmbuild import have_wabt
from tests.support.paging import BIG, WINDOW, all_lines, build_huge_kb, new_page, until, windows
from tests.support.web import BROWSER_MARKS, ServerProcess, request

pytestmark = [*BROWSER_MARKS, pytest.mark.skipif(not have_wabt(), reason="wat2wasm not installed")]

# In the page: each time a window of lines is added to the pane, scroll the pane to its end
# at once (a microtask, before the next frame): the reader who keeps scrolling as fast as the
# windows come. Records every window as it was added (offset, text).
SCROLL_ON_ARRIVAL = """(sel) => {
  const pre = document.querySelector(sel);
  window.__added = [];
  new MutationObserver((records) => {
    for (const r of records) for (const n of r.addedNodes) {
      if (n.classList && n.classList.contains("win") && !n.classList.contains("meanwhile")) {
        window.__added.push([Number(n.dataset.offset), n.textContent]);
        pre.scrollTop = pre.scrollHeight;
      }
    }
  }).observe(pre, { childList: true, subtree: true });
}"""


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    db, vid, fns = build_huge_kb(tmp_path_factory.mktemp("paging_races"))
    with ServerProcess(db) as srv:
        yield srv, vid, fns[BIG]["stable_id"]


def _lines(srv, vid: int, kind: str) -> list[str]:
    return all_lines(srv, vid, BIG, kind)


_page = new_page


@pytest.mark.parametrize("where", ["studio", "panel"])
def test_scrolling_on_as_each_window_arrives_reaches_the_end(served, browser, where):
    srv, vid, sid = served
    wasm = _lines(srv, vid, "wasm")
    requests: list[str] = []
    errors: list[str] = []
    page = _page(browser, requests, errors)
    if where == "studio":
        page.goto(f"{srv.url.rstrip('/')}/studio#v={vid}&f={BIG}")
        pre, status = "#code", "#code-lines"
    else:
        page.goto(f"{srv.url}#v={vid}&fn={sid}")
        pre, status = "#fn-code-text", "#fn-code-lines"
    until(page, f"(document.querySelector('{status}') || {{}}).textContent?.includes('of ')")
    page.evaluate(SCROLL_ON_ARRIVAL, pre)
    # one scroll to the end; from then on only the page's own scrolls on each arrival
    page.evaluate(
        f"(() => {{ const p = document.querySelector('{pre}'); p.scrollTop = p.scrollHeight; }})()"
    )
    until(page, f"document.querySelector('{pre}').dataset.complete === '1'")
    offsets = list(range(0, len(wasm), WINDOW))
    added = page.evaluate("window.__added")
    # every later window once, in order, with its lines
    assert [o for o, _ in added] == offsets[1:]
    assert all(text == "\n".join(wasm[o : o + WINDOW]) + "\n" for o, text in added)
    later = [w for w in windows(requests, "wasm") if w[0] > 0]
    assert later == [(o, WINDOW) for o in offsets[1:]]
    total = f"{len(wasm):,}"
    assert page.inner_text(status).strip() == f"lines 1–{total} of {total}"
    assert errors == []
    page.close()


def test_studio_feed_history_keeps_the_readers_place(served, browser):
    """The first feed answer is held until the reader has scrolled into the function; when
    it comes (with the open function's ``deep-done`` from before the page loaded), the pane
    keeps its windows and its place: the first window is not asked for again."""
    srv, vid, _sid = served
    requests: list[str] = []
    errors: list[str] = []
    page = _page(browser, requests, errors)
    held: list = []
    feed = re.compile(r"/api/events")
    page.route(feed, lambda route: held.append(route))
    page.goto(f"{srv.url.rstrip('/')}/studio#v={vid}&f={BIG}")
    until(page, "(document.querySelector('#code-lines') || {}).textContent?.includes('of ')")
    page.evaluate(
        "(() => { const p = document.querySelector('#code'); p.scrollTop = p.scrollHeight; })()"
    )
    until(page, "Number(document.querySelector('#code').dataset.shown) > 300")
    top = page.evaluate("document.querySelector('#code').scrollTop")
    assert top > 0
    # the history: the open function's deep-done is in it
    status, _, body = request(srv.port, "/api/events")
    assert status == 200
    assert any(e["kind"] == "deep-done" for e in json.loads(body)["events"])
    end = time.monotonic() + 30  # the first poll starts once the function's analysis is in
    while not held and time.monotonic() < end:
        page.wait_for_timeout(50)
    assert held, "the studio never asked for its feed"
    for route in held:
        route.continue_()
    page.unroute(feed)
    until(page, "document.querySelectorAll('#feed .ev').length > 0")
    # the feed's rows and any re-open happen in one task: what the pane shows now is final
    assert page.evaluate("document.querySelector('#code').scrollTop") == top
    assert windows(requests, "wasm").count((0, WINDOW)) == 1
    assert page.evaluate("Number(document.querySelector('#code').dataset.shown)") > WINDOW
    assert errors == []
    page.close()


def test_a_c_view_left_while_lifting_leaves_the_new_views_flag(served, browser):
    """C asked for (held) -> disassembly meanwhile; wasm: not flagged; C again (held) ->
    meanwhile again; the first C answer, stale by now, does not take its flag away."""
    srv, vid, sid = served
    requests: list[str] = []
    errors: list[str] = []
    page = _page(browser, requests, errors)
    held: list = []
    c_windows = re.compile(r"/api/disasm/.*kind=c")
    page.route(c_windows, lambda route: held.append(route))
    page.goto(f"{srv.url}#v={vid}&fn={sid}")
    pre = "#fn-code-text"
    until(page, "(document.querySelector('#fn-code-lines') || {}).textContent?.includes('of ')")
    page.click("#code-c")
    until(page, f"document.querySelector('{pre}').dataset.meanwhile === '1'")
    page.click("#code-wasm")
    until(page, "document.querySelector('#fn-code-lines').textContent.includes('lines 1–')")
    # the disassembly view is no stand-in: not flagged as one (the C view's flag used to stay)
    assert page.evaluate(f"document.querySelector('{pre}').dataset.meanwhile") is None
    assert page.locator(f"{pre} .win.meanwhile").count() == 0
    page.click("#code-c")
    until(page, f"document.querySelector('{pre}').dataset.meanwhile === '1'")
    assert len(held) == 2
    stale = held[0].request.url
    held[0].continue_()
    # the stale answer is read whole by the page (its resource entry), then its handlers run
    until(page, f"performance.getEntriesByName({json.dumps(stale)}).length > 0")
    page.evaluate("new Promise((ok) => setTimeout(ok, 100))")
    assert page.evaluate(f"document.querySelector('{pre}').dataset.meanwhile") == "1"
    assert page.locator(f"{pre} .win.meanwhile").count() == 1
    held[1].continue_()
    page.unroute(c_windows)
    until(page, f"document.querySelector('{pre}').dataset.meanwhile === undefined")
    until(page, f"Number(document.querySelector('{pre}').dataset.shown) > 0")
    assert page.locator(f"{pre} .win.meanwhile").count() == 0
    assert "lifting C" not in page.inner_text("#fn-code-lines")
    assert errors == []
    page.close()
