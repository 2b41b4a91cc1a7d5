"""The studio's neighbourhood graph and the dashboard's code section in headless Chromium
against a real `kbtool serve`: graph nodes for callers and callees (clicking one opens it),
the Raw WASM / C toggle of the dashboard's function panel, `#index` search, the per-function
diff, and hostile strings shown literally with no script run."""

from __future__ import annotations

import json
import time

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from tests.support.web import BROWSER_MARKS, XSS_SCRIPT, ServerProcess, copy_kb, request

pytestmark = BROWSER_MARKS


@pytest.fixture(scope="module")
def served(kb, tmp_path_factory):
    db = copy_kb(kb, tmp_path_factory.mktemp("graph") / "served.db")
    with ServerProcess(db) as srv:
        yield srv, db


def _until(page, expression: str, seconds: float = 30.0) -> None:
    """Poll a page expression from Python (the CSP forbids wait_for_function's strings)."""
    end = time.monotonic() + seconds
    while not page.evaluate(expression):
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {expression}")
        time.sleep(0.1)


def _get(srv, path):
    status, _, body = request(srv.port, path)
    assert status == 200, (path, body[:200])
    return json.loads(body)


def _page(browser, errors):
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.set_default_timeout(30_000)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return page


def test_graph_draws_callers_and_callees_and_opens_them(served, browser):
    srv, db = served
    conn = open_ro(db)
    vid = queries.latest_version_id(conn)
    conn.close()
    graph = _get(srv, f"/api/callgraph/{vid}")
    defined = {n["index"] for n in graph["nodes"] if not n.get("imported")}
    callers: dict[int, set[int]] = {}
    callees: dict[int, set[int]] = {}
    for e in graph["edges"]:
        callers.setdefault(e["callee"], set()).add(e["caller"])
        callees.setdefault(e["caller"], set()).add(e["callee"])
    # a defined function with both callers and defined callees
    center = next(
        i
        for i in sorted(defined)
        if callers.get(i, set()) - {i} and (callees.get(i, set()) & defined) - {i}
    )
    errors: list[str] = []
    page = _page(browser, errors)
    page.goto(f"{srv.url.rstrip('/')}/studio#v={vid}&f={center}")
    page.wait_for_selector(f"#graph .node.center[data-index='{center}']")
    shown = {
        int(x)
        for x in page.eval_on_selector_all(
            "#graph .node[data-index]", "els => els.map(e => e.dataset.index)"
        )
    }
    assert callers[center] - {center} & shown, "no caller drawn"
    assert callees[center] - {center} & shown, "no callee drawn"
    assert page.locator("#graph .edge").count() >= 2
    # the layout is deterministic: the same function draws the same SVG
    first = page.inner_html("#graph")
    target = min((callees[center] & defined) - {center})
    page.click(f"#graph .node[data-index='{target}']")
    page.wait_for_selector(f"#graph .node.center[data-index='{target}']")
    assert f"#{target}" in page.inner_text("#fname")
    assert page.evaluate("location.hash").endswith(f"&f={target}")
    page.goto(f"{srv.url.rstrip('/')}/studio#v={vid}&f={center}")
    page.reload()
    page.wait_for_selector(f"#graph .node.center[data-index='{center}']")
    assert page.inner_html("#graph") == first
    assert errors == []
    page.close()


def test_graph_caps_a_hub_with_more_node(served, browser):
    """The most-called function: at most CAP nodes per column plus a "+N more" node."""
    srv, db = served
    conn = open_ro(db)
    vid = queries.latest_version_id(conn)
    conn.close()
    graph = _get(srv, f"/api/callgraph/{vid}")
    callers: dict[int, set[int]] = {}
    for e in graph["edges"]:
        callers.setdefault(e["callee"], set()).add(e["caller"])
    defined = {n["index"] for n in graph["nodes"] if not n.get("imported")}
    hub = max((i for i in callers if i in defined), key=lambda i: (len(callers[i]), -i))
    n = len(callers[hub] - {hub})
    errors: list[str] = []
    page = _page(browser, errors)
    page.goto(f"{srv.url.rstrip('/')}/studio#v={vid}&f={hub}")
    page.wait_for_selector(f"#graph .node.center[data-index='{hub}']")
    text = page.inner_text("#graph")
    assert f"callers ({len(callers[hub])})" in text
    print(f"fixture hub #{hub}: {n} callers")
    if n > 12:
        assert f"+{n - 12} more" in text
        page.click("#graph .node.more[data-col='1']")  # the real studio expands the column
        gone = f"!document.querySelector('#graph').textContent.includes('+{n - 12} more')"
        _until(page, gone)
        shown = page.evaluate("document.querySelectorAll('#graph .node[data-index]').length")
        assert shown >= 1 + min(n, 12 + 100)
    assert errors == []
    page.close()


