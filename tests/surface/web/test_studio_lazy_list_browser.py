"""The studio opened on a function (``/studio#v=V&f=N``) shows its lines before the version's
function list (issue 30 point 1, studio.js ``openEarly``): the list is asked for once the
lines are on screen, and once it is here the page is the one a person gets by opening the
version and clicking the function (same list, header, lines, links, side panels). Real
``kbtool serve`` on a KB with a huge function, headless Chromium, the list held through
Playwright."""

from __future__ import annotations

import json

import pytest

from testkit.wasmbuild import have_wabt
from tests.support.paging import (
    BIG,
    WINDOW,
    all_lines,
    build_huge_kb,
    held_page,
    new_page,
    serve_until,
    until,
)
from tests.support.web import BROWSER_MARKS, ServerProcess, request

pytestmark = [*BROWSER_MARKS, pytest.mark.skipif(not have_wabt(), reason="wat2wasm not installed")]

MAX_LIST = 600  # rows the studio's list shows (studio.js)
SETTLED = (
    "document.querySelector('#dataxrefs #fn-data') !== null"
    " && / callers$/.test(document.querySelector('#xrefs div.faint')?.textContent || '')"
    " && !/loading/.test(document.querySelector('#trail').textContent)"
)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    db, vid, _fns = build_huge_kb(tmp_path_factory.mktemp("studio_lazy_list"))
    with ServerProcess(db) as srv:
        yield srv, vid


def _functions(srv, vid: int) -> list[dict]:
    status, _, body = request(srv.port, f"/api/versions/{vid}/functions")
    assert status == 200
    return json.loads(body)


def _seen(page) -> dict[str, str]:
    """What a person reads on the page (its panes' text, the code's links)."""
    out = {
        sel: page.inner_text(sel)
        for sel in ("#fname", "#fmeta", "#fcount", "#flist", "#code", "#code-lines", "#knowledge")
    }
    out["xrefs"] = page.inner_text("#xrefs")
    out["links"] = json.dumps(
        page.eval_on_selector_all("#code .fnref", "(n) => n.map((x) => x.title)")
    )
    out["selected"] = json.dumps(page.eval_on_selector_all("#flist .fn.sel", "(n) => n.length"))
    return out


def test_the_list_fills_after_the_code_and_is_the_whole_version(served, browser):
    srv, vid = served
    requests: list[str] = []
    errors: list[str] = []
    page, held, listing = held_page(browser, rf"/api/versions/{vid}/functions", requests, errors)
    page.goto(f"{srv.url.rstrip('/')}/studio#v={vid}&f={BIG}")
    # the lines come while the list is held: the page does not wait for it
    until(page, "Number(document.querySelector('#code').dataset.shown) > 0")
    until(page, "document.querySelector('#fname').textContent.length > 0")
    lines = all_lines(srv, vid)
    shown = page.inner_text("#code .win").rstrip("\n").split("\n")
    assert [x.rstrip() for x in shown] == [x.rstrip() for x in lines[:WINDOW]]
    assert page.locator("#flist .fn").count() == 0
    serve_until(page, lambda: bool(held), 20)  # (the route's callback runs then)
    assert len(held) == 1  # asked for once the lines are on screen
    held[0].continue_()
    page.unroute(listing)
    until(page, SETTLED)
    # the list once here: every function of the version, in the API's order and names
    fns = _functions(srv, vid)
    assert page.text_content("#fcount") == f"{len(fns)} of {len(fns)}"
    rows = page.eval_on_selector_all(
        "#flist .fn",
        "(n) => n.map((x) => [Number(x.dataset.index), x.querySelector('.nm').textContent])",
    )
    assert rows == [[f["index"], f["name"] or "unnamed"] for f in fns[:MAX_LIST]]
    assert page.locator("#flist img").count() == 0  # the hostile name is text
    big = next(f for f in fns if f["index"] == BIG)
    assert page.text_content("#fname") == f"{big['name'] or 'unnamed'}  #{BIG}"
    assert big["stable_id"] in page.inner_text("#fmeta")
    assert page.locator("#code .fnref").count() > 0  # the lines on screen now link names
    assert errors == []
    page.close()


def test_the_page_once_loaded_is_the_one_a_click_gives(served, browser):
    """Opened on the function from the address (lines first, list after) and opened by
    clicking it in the version's list: the same page."""
    srv, vid = served
    errors: list[str] = []
    early = new_page(browser, [], errors)
    early.goto(f"{srv.url.rstrip('/')}/studio#v={vid}&f={BIG}")
    until(early, f"document.body.dataset.opened === '{BIG}'")
    until(early, SETTLED)
    until(early, "document.querySelectorAll('#code .fnref').length > 0")
    clicked = new_page(browser, [], errors)
    clicked.goto(f"{srv.url.rstrip('/')}/studio#v={vid}")
    until(clicked, SETTLED)
    clicked.click(f'#flist .fn[data-index="{BIG}"]')
    # the previous function's panes meet SETTLED too: wait for the page's word that the
    # clicked one's are on screen (found by CI: the first function's xrefs read as big's)
    until(clicked, f"document.body.dataset.opened === '{BIG}'")
    until(clicked, SETTLED)
    until(clicked, "Number(document.querySelector('#code').dataset.shown) > 0")
    a, b = _seen(early), _seen(clicked)
    assert a == b
    assert errors == []
    early.close()
    clicked.close()


def test_a_function_not_in_the_version_says_so_and_the_list_still_comes(served, browser):
    srv, vid = served
    errors: list[str] = []
    page = new_page(browser, [], errors)
    page.goto(f"{srv.url.rstrip('/')}/studio#v={vid}&f=99999")
    until(page, "document.querySelector('#code .faint') !== null")
    assert "code unavailable" in page.inner_text("#code")
    n = len(_functions(srv, vid))
    until(page, f"document.querySelector('#fcount').textContent === '{n} of {n}'")
    assert page.locator("#flist .fn").count() == min(n, MAX_LIST)
    assert errors == []
    page.close()


def test_the_xrefs_shown_are_the_open_functions_whichever_answer_comes_last(served, browser):
    """A function clicked while the call graph asked for the one opened before is still on
    its way: one call graph request for the version, and the callers and callees shown are
    the clicked function's once it comes (a late answer never fills another's panel)."""
    srv, vid = served
    requests: list[str] = []
    errors: list[str] = []
    page, held, graph = held_page(browser, rf"/api/callgraph/{vid}", requests, errors)
    page.goto(f"{srv.url.rstrip('/')}/studio#v={vid}")
    until(page, "document.body.dataset.started === '1'")
    page.click(f'#flist .fn[data-index="{BIG}"]')
    # the clicked function's data uses are asked for right after its call graph would be
    serve_until(page, lambda: any(f"target=%23{BIG}" in u for u in requests))
    page.wait_for_timeout(300)  # (a second call graph request, if any, reaches the route)
    assert len(held) == 1
    held[0].continue_()
    page.unroute(graph)
    until(page, f"document.body.dataset.opened === '{BIG}'")
    status, _, body = request(srv.port, f"/api/callgraph/{vid}")
    assert status == 200
    edges = json.loads(body)["edges"]
    callers = sum(1 for e in edges if e["callee"] == BIG)
    callees = sum(1 for e in edges if e["caller"] == BIG)
    shown = page.inner_text("#xrefs").split("\n")
    assert shown[0] == f"{callers} callers"
    assert f"{callees} callees" in shown
    assert errors == []
    page.close()
