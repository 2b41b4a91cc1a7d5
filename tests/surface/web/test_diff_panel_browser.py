"""The dashboard's diff in a real headless Chromium: the changelog panel explains each change
(``offset 348 -> 356``), unnamed functions carry their ``refs`` line, the default filter is
"changed" (moved rows behind the filter control) and hostile names are shown literally."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_rw
from kbtool.kb.gate import upsert_symbol
from kbtool.services.ingest import ingest_bytes
from tests.support.paths import ROOT
from tests.support.web import BROWSER_MARKS, ServerProcess

pytestmark = BROWSER_MARKS

HOSTILE = '</script><img src=x onerror="window.__xss=7">'
ANSI = "\x1b[31mred_alert\x1b[0m"
ANSI_SHOWN = "⟨U+001B⟩[31mred_alert⟨U+001B⟩[0m"

# version 1.1 inserts $extra before the others: `other` keeps its code at another index (moved)
WAT = """
(module
  (import "env" "log" (func $log (param i32)))
  (import "env" "free" (func $free (param i32)))
  (memory 1)
  (data (i32.const 1024) "hello\\00")
  {extra}
  (func $get_field (export "get_field") (param i32) (result i32)
    local.get 0
    i32.load offset={off}
    i32.const {k}
    i32.add)
  (func $helper (param i32)
    local.get 0
    call ${callee})
  (func $other (export "other") (param i32) (result i32)
    i32.const 1024
    call $log
    local.get 0
    call $helper
    local.get 0
    i32.const 7
    i32.mul)
)
"""
EXTRA = """(func $extra (export "extra") (param i32) (result i32)
    local.get 0
    i32.const 99
    i32.mul)"""


def _build(tmp: Path) -> Path:
    if shutil.which("wat2wasm") is None:
        pytest.skip("wat2wasm not installed")
    db = tmp / "kb.db"
    conn = open_rw(db)
    for label, kw in (
        ("1.0", {"extra": "", "off": 348, "k": 16, "callee": "log"}),
        ("1.1", {"extra": EXTRA, "off": 356, "k": 24, "callee": "free"}),
    ):
        src = tmp / f"{label}.wat"
        src.write_text(WAT.format(**kw))
        subprocess.run(["wat2wasm", str(src), "-o", str(tmp / "m.wasm")], check=True)
        ingest_bytes(conn, (tmp / "m.wasm").read_bytes(), label=label)
    fns = {f["index"]: f for f in queries.list_functions(conn, 2)}
    # indices of 1.1: imports 0, 1; extra 2, get_field 3, helper 4, other 5
    for idx, name in ((3, HOSTILE), (2, ANSI)):
        sid = fns[idx]["stable_id"]
        d = upsert_symbol(
            conn,
            sid,
            f"placeholder_{idx}",
            provenance="oracle",
            confidence=0.9,
            actor="oracle:test",
        )
        assert d["written"], d
        # the gate refuses such names today; a KB from an older kbtool (or a binary's name
        # section) may still hold them, and the page must show them literally
        conn.execute("UPDATE symbols SET name = ? WHERE stable_id = ?", (name, sid))
    conn.commit()
    conn.close()
    return db


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with ServerProcess(_build(tmp_path_factory.mktemp("diffpanel"))) as srv:
        yield srv


def _api(server, path):
    with urllib.request.urlopen(server.url.rstrip("/") + path, timeout=20) as r:
        return json.loads(r.read())


def _until(page, expr: str, timeout: float = 30.0):
    """Poll ``page.evaluate(expr)`` until truthy (a string wait_for_function breaks the CSP)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = page.evaluate(expr)
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"never true: {expr}")


@pytest.fixture()
def page(browser, server):
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    pg = ctx.new_page()
    pg.set_default_timeout(30_000)
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(server.url)
    pg.wait_for_selector("body[data-ready='1']")
    pg.click("#tab-diff")
    pg.select_option("#diff-from", "1")
    pg.select_option("#diff-to", "2")
    pg.click("#diff-run")
    pg.wait_for_selector("#cl-box .cl-entry")
    yield pg
    assert pg.evaluate("window.__xss") is None, "a script from the KB ran"
    assert errors == []
    ctx.close()