def test_dashboard_code_toggle_and_index_search(served, browser, kb):
    srv, db = served
    conn = open_ro(db)
    vid = queries.latest_version_id(conn)
    script = next(f for f in queries.list_functions(conn, vid) if f["name"] == XSS_SCRIPT)
    conn.close()
    disasm = _get(srv, f"/api/disasm/{vid}/{script['index']}")
    errors: list[str] = []
    page = _page(browser, errors)
    page.goto(srv.url)
    page.wait_for_selector("body[data-ready='1']")
    page.fill("#search", f"#{script['index']}")
    page.press("#search", "Enter")
    page.wait_for_selector("#fn-code .code")
    page.click("#code-wasm")
    first_line = disasm["mnemonics"].strip().splitlines()[0].strip()
    _until(page, "document.querySelector('#fn-code .code').textContent.includes('end')")
    assert first_line.split()[0] in page.inner_text("#fn-code .code")
    page.click("#code-c")
    _until(page, "document.querySelector('#fn-code .code').textContent.includes('{')")
    # the hostile name is the function's own name: shown literally in the panel and in the
    # disassembly's header line, never run
    assert XSS_SCRIPT in page.inner_text("#fn-name")
    page.click("#code-wasm")
    _until(page, "document.querySelector('#fn-code .code').textContent.includes('</script>')")
    assert XSS_SCRIPT in page.inner_text("#fn-code .code")
    assert page.evaluate("window.__xss") is None
    assert page.locator("#fn-code script").count() == 0
    page.click("#code-clean")
    # "loading…" until the function's analysis has come (its own request): wait for the hint
    _until(page, "document.querySelector('#fn-code').textContent.includes('kbtool deep')")
    assert errors == []
    page.close()


def test_alignment_of_lines(served, browser):
    """fndiff.alignLines: operands normalised, so a changed constant is one changed row."""
    srv, _ = served
    errors: list[str] = []
    page = _page(browser, errors)
    page.goto(srv.url)
    page.wait_for_selector("body[data-ready='1']")
    rows = page.evaluate("""async () => {
        const m = await import('/static/fndiff.js');
        return m.alignLines(['a', '00f0: i32.const 1', 'call 5', 'b', '0100: end'],
                            ['a', '00f4: i32.const 2', 'b', 'x', '010a: end']);
    }""")
    assert rows == [
        ["a", "a", "same"],
        ["00f0: i32.const 1", "00f4: i32.const 2", "changed"],
        ["call 5", None, "del"],
        ["b", "b", "same"],
        [None, "x", "add"],
        ["0100: end", "010a: end", "same"],
    ]
    assert errors == []
    page.close()


def test_modified_diff_row_shows_side_by_side(served, browser):
    srv, db = served
    conn = open_ro(db)
    vids = [v["id"] for v in queries.list_versions(conn)]
    conn.close()
    a, b = vids[-2], vids[-1]
    rep = _get(srv, f"/api/diff?from={a}&to={b}")
    mod = [c for c in rep["changes"] if c["classification"] == "modified"]
    if not mod:
        pytest.skip("the fixture's diff has no modified function")
    errors: list[str] = []
    page = _page(browser, errors)
    page.goto(srv.url)
    page.wait_for_selector("body[data-ready='1']")
    page.click("#tab-diff")
    page.select_option("#diff-from", str(a))
    page.select_option("#diff-to", str(b))
    page.click("#diff-run")
    page.wait_for_selector("#diff-table tbody tr")
    page.select_option("#diff-class", "modified")
    page.click("#diff-table tbody tr.mod >> nth=0")
    page.wait_for_selector("#diff-fn .sbs-table tbody tr")
    assert page.locator("#diff-fn tr.changed, #diff-fn tr.del, #diff-fn tr.add").count() > 0
    head = page.inner_text("#diff-fn .sbs-head")
    assert "changed" in head and "→" in head
    page.click("#sbs-close")
    assert not page.is_visible("#diff-fn")
    assert errors == []
    page.close()


