"""Huge functions page in the browser (issue 30, point 2): the dashboard's function panel and
the studio ask ``/api/disasm`` for the first window of lines only, load the next windows as
the reader scrolls, show every line once and in order with a "lines N–M of T" status, keep
at most ``KEEP`` windows of lines in the DOM (farther ones become empty blocks of the same
height, fetched again when scrolled back to, with the right lines), and show a hostile name
that first appears in a later window as text. Real ``kbtool serve``, headless Chromium, a
module assembled here with one function of a few thousand instructions."""

from __future__ import annotations

import json
import re
import time

import pytest

from testkit.wasmbuild import have_wabt
from tests.support.paging import (
    BIG,
    KEEP,
    WINDOW,
    all_lines,
    build_huge_kb,
    new_page,
    until,
    windows,
)
from tests.support.web import BROWSER_MARKS, XSS_IMG, ServerProcess, request

pytestmark = [*BROWSER_MARKS, pytest.mark.skipif(not have_wabt(), reason="wat2wasm not installed")]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    db, vid, fns = build_huge_kb(tmp_path_factory.mktemp("paging"))
    with ServerProcess(db) as srv:
        yield srv, vid, fns[BIG]["stable_id"]


_until = until
_windows = windows


def _all_lines(srv, vid: int, kind: str) -> list[str]:
    return all_lines(srv, vid, BIG, kind)


_all_lines_of = all_lines


_page = new_page


def _live(page, pre: str) -> dict[int, str]:
    """The windows that hold lines now: offset -> their text."""
    return dict(
        page.evaluate(
            f"[...document.querySelectorAll('{pre} .win:not(.gone)')]"
            ".map((w) => [Number(w.dataset.offset), w.textContent])"
        )
    )


def _bounded(page, pre: str) -> dict[int, str]:
    """The live windows, after checking the DOM holds no more than ``KEEP`` windows of lines
    (the emptied ones hold no text)."""
    live = _live(page, pre)
    assert len(live) <= KEEP, sorted(live)
    text = page.evaluate(f"document.querySelector('{pre}').textContent")
    assert text == "".join(live[o] for o in sorted(live))
    assert text.count("\n") <= KEEP * WINDOW
    return live