def _rows(page) -> list[str]:
    return page.eval_on_selector_all(
        "#diff-table tbody tr td:first-child .chip", "els => els.map(e => e.textContent)"
    )


def test_changelog_panel_explains_each_change_most_changed_first(page, server):
    panel = page.text_content("#cl-box")
    assert "i32.load offset 348 -> 356" in panel
    assert "constants 0x10 -> 0x18" in panel
    assert "calls added: env.free" in panel and "calls removed: env.log" in panel
    # the unnamed helper is told apart by what it references
    helper = page.locator("#cl-box .cl-entry[data-k='modified'][data-index='4']")
    assert "func[4]" in helper.text_content() and "refs" in helper.text_content()
    assert "env.free" in helper.locator(".cl-refs").text_content()
    # the same lines, in the same order, as the API (and so the CLI and the TUI)
    cl = _api(server, "/api/changelog?from=1&to=2")
    order = page.eval_on_selector_all(
        "#cl-box .cl-entry[data-k='modified']", "els => els.map(e => Number(e.dataset.index))"
    )
    assert order == [m["to_index"] for m in cl["modified"]]
    weights = [m["weight"] for m in cl["modified"]]
    assert weights == sorted(weights, reverse=True)
    for m in cl["modified"]:
        for item in m["items"]:
            if not re.fullmatch(r"[+-][\d,]+ instructions", item):  # the head says those
                assert item in panel
    # the new function is listed with its size
    assert page.locator("#cl-box .cl-entry[data-k='new']").count() == 1


def test_default_filter_is_changed_and_moved_rows_sit_behind_it(page, server):
    report = _api(server, "/api/diff?from=1&to=2")
    moved = [c for c in report["changes"] if c["classification"] == "moved"]
    assert moved, report["summary"]
    assert page.input_value("#diff-class") == "changed"
    shown = _rows(page)
    assert shown and set(shown) <= {"modified", "new", "deleted"}
    changed = [
        c for c in report["changes"] if c["classification"] in ("modified", "new", "deleted")
    ]
    assert len(shown) == len(changed)
    page.select_option("#diff-class", "moved")
    assert set(_rows(page)) == {"moved"}
    assert "no code changes among the rows shown" in page.text_content("#cl-box")
    page.select_option("#diff-class", "all")
    assert len(_rows(page)) == len(report["changes"])
    # the option labels carry each word's count, as the TUI's tabs
    labels = page.eval_on_selector_all("#diff-class option", "os => os.map(o => o.textContent)")
    assert f"changed · {len(changed)}" in labels and f"moved · {len(moved)}" in labels
    # the words are exactly those of docs/diff.md ("`--only` takes `unchanged, moved, ...`")
    doc = (ROOT / "docs" / "diff.md").read_text()
    words = re.search(r"--only` takes `([a-z, ]+)`", doc).group(1).split(", ")
    values = page.eval_on_selector_all("#diff-class option", "os => os.map(o => o.value)")
    assert sorted(values) == sorted(words)
    assert values == [
        "changed",
        "modified",
        "new",
        "deleted",
        "runtime",
        "review",
        "all",
        "moved",
        "unchanged",
    ]


def test_hostile_names_are_shown_literally(page):
    panel = page.text_content("#cl-box")
    assert HOSTILE in panel
    assert ANSI_SHOWN in panel
    names = page.eval_on_selector_all(
        "#diff-table tbody td.nm", "els => els.map(e => e.textContent)"
    )
    assert HOSTILE in names and ANSI_SHOWN in names
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    # clicking the entry opens the function panel under the same literal name
    page.click("#cl-box .cl-entry[data-k='modified'][data-index='3'] .cl-head")
    _until(page, "document.getElementById('fn-name').textContent.includes('onerror')")
    assert HOSTILE in page.text_content("#fn-name")


def test_undetected_toolchain_reads_unknown_as_in_the_cli_and_tui(page, server):
    assert [v["toolchain_version"] for v in _api(server, "/api/versions")] == [None, None]
    assert "toolchain unknown" in page.text_content("#cov-meta")
    titles = page.eval_on_selector_all("#versions tbody tr", "rs => rs.map(r => r.title)")
    assert titles and all(t.endswith("toolchain unknown") for t in titles)
