"""The dashboard's first requests go out before its modules have loaded (issue 30 point 1), in
real Chromium against a real ``kbtool serve``.

``dashboard-early.js`` is a classic script first in the page's head: a deep link
(``/#v=V&fn=SID``, or ``/#fn=SID`` for the newest version) asks for the function's history,
then its first window of disassembly, while every module of the page is still held back
here by the browser's request routing; released, the page ends as a deep link does.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request

import pytest

from tests.support.web import BROWSER_MARKS, ServerProcess, copy_kb

pytestmark = BROWSER_MARKS

MODULES = re.compile(r"/static/(?!dashboard-early\.js)[a-z-]+\.js$")
DISASM = re.compile(r"/api/disasm/\d+/\d+\?kind=wasm&offset=0&limit=300$")
# every fetch the page makes, with when (performance.now()) it was made: set before the
# page's scripts
ASKED = """window.__asked = [];
const fetch0 = window.fetch;
window.fetch = function (u, o) {
  window.__asked.push([String(u), performance.now()]);
  return fetch0.call(this, u, o);
};"""


@pytest.fixture(scope="module")
def server(kb, tmp_path_factory):
    with ServerProcess(copy_kb(kb, tmp_path_factory.mktemp("early") / "served.db")) as srv:
        yield srv


@pytest.fixture()
def page(browser):
    c = browser.new_context(viewport={"width": 1440, "height": 900})
    c.set_default_timeout(30_000)
    p = c.new_page()
    p.add_init_script(ASKED)
    yield p
    c.close()


def api(server, path):
    with urllib.request.urlopen(server.url.rstrip("/") + path, timeout=10) as r:
        return json.loads(r.read())


def asked(page) -> list[tuple[str, float]]:
    return [(u, t) for u, t in page.evaluate("window.__asked || []")]


def wait_asked(page, pattern: str, timeout: float = 30.0) -> float:
    """When (the page's clock) the page first fetched a path matching ``pattern``."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        hit = [t for u, t in asked(page) if re.search(pattern, u)]
        if hit:
            return hit[0]
        page.wait_for_timeout(20)
    raise AssertionError(f"the page never asked for {pattern}; it asked {asked(page)}")


@pytest.mark.parametrize("with_version", [True, False])
def test_deep_link_asks_for_its_lines_before_the_modules_load(page, server, kb, with_version):
    vid, sid = (kb.version_ids[0] if with_version else kb.version_ids[-1]), kb.history_sid
    fn = api(server, f"/api/history/{sid}?version={vid}").get("function")
    if fn is None:
        pytest.skip("the function is not in that version")
    index = fn["index"]
    held: list = []

    def hold(route) -> None:
        held.append(route)

    page.route(MODULES, hold)  # no module of the page loads until released
    frag = f"#v={vid}&fn={sid}" if with_version else f"#fn={sid}"
    page.goto(server.url + frag, wait_until="commit")
    wait_asked(page, re.escape(f"/api/history/{sid}?version={vid}"))
    wait_asked(page, re.escape(f"/api/disasm/{vid}/{index}?kind=wasm&offset=0&limit=300"))
    end = time.monotonic() + 20  # the route's callback runs as Playwright serves the events
    while not held and time.monotonic() < end:
        page.wait_for_timeout(20)
    assert held, "no module was asked for"
    assert page.locator("#fn-panel .win").count() == 0  # nothing ran that could show them
    for r in held:
        r.continue_()
    page.unroute(MODULES, hold)
    # the page then ends as a deep link does: the lines, the list, the history
    page.wait_for_selector(f"body[data-version='{vid}']")
    page.wait_for_selector("#fn-panel .win")
    page.wait_for_function("() => document.getElementById('fn-name').textContent === 'ZSTD_copy16'")
    hist = asked(page)
    assert sum(1 for u, _ in hist if u.startswith(f"/api/history/{sid}")) == 1  # taken once
    assert sum(1 for u, _ in hist if DISASM.search(u)) == 1