def test_graph_of_a_synthetic_hub_is_capped_dashed_and_deterministic(served, browser):
    """graph.js on a made-up call graph: a function with 3,000 callers (every tenth an
    indirect candidate) draws CAP caller nodes plus "+N more", dashes indirect edges, sorts
    direct callers first, and draws the same SVG twice."""
    srv, db = served
    conn = open_ro(db)
    vid = queries.latest_version_id(conn)
    first = queries.list_functions(conn, vid)[0]["index"]
    conn.close()
    errors: list[str] = []
    page = _page(browser, errors)
    page.goto(f"{srv.url.rstrip('/')}/studio#v={vid}&f={first}")
    page.wait_for_selector("#graph .node.center")
    out = page.evaluate("""async () => {
        const g = await import('/static/graph.js');
        const edges = [];
        for (let i = 1; i <= 3000; i++) edges.push({caller: 10000 - i, callee: 5, kind: i % 10 ? 'direct' : 'indirect'});
        edges.push({caller: 9999, callee: 5, kind: 'indirect'});
        edges.push({caller: 20000, callee: 9990, kind: 'direct'});
        edges.push({caller: 30000, callee: 7001, kind: 'direct'});
        edges.push({caller: 5, callee: 6, kind: 'indirect'});
        edges.push({caller: 6, callee: 7, kind: 'direct'});
        const graph = {nodes: [], edges};
        const root = document.getElementById('nbgraph');
        const t0 = performance.now();
        const nb = g.drawNeighbourhood(root, graph, 5, (i) => ({name: 'f' + i, provenance: 'agent'}), () => {});
        const ms = performance.now() - t0;
        const html1 = root.outerHTML;
        g.drawNeighbourhood(root, graph, 5, (i) => ({name: 'f' + i, provenance: 'agent'}), () => {});
        return {cap: g.CAP, callers: nb.callers, cols: nb.cols.map((c) => [c.shown, c.more]),
                text: root.textContent, same: html1 === root.outerHTML, ms,
                dashed: [...root.querySelectorAll('.edge.indirect')].map((e) => e.dataset.kind),
                nodes: root.querySelectorAll('.node[data-index]').length};
    }""")
    cap = out["cap"]
    assert out["callers"] == 3001  # edges, one caller twice (direct and indirect)
    shown, more = out["cols"][1]
    assert len(shown) == cap and more == 3000 - cap
    assert shown == sorted(shown) and shown[0] == 7001  # 7000 is indirect: direct first
    assert all((10000 - i) % 10 for i in shown)  # no indirect-only caller before the direct ones
    assert out["cols"][0] == [[30000], 0]  # 20000 calls 9990, which is not shown
    assert out["cols"][3] == [[6], 0] and out["cols"][4] == [[7], 0]
    assert f"+{3000 - cap} more" in out["text"]
    assert out["dashed"] == ["indirect"]  # 5 -> 6
    assert out["nodes"] == cap + 4 and out["same"]
    print(f"hub of 3,000 callers drawn in {out['ms']:.1f} ms")
    # "+N more" expands its column by a page; the last page leaves no "+N more"
    more = "#nbgraph .node.more[data-col='1']"
    callers = "#nbgraph .node[data-index]"
    page.click(more)
    page_size = page.evaluate("import('/static/graph.js').then((g) => g.PAGE)")
    assert page.locator(callers).count() == cap + 4 + page_size
    assert f"+{3000 - cap - page_size} more" in page.inner_text("#graph")
    page.keyboard.press("Enter")  # the expanded node keeps the focus: the next page
    shown = cap + 2 * page_size
    assert page.locator(callers).count() == shown + 4
    t0 = time.monotonic()
    page.click(more, modifiers=["Shift"])  # shift: the rest at once
    expand_s = time.monotonic() - t0
    # every caller once, and 20000 (which calls 9990, now shown) joins the callers² column
    assert page.locator(callers).count() == 3000 + 5
    assert page.locator("#nbgraph .node[data-index='20000']").count() == 1
    assert page.locator("#nbgraph .node.more").count() == 0
    assert page.evaluate("document.querySelectorAll('#nbgraph .edge').length") >= 3000
    # the box scrolls: the last caller is reachable. Scrolled to through the DOM: Playwright's
    # own scroll first waits for the node to keep its place over two animation frames, and a
    # slow machine drawing these 6,000 SVG elements gave it no two frames in 15 s.
    inside = page.evaluate("""() => {
        const n = document.querySelector("#nbgraph .node[data-index='7000']");
        n.scrollIntoView({ block: "nearest", inline: "nearest" });
        const box = document.getElementById("graph").getBoundingClientRect();
        const r = n.getBoundingClientRect();
        return r.top >= box.top && r.bottom <= box.bottom && r.left < box.right && r.right > box.left;
    }""")
    assert inside, "the last caller is not scrolled into the graph's box"
    assert page.locator("#nbgraph .node[data-index='7000']").is_visible()
    print(f"all 3,000 callers shown in {expand_s:.2f} s (click to drawn)")
    assert errors == []
    page.close()
