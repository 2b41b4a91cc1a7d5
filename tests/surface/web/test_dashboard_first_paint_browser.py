"""The dashboard paints before the whole function list has come (issue 30 point 1), in real
Chromium against a real ``kbtool serve``: the heatmap from the compact cells, the function
panel of a deep link with its code lines; the whole list (held back here by the browser's
request routing) then brings names, picks and code links, and the page ends as it does when
nothing is held."""

from __future__ import annotations

import json
import re
import time
import urllib.request

import pytest

from tests.support.web import BROWSER_MARKS, ServerProcess, copy_kb

pytestmark = BROWSER_MARKS

WHOLE_LIST = re.compile(r"/api/versions/\d+/functions$")  # not ?form=cells
PIXELS = """() => {
  const c = document.getElementById('heatmap'), d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let h = 0;
  for (let i = 0; i < d.length; i += 4) h = (h * 31 + d[i] * 7 + d[i + 1] * 3 + d[i + 2]) | 0;
  return [c.width, c.height, h];
}"""


@pytest.fixture(scope="module")
def server(kb, tmp_path_factory):
    with ServerProcess(copy_kb(kb, tmp_path_factory.mktemp("paint") / "served.db")) as srv:
        yield srv


@pytest.fixture()
def ctx(browser):
    c = browser.new_context(viewport={"width": 1440, "height": 900})
    c.set_default_timeout(30_000)
    yield c
    c.close()


def api(server, path):
    with urllib.request.urlopen(server.url.rstrip("/") + path, timeout=10) as r:
        return json.loads(r.read())


class Held:
    """The whole function list's requests, held until :meth:`release`."""

    def __init__(self, page) -> None:
        self.routes: list = []
        self.page = page
        page.route(WHOLE_LIST, self._hold)

    def _hold(self, route) -> None:
        self.routes.append(route)

    def wait(self, seconds: float = 30.0) -> None:
        """Until the page has asked for the list (the route's callback runs as Playwright
        serves the page's events: a fixed wait was too short on a slow machine)."""
        end = time.monotonic() + seconds
        while not self.routes and time.monotonic() < end:
            self.page.wait_for_timeout(50)
        assert self.routes, "the page never asked for the whole list"

    def release(self) -> None:
        routes, self.routes = self.routes, []
        for r in routes:
            r.continue_()
        self.page.unroute(WHOLE_LIST, self._hold)


def test_heatmap_painted_from_the_cells_then_named(ctx, server, kb):
    vid = kb.version_ids[-1]
    fns = api(server, f"/api/versions/{vid}/functions")
    page = ctx.new_page()
    held = Held(page)
    page.goto(server.url)
    page.wait_for_selector(f"body[data-painted='{vid}']")
    held.wait()  # asked for, and held: nothing below waits for it
    assert page.get_attribute("body", "data-version") is None
    assert page.get_attribute("#heatmap", "data-cells") == str(len(fns))
    assert page.text_content("#cov-counts").endswith(f"/ {len(fns)} defined functions")
    early = page.evaluate(PIXELS)
    # a named cell: its provenance now, its name once the list is here
    pos = next(i for i, f in enumerate(fns) if f["stable_id"] == kb.script_sid)
    box = page.locator("#heatmap").bounding_box()
    cell = int(page.get_attribute("#heatmap", "data-cell"))
    cols = int(page.get_attribute("#heatmap", "data-cols"))
    x = box["x"] + (pos % cols) * cell + cell / 2
    y = box["y"] + (pos // cols) * cell + cell / 2
    page.mouse.move(x, y)
    tip = page.locator("#tooltip")
    tip.wait_for(state="visible")
    assert "loading names…" in tip.text_content() and f"#{fns[pos]['index']}" in tip.text_content()
    assert "oracle" in tip.text_content()
    page.mouse.click(x, y)  # picked before the names: opened when they come
    assert page.is_hidden("#fn-view")
    held.release()
    page.wait_for_selector(f"body[data-version='{vid}']")
    page.wait_for_function(
        "(s) => document.getElementById('fn-sub').textContent.includes(s)", arg=kb.script_sid
    )
    assert page.get_attribute("#heatmap", "data-sel") == str(fns[pos]["index"])
    page.wait_for_function(  # the tooltip under the pointer gets its name
        "(s) => document.getElementById('tooltip').textContent.includes(s)", arg=kb.script_sid
    )
    assert page.evaluate(PIXELS) == early  # nothing drawn again: the same cells
    page.close()
    # the same page as one loaded with nothing held
    plain = ctx.new_page()
    plain.goto(server.url)
    plain.wait_for_selector(f"body[data-version='{vid}']")
    assert plain.evaluate(PIXELS) == early
    plain.close()


def _code_with_links(server, kb) -> tuple[int, str]:
    """A (version, stable id) whose disassembly calls a named function."""
    vid = kb.version_ids[-1]
    named = {f["index"] for f in api(server, f"/api/versions/{vid}/functions") if f["name"]}
    for f in api(server, f"/api/versions/{vid}/functions"):
        hist = api(server, f"/api/history/{f['stable_id']}?version={vid}")
        if any(c.get("index") in named for c in (hist.get("facts") or {}).get("callees", [])):
            return vid, f["stable_id"]
    pytest.skip("no function of the demo KB calls a named one")


def test_deep_link_shows_code_before_the_list_then_links(ctx, server, kb):
    vid, sid = _code_with_links(server, kb)
    page = ctx.new_page()
    held = Held(page)
    page.goto(f"{server.url}#v={vid}&fn={sid}")
    page.wait_for_selector("#fn-panel .win")  # the function's first lines, list held
    held.wait()  # (the lines may come before the list is even asked for)
    assert page.get_attribute("body", "data-version") is None
    assert page.locator("#fn-code-text .fnref").count() == 0  # no names yet
    assert sid in page.text_content("#fn-sub")
    lines = page.inner_text("#fn-code-text")
    held.release()
    page.wait_for_selector(f"body[data-version='{vid}']")
    page.wait_for_selector("#fn-code-text .fnref")  # the same lines, now with name links
    assert page.inner_text("#fn-code-text") == lines
    linked = page.inner_html("#fn-code-text")
    page.close()
    plain = ctx.new_page()
    plain.goto(f"{server.url}#v={vid}&fn={sid}")
    plain.wait_for_selector(f"body[data-version='{vid}']")
    plain.wait_for_selector("#fn-code-text .fnref")
    assert plain.inner_html("#fn-code-text") == linked
    assert plain.get_attribute("#heatmap", "data-sel") is not None
    plain.close()