def _scroll_to_end(page, pre: str, lines: list[str]) -> dict[int, str]:
    """Scroll the code pane to its bottom until every line arrived; every window's text as
    it was shown (offset -> text), the DOM bounded at each step."""
    seen: dict[int, str] = {}
    for _ in range(len(lines) // WINDOW + 5):
        seen.update(_bounded(page, pre))
        if page.evaluate(f"document.querySelector('{pre}').dataset.complete === '1'"):
            break
        shown = page.evaluate(f"Number(document.querySelector('{pre}').dataset.shown)")
        page.evaluate(
            f"(() => {{ const p = document.querySelector('{pre}'); p.scrollTop = p.scrollHeight; }})()"
        )
        _until(page, f"Number(document.querySelector('{pre}').dataset.shown) > {shown}")
    assert page.evaluate(f"document.querySelector('{pre}').dataset.complete === '1'")
    seen.update(_bounded(page, pre))
    return seen


def _window_text(lines: list[str], offset: int) -> str:
    return "\n".join(lines[offset : offset + WINDOW]) + "\n"


def _scroll_back(page, pre: str, lines: list[str], offset: int) -> None:
    """Scroll to the window at ``offset`` (emptied by now): its lines come back, right."""
    sel = f"{pre} .win[data-offset='{offset}']"
    assert page.evaluate(f"document.querySelector(\"{sel}\").classList.contains('gone')")
    page.evaluate(
        f"(() => {{ const p = document.querySelector('{pre}');"
        f' const w = document.querySelector("{sel}");'
        " p.scrollTop = w.offsetTop - p.offsetTop + 40; })()"
    )
    _until(page, f"!document.querySelector(\"{sel}\").classList.contains('gone')")
    live = _bounded(page, pre)
    assert live[offset] == _window_text(lines, offset)
    # the window is where the reader scrolled: on screen in the pane
    seen = page.evaluate(
        f"(() => {{ const p = document.querySelector('{pre}').getBoundingClientRect();"
        f' const w = document.querySelector("{sel}").getBoundingClientRect();'
        " return w.top < p.bottom && w.bottom > p.top; })()"
    )
    assert seen


def _check_paged(page, requests, pre: str, status: str, kind: str, lines: list[str]) -> None:
    total = len(lines)
    assert total > 3 * WINDOW
    # the first screen: one window asked for, the status says how many lines there are
    _until(
        page, f"(document.querySelector('{status}') || {{}}).textContent?.includes('of {total:,}')"
    )
    time.sleep(0.3)  # nothing else is asked for while the reader does not scroll
    if kind != "clean":  # the cleaned C arrives whole with the analysis, and renders by pages
        assert _windows(requests, kind) == [(0, WINDOW)]
    assert f"lines 1–{WINDOW:,} of {total:,}" in page.inner_text(status)
    assert (
        page.evaluate(f"document.querySelector('{pre}').textContent")
        == "\n".join(lines[:WINDOW]) + "\n"
    )

    seen = _scroll_to_end(page, pre, lines)
    # every line once, in order, though never more than KEEP windows at once; each window
    # asked for once, in order
    offsets = list(range(0, total, WINDOW))
    assert sorted(seen) == offsets
    assert "".join(seen[o] for o in offsets) == "\n".join(lines) + "\n"
    assert page.evaluate(f"document.querySelectorAll('{pre} .win').length") == len(offsets)
    assert len(_live(page, pre)) == KEEP  # the rest were emptied
    if kind != "clean":
        assert _windows(requests, kind) == [(o, WINDOW) for o in offsets]
    assert page.inner_text(status).strip() == f"lines 1–{total:,} of {total:,}"
    # scrolling back shows the right lines again (fetched again), bounded as before
    assert len(offsets) > KEEP + 1  # so that each end is emptied while the reader is at the other
    for offset in (0, offsets[-1]):
        _scroll_back(page, pre, lines, offset)
    if kind != "clean":
        asked = _windows(requests, kind)
        assert asked[: len(offsets)] == [(o, WINDOW) for o in offsets]
        assert (0, WINDOW) in asked[len(offsets) :]  # the first window was fetched again


def test_dashboard_panel_pages_a_huge_function(served, browser):
    srv, vid, sid = served
    requests: list[str] = []
    errors: list[str] = []
    page = _page(browser, requests, errors)
    page.goto(f"{srv.url}#v={vid}&fn={sid}")
    page.wait_for_selector("#fn-code-text")
    wasm = _all_lines(srv, vid, "wasm")
    _check_paged(page, requests, "#fn-code-text", "#fn-code-lines", "wasm", wasm)

    # the C view pages the same way
    page.click("#code-c")
    _check_paged(page, requests, "#fn-code-text", "#fn-code-lines", "c", _all_lines(srv, vid, "c"))
    # and the cleaned C (from `kbtool deep`) renders by the same pages
    status, _, body = request(srv.port, f"/api/analysis/{sid}")
    assert status == 200, body[:200]
    clean = json.loads(body)["clean_c"].rstrip("\n").split("\n")
    asked = len([u for u in requests if "/api/disasm/" in u])
    page.click("#code-clean")
    _check_paged(page, requests, "#fn-code-text", "#fn-code-lines", "clean", clean)
    assert len([u for u in requests if "/api/disasm/" in u]) == asked  # no code call for it
    assert errors == []
    page.close()


def test_hostile_name_in_a_later_window_is_text(served, browser):
    srv, vid, _sid = served
    wasm = _all_lines(srv, vid, "wasm")
    first = next(i for i, line in enumerate(wasm) if "onerror" in line)
    assert first >= WINDOW, "the hostile name must first show in a later window"
    requests: list[str] = []
    errors: list[str] = []
    page = _page(browser, requests, errors)
    page.goto(f"{srv.url.rstrip('/')}/studio#v={vid}&f={BIG}")
    _until(page, "(document.querySelector('#code-lines') || {}).textContent?.includes('of ')")
    # only the first window before any scroll, asked for once (the feed's history, with this
    # function's deep-done, no longer re-opens it)
    assert _windows(requests, "wasm") == [(0, WINDOW)]
    assert XSS_IMG not in page.inner_text("#code")
    seen = _scroll_to_end(page, "#code", wasm)
    at = first - first % WINDOW
    assert wasm[first] in seen[at]
    if at in _live(page, "#code"):  # shown now, or once more after scrolling back to it
        assert XSS_IMG in page.inner_text("#code")
    else:
        _scroll_back(page, "#code", wasm, at)
    assert XSS_IMG in page.inner_text("#code")  # shown as text ...
    assert page.locator("#code img").count() == 0  # ... never as an element
    assert page.evaluate("window.__xss") is None
    assert page.inner_text("#code-lines").strip() == f"lines 1–{len(wasm):,} of {len(wasm):,}"
    assert errors == []
    page.close()


def test_small_function_is_one_window(served, browser):
    srv, vid, _sid = served
    lines = _all_lines_of(srv, vid, 0)
    assert len(lines) < WINDOW
    requests: list[str] = []
    errors: list[str] = []
    page = _page(browser, requests, errors)
    page.goto(f"{srv.url.rstrip('/')}/studio#v={vid}&f=0")
    _until(page, "document.querySelector('#code').dataset.complete === '1'")
    assert _windows(requests, "wasm") == [(0, WINDOW)]
    assert page.evaluate("document.querySelector('#code').textContent") == "\n".join(lines) + "\n"
    assert page.inner_text("#code-lines").strip() == f"lines 1–{len(lines)} of {len(lines)}"
    assert errors == []
    page.close()


@pytest.mark.parametrize("where", ["studio", "panel"])
def test_c_view_shows_the_disassembly_while_the_c_is_lifted(served, browser, where):
    """A C window that takes long (held here, as a huge function's lift would) leaves the
    disassembly's first window on screen, labelled; the C replaces it when it comes."""
    srv, vid, sid = served
    wasm, c = _all_lines(srv, vid, "wasm"), _all_lines(srv, vid, "c")
    requests: list[str] = []
    errors: list[str] = []
    page = _page(browser, requests, errors)
    held: list = []
    c_windows = re.compile(r"/api/disasm/.*kind=c")

    def hold(route) -> None:
        held.append(route)

    page.route(c_windows, hold)
    if where == "studio":
        page.goto(f"{srv.url.rstrip('/')}/studio#v={vid}&f={BIG}")
        pre, status, button = "#code", "#code-lines", "#v-c"
    else:
        page.goto(f"{srv.url}#v={vid}&fn={sid}")
        pre, status, button = "#fn-code-text", "#fn-code-lines", "#code-c"
    _until(page, f"(document.querySelector('{status}') || {{}}).textContent?.includes('of ')")
    page.click(button)
    _until(page, f"document.querySelector('{pre}').dataset.meanwhile === '1'")
    assert held  # the C was asked for, and is not answered yet
    assert page.evaluate(f"document.querySelector('{pre}').textContent") == _window_text(wasm, 0)
    assert "lifting C" in page.inner_text(status)
    for route in held:
        route.continue_()
    page.unroute(c_windows, hold)
    _until(page, f"document.querySelector('{pre}').dataset.meanwhile === undefined")
    _until(page, f"Number(document.querySelector('{pre}').dataset.total) === {len(c)}")
    assert page.evaluate(f"document.querySelector('{pre}').textContent") == _window_text(c, 0)
    assert page.inner_text(status).strip().startswith(f"lines 1–{WINDOW:,} of {len(c):,}")
    assert errors == []
    page.close()
