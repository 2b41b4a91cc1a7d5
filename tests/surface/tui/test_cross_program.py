"""Comparing two programs is never silent (issue #23, point 2), and the TUI diff at 80x24.

One KB through the real ingest: version 1 is zstd 1.5.5 (program ``zstd``), version 2 a
module of another program (``other``), version 3 zstd 1.5.6 (program ``zstd``, parent 1).
The last two ids (2, 3) are a pair of two programs: every surface must default to (1, 3)
and say so when a cross-program pair is asked for: the report and changelog fields, the
CLI's refusal, ``/api/diff`` and ``/api/changelog`` on a real server, MCP ``get_diff``
through the SDK's stdio client, the TUI (Pilot) and the dashboard (Chromium).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.gate import upsert_symbol
from kbtool.services.diff.cache import DiffCache
from kbtool.services.diff.programs import default_pair
from kbtool.services.diff.report import compute_diff, get_diff, save_diff
from kbtool.services.diff.triage import order_changes
from kbtool.services.ingest import ingest_file
from kbtool.tui.screens.diff import DiffScreen
from kbtool.tui.widgets.lists import KbTable
from testkit.kb import frozen_time
from tests.support.mcp import call, mcp_session, run
from tests.support.paths import DEMO_DIR, ROOT
from tests.support.tui import make_app, screen_text, settle
from tests.support.web import CHROMIUM, ServerProcess, launch_chromium, request

WARNING_1_2 = (
    "versions 1 (zstd) and 2 (other) belong to different programs: names are not carried"
    " between programs; this diff compares unrelated code"
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


LONG_NAME = "decompress_block_with_a_name_far_longer_than_sixteen_characters_end"


def build_kb(path: Path) -> Path:
    """The three versions of the module docstring, plus one long human name in version 3."""
    with frozen_time():
        conn = open_rw(path)
        try:
            a = ingest_file(conn, DEMO_DIR / "zstd-1.5.5.wasm", label="1.5.5")
            b = ingest_file(conn, DEMO_DIR / "zstd-1.5.6.wasm", label="other-1", program="other")
            c = ingest_file(
                conn, DEMO_DIR / "zstd-1.5.6.wasm", label="1.5.6", force=True, base=a.version_id
            )
            assert (a.version_id, b.version_id, c.version_id) == (1, 2, 3)
            assert (a.program, b.program, c.program) == ("zstd", "other", "zstd")
            first = _first_changed(conn)
            d = upsert_symbol(
                conn,
                first["to_stable_id"],
                LONG_NAME,
                provenance="human",
                confidence=1.0,
                actor="human:test",
            )
            assert d["written"], d
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
    return path


def _first_changed(conn) -> dict:
    # the first row of the TUI's table (triage order: struct layout shifts rank last)
    return next(
        c
        for c in order_changes(get_diff(conn, 1, 3)["changes"])
        if c["classification"] in ("modified", "new") and c["to_stable_id"]
    )


@pytest.fixture(scope="module")
def xkb(tmp_path_factory) -> Path:
    return build_kb(tmp_path_factory.mktemp("xprog") / "kb.db")


@pytest.fixture()
def xkb_copy(xkb, tmp_path) -> Path:
    dest = tmp_path / "kb.db"
    shutil.copyfile(xkb, dest)
    return dest


def _cli(*args: str, db: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "kbtool.cli", *args, "--db", str(db)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


# ---------------------------------------------------------------- the report


def test_report_and_changelog_name_both_programs_and_warn_only_across(xkb_copy):
    conn = open_rw(xkb_copy)
    try:
        same = get_diff(conn, 1, 3)  # the stored (parent, new) report
        assert same["stored"] is True
        assert (same["from_program"], same["to_program"]) == ("zstd", "zstd")
        assert "warning" not in same
        cross = get_diff(conn, 1, 2)  # computed
        assert cross["stored"] is False
        assert (cross["from_program"], cross["to_program"]) == ("zstd", "other")
        assert cross["warning"] == WARNING_1_2
        # the contract's fields are all still there, with their meaning
        for key in (
            "from",
            "to",
            "from_version_id",
            "to_version_id",
            "stored",
            "summary",
            "changes",
        ):
            assert key in cross
        assert compute_diff(conn, 2, 3)["warning"].startswith("versions 2 (other) and 3 (zstd)")
        cache = DiffCache()
        assert cache.changelog(conn, 1, 2)["warning"] == WARNING_1_2
        assert "warning" not in cache.changelog(conn, 1, 3)
        # a saved cross-program report still warns when read back (and is not stale)
        save_diff(conn, cross)
        back = get_diff(conn, 1, 2)
        assert back["stored"] is True and back["warning"] == WARNING_1_2
    finally:
        conn.close()


def test_default_pair_is_the_version_and_its_parent_never_two_programs(xkb):
    conn = open_ro(xkb)
    vs = queries.list_versions(conn)
    conn.close()
    assert default_pair(vs, 3) == (1, 3)  # not the last two ids (2, 3)
    assert default_pair(vs, None) == (1, 3)  # the latest version
    assert default_pair(vs, 1) == (1, 3)  # first of its program: it and the next one
    assert default_pair(vs, 2) is None  # the only version of its program
    # no parent recorded: the previous version of the same program
    orphan = [dict(v, parent_version_id=None) for v in vs]
    assert default_pair(orphan, 3) == (1, 3)


# ---------------------------------------------------------------- CLI


@pytest.mark.parametrize("cmd", [("diff",), ("ui", "diff")])
def test_cli_refuses_a_cross_program_pair_unless_asked(xkb, cmd):
    res = _cli(*cmd, "1", "2", db=xkb)
    assert res.returncode == 2, res
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert WARNING_1_2 in err and "--cross-program" in err
    assert res.stdout == ""
    ok = _cli(*cmd, "1", "2", "--cross-program", db=xkb)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.splitlines()[0] == f"warning: {WARNING_1_2}"
    same = _cli(*cmd, "1", "3", db=xkb)
    assert same.returncode == 0 and "different programs" not in same.stdout + same.stderr


def test_cli_json_keeps_stdout_json_and_carry_never_crosses(xkb_copy):
    res = _cli("diff", "1", "2", "--cross-program", "--json", db=xkb_copy)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["warning"] == WARNING_1_2
    assert f"warning: {WARNING_1_2}" in res.stderr
    before = xkb_copy.read_bytes()
    carry = _cli("diff", "1", "2", "--carry", "--cross-program", db=xkb_copy)
    assert carry.returncode == 2 and "--carry never carries names between programs" in carry.stderr
    conn = open_ro(xkb_copy)
    try:
        assert not [f for f in queries.list_functions(conn, 2) if f["provenance"] == "diff-carry"]
    finally:
        conn.close()
    assert len(before) > 0


# ---------------------------------------------------------------- HTTP and MCP


def test_api_diff_and_changelog_carry_the_warning(xkb):
    with ServerProcess(xkb) as srv:
        for route in ("/api/diff", "/api/changelog"):
            status, _h, body = request(srv.port, f"{route}?from=1&to=2")
            assert status == 200, body
            data = json.loads(body)
            assert data["warning"] == WARNING_1_2, route
            assert (data["from_program"], data["to_program"]) == ("zstd", "other")
            status, _h, body = request(srv.port, f"{route}?from=1&to=3")
            data = json.loads(body)
            assert status == 200 and "warning" not in data
            assert data["from_program"] == data["to_program"] == "zstd"


def test_mcp_get_diff_carries_the_warning(xkb):
    async def go():
        async with mcp_session(xkb) as s:
            whole = await call(s, "get_diff", from_version_id=1, to_version_id=2)
            page = await call(
                s, "get_diff", from_version_id=1, to_version_id=2, only=["changed"], limit=5
            )
            same = await call(s, "get_diff", from_version_id=1, to_version_id=3)
            return whole, page, same

    whole, page, same = run(go())
    assert whole["warning"] == WARNING_1_2 and page["warning"] == WARNING_1_2
    assert len(page["changes"]) == 5
    assert "warning" not in same and same["to_program"] == "zstd"


# ---------------------------------------------------------------- TUI


@pytest.mark.anyio
async def test_tui_diff_defaults_to_the_selected_version_and_its_parent(xkb):
    app = make_app(xkb, version_id=3)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, DiffScreen)
        assert (screen._from, screen._to) == (1, 3)
        assert screen._report["from_version_id"] == 1
        assert "different programs" not in screen_text(app)


@pytest.mark.anyio
async def test_tui_single_version_program_opens_no_cross_pair(xkb):
    app = make_app(xkb, version_id=2)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, DiffScreen) and screen._report is None
        text = screen_text(app)
        assert "only version of program other" in " ".join(text.split())


@pytest.mark.anyio
async def test_tui_cross_program_pair_picked_by_hand_shows_the_warning(xkb):
    app = make_app(xkb, version_id=3)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.open_diff(1, 2)
        await settle(pilot)
        assert app.screen._report["warning"] == WARNING_1_2
        shown = " ".join(screen_text(app).split())
        assert "versions 1 (zstd) and 2 (other) belong to different programs" in shown
        assert app.screen.has_class("-cross")


@pytest.mark.anyio
async def test_tui_diff_at_80x24_shows_whole_names_and_scrolls_sideways(xkb):
    app = make_app(xkb, version_id=3)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        table = app.screen.query_one("#diff-table", KbTable)
        assert table.columns["name"].width >= len(LONG_NAME)
        assert table.virtual_size.width > table.size.width  # wider than the terminal
        assert LONG_NAME not in screen_text(app)  # its end is off-screen ...
        for _ in range(20):
            await pilot.press("right")  # ... until scrolled to
        await settle(pilot)
        assert table.scroll_x > 0
        assert LONG_NAME in screen_text(app)


def test_tui_diff_80x24_snapshot(snap_compare, xkb):
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        for _ in range(20):
            await pilot.press("right")
        await settle(pilot)

    assert snap_compare(make_app(xkb, version_id=3), terminal_size=(80, 24), run_before=run_before)


# ---------------------------------------------------------------- dashboard


browser = pytest.mark.skipif(
    not os.path.exists(CHROMIUM) or importlib.util.find_spec("playwright") is None,
    reason=f"needs Chromium at {CHROMIUM} and playwright",
)


@pytest.mark.browser
@browser
def test_dashboard_defaults_to_version_and_parent_and_warns_across(xkb):
    from playwright.sync_api import sync_playwright

    with ServerProcess(xkb) as srv, sync_playwright() as pw:
        b = launch_chromium(pw)
        try:
            pg = b.new_context(viewport={"width": 1280, "height": 800}).new_page()
            pg.set_default_timeout(30_000)
            errors: list[str] = []
            pg.on("pageerror", lambda e: errors.append(str(e)))
            pg.goto(srv.url)
            pg.wait_for_selector("body[data-ready='1']")
            pg.click("#tab-diff")
            # the latest version (3) and its parent (1), not the last two ids (2, 3)
            assert (pg.input_value("#diff-from"), pg.input_value("#diff-to")) == ("1", "3")
            pg.click("#diff-run")
            pg.wait_for_selector("#diff-head b")
            assert not pg.is_visible("#diff-warning")
            # a cross-program pair picked by hand: said before and after running it
            pg.select_option("#diff-from", "2")
            assert pg.is_visible("#diff-pick-warning")
            assert "belong to different programs" in pg.text_content("#diff-pick-warning")
            pg.click("#diff-run")
            pg.wait_for_selector("#diff-warning:not(.hidden)")
            assert pg.text_content("#diff-warning").startswith(
                "versions 2 (other) and 3 (zstd) belong to different programs"
            )
            # selecting version 1 puts its pair back (1 is the first of zstd: 1 -> 3)
            pg.click("#tab-heatmap")
            pg.click("#versions tr[data-vid='1']")
            pg.click("#tab-diff")
            assert (pg.input_value("#diff-from"), pg.input_value("#diff-to")) == ("1", "3")
            assert not pg.is_visible("#diff-pick-warning")
            assert errors == []
        finally:
            b.close()
