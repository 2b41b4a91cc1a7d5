"""The web diff table follows the triage order (issue 29.3): ``/api/diff?order=triage`` (what
the dashboard asks for by default) lists modified functions patch-like first, as ``ui diff``,
the TUI and MCP ``get_diff``; ``order=index`` keeps the report's order; in a real Chromium the
table's first row is the fix and the order picker switches to index order."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from kbtool.web.router import route
from tests.support.triage_pair import V1, V2
from tests.support.web import CHROMIUM, ServerProcess, launch_chromium

pytestmark = pytest.mark.skipif(shutil.which("wat2wasm") is None, reason="wat2wasm missing")


@pytest.fixture(scope="module")
def kb(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("weborder")
    db = tmp / "kb.db"
    for name, text in (("v1", V1), ("v2", V2)):
        (tmp / f"{name}.wat").write_text(text)
        subprocess.run(
            ["wat2wasm", str(tmp / f"{name}.wat"), "-o", str(tmp / f"{name}.wasm")], check=True
        )
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "kbtool.cli",
                "--db",
                str(db),
                "ingest",
                str(tmp / f"{name}.wasm"),
                "-l",
                name,
            ],
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr
    return db


def _mods(body: dict) -> list[int]:
    return [c["to_index"] for c in body["changes"] if c["classification"] == "modified"]


def test_api_diff_order(kb):
    status, _, raw = route(str(kb), "/api/diff", {"from": ["1"], "to": ["2"], "order": ["triage"]})
    assert status == 200
    tri = orjson.loads(raw)
    assert tri["order"] == "triage" and _mods(tri) == [1, 0]  # the fix first
    assert tri["changes"][0]["reasons"][0].startswith("+ bounds check")
    status, _, raw = route(str(kb), "/api/diff", {"from": ["1"], "to": ["2"], "order": ["index"]})
    assert status == 200 and _mods(orjson.loads(raw)) == [0, 1]
    status, _, raw = route(str(kb), "/api/diff", {"from": ["1"], "to": ["2"]})
    assert status == 200 and "order" not in orjson.loads(raw)  # the contract's report as is
    status, _, raw = route(str(kb), "/api/diff", {"from": ["1"], "to": ["2"], "order": ["size"]})
    assert status == 400 and b"unknown order" in raw


@pytest.mark.browser
@pytest.mark.skipif(
    not os.path.exists(CHROMIUM) or importlib.util.find_spec("playwright") is None,
    reason=f"needs Chromium at {CHROMIUM} and playwright",
)
def test_dashboard_table_in_triage_order(kb):
    from playwright.sync_api import sync_playwright

    with ServerProcess(kb) as srv, sync_playwright() as pw:
        b = launch_chromium(pw)
        try:
            pg = b.new_context(viewport={"width": 1280, "height": 800}).new_page()
            pg.set_default_timeout(30_000)
            errors: list[str] = []
            pg.on("pageerror", lambda e: errors.append(str(e)))
            pg.goto(srv.url)
            pg.wait_for_selector("body[data-ready='1']")
            pg.click("#tab-diff")
            pg.select_option("#diff-from", "1")
            pg.select_option("#diff-to", "2")
            pg.click("#diff-run")
            pg.wait_for_selector("#diff-table tbody tr")

            def to_column() -> list[str]:
                return pg.eval_on_selector_all(
                    "#diff-table tbody tr", "rs => rs.map(r => r.cells[2].textContent)"
                )

            assert pg.input_value("#diff-order") == "triage"
            assert to_column() == ["1", "0"]
            assert "bounds check" in pg.get_attribute(
                "#diff-table tbody tr td:nth-child(8)", "title"
            )
            pg.select_option("#diff-order", "index")
            pg.wait_for_function(
                "() => document.querySelector('#diff-table tbody tr td:nth-child(3)')"
                ".textContent === '0'"
            )
            assert to_column() == ["0", "1"]
            assert errors == []
        finally:
            b.close()
