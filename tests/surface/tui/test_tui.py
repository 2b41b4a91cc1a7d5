"""Pilot tests of ``kbtool tui``: drive every screen with keys (and the mouse) and assert what is shown."""

from __future__ import annotations

import sqlite3

import pytest
from textual.widgets import Input

from kbtool.cli import main
from kbtool.kb import queries, schema, store
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.gate import upsert_symbol
from kbtool.tui.screens.detail import DetailScreen
from kbtool.tui.screens.heatmap import HeatmapScreen
from kbtool.tui.screens.history import HistoryScreen
from kbtool.tui.screens.search import SearchScreen
from kbtool.tui.screens.versions import VersionsScreen
from kbtool.tui.widgets.heatmap import BUCKETS, HeatmapGrid, cell_code
from tests.support.tui import make_app, screen_text, settle
from tests.support.tui_kb import ESC_RAW, MARKUP_NAME, build_empty_kb, frozen_time, sid

SIZE = (80, 24)
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def kb(tui_kb):
    """A private copy of the seeded TUI KB (``tui_kb`` of tests/conftest.py)."""
    return tui_kb


# ---------------------------------------------------------------- heatmap


async def test_starts_on_heatmap_of_latest_version(kb):
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, HeatmapScreen)
        assert app.screen.version_id == 2
        text = screen_text(app)
        assert "app-1.1" in text and "heatmap" in text and "250 functions" in text
        assert "human" in text and "unnamed" in text and "conf 0" in text  # legend
        assert "#4  (1/250)" in text  # the side panel
        for key in ("move", "open", "history", "rename", "search", "diff", "versions", "quit"):
            assert key in text.splitlines()[-1], key  # footer keys


async def test_heatmap_cursor_moves_cell_by_cell_and_pages(kb):
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        grid = app.screen.query_one(HeatmapGrid)
        cols = grid.columns
        assert cols >= 40  # 80 columns minus the side panel
        await pilot.press("l", "l", "right")
        assert grid.cursor == 3
        await pilot.press("h")
        assert grid.cursor == 2
        await pilot.press("j")
        assert grid.cursor == 2 + cols
        await pilot.press("down", "k", "up")
        assert grid.cursor == 2
        await pilot.press("G")
        assert grid.cursor == grid.count - 1 == 249
        await pilot.press("home")
        assert grid.cursor == 0
        await pilot.press("pagedown")
        assert grid.cursor > cols
        await pilot.pause()
        row = app.screen._rows[grid.cursor]
        assert f"#{row[0]}  ({grid.cursor + 1}/250)" in screen_text(app)


async def test_heatmap_cells_are_tinted_by_provenance_and_confidence(kb):
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        grid = screen.query_one(HeatmapGrid)
        for pos, row in enumerate(screen._rows):
            assert grid._codes[pos] == cell_code(row[3], row[4])
        pal = grid._get_palette()
        human = pal.color(cell_code("human", 1.0), True)
        assert human.hex.lower() == "#10b981"  # full confidence: the contract's tint
        faint = pal.color(cell_code("agent", 0.1), True)
        strong = pal.color(cell_code("agent", 0.9), True)
        bg = pal.background
        assert _dist(faint, bg) < _dist(strong, bg)  # intensity rises with confidence
        assert cell_code(None, None) // BUCKETS == 5  # unnamed slot (zinc)


def _dist(a, b) -> int:
    return abs(a.r - b.r) + abs(a.g - b.g) + abs(a.b - b.b)


async def test_heatmap_renders_only_visible_lines(kb):
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        grid = app.screen.query_one(HeatmapGrid)
        calls = []
        orig = grid.render_line

        def spy(y):
            calls.append(y)
            return orig(y)

        grid.render_line = spy
        grid.refresh()
        await pilot.pause()
        assert calls and max(calls) < grid.size.height


async def test_heatmap_enter_opens_detail_and_escape_returns(kb):
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("l", "l", "enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        assert app.screen.index == 6  # imports 0-3, cells start at 4
        assert "write_alloc_2" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, HeatmapScreen)
        assert app.screen.query_one(HeatmapGrid).cursor == 2


async def test_heatmap_mouse_click_moves_cursor(kb):
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        grid = app.screen.query_one(HeatmapGrid)
        await pilot.click(HeatmapGrid, offset=(5, 1))
        assert grid.cursor == 2 * grid.columns + 5
        await pilot.click(HeatmapGrid, offset=(5, 1))  # same character again: the lower cell
        assert grid.cursor == 3 * grid.columns + 5


async def test_heatmap_next_unnamed_and_other_version(kb):
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        grid = screen.query_one(HeatmapGrid)
        await pilot.press("u")
        assert screen._rows[grid.cursor][2] is None
        await pilot.press("home", "l", "l")
        before = screen._rows[grid.cursor][1]
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert screen.version_id == 1
        assert screen._rows[grid.cursor][1] == before  # same logical function, other version


# ---------------------------------------------------------------- versions


async def test_versions_screen_lists_versions_and_opens_heatmap(kb):
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        assert isinstance(app.screen, VersionsScreen)
        text = screen_text(app)
        for needle in ("app-1.0", "app-1.1", "clang 18.1.2", "69.6%", "66.4%", "yes", "240", "250"):
            assert needle in text, needle
        assert (
            "oracle 55" in text and "agent 39" in text
        )  # split by provenance of the highlighted one
        await pilot.press("k", "enter")
        await settle(pilot)
        assert isinstance(app.screen, HeatmapScreen) and app.screen.version_id == 1


async def test_empty_kb_shows_the_ingest_command(tmp_path):
    db = build_empty_kb(tmp_path / "empty.db")
    app = make_app(db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, VersionsScreen)
        text = screen_text(app)
        assert "no versions yet" in text
        assert "kbtool ingest app-1.0.wasm --label 1.0 --db" in text
        assert "kbtool demo" in text


async def test_new_version_appears_live_on_the_versions_screen(tmp_path):
    db = build_empty_kb(tmp_path / "live.db")
    app = make_app(db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "no versions yet" in screen_text(app)
        with frozen_time():
            conn = open_rw(db)
            store.insert_version(
                conn,
                {
                    "label": "late-1.0",
                    "sha256": "x",
                    "size": 0,
                    "imported_functions": 0,
                    "defined_functions": 0,
                    "exported_functions": 0,
                    "ingested_at": "now",
                },
            )
            conn.close()
        assert app.poll_changes() is True
        await settle(pilot)
        assert "late-1.0" in screen_text(app)
        assert app.poll_changes() is False  # cheap no-op when nothing changed


# ---------------------------------------------------------------- live refresh


async def test_live_refresh_keeps_the_heatmap_cursor(kb):
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        grid = screen.query_one(HeatmapGrid)
        await pilot.press(*"lllllllll")
        pos = grid.cursor
        target = screen._rows[pos]
        with frozen_time():
            conn = open_rw(kb)  # "another process" names the function under the cursor
            upsert_symbol(
                conn,
                target[1],
                "renamed_elsewhere",
                provenance="human",
                confidence=1.0,
                actor="human:cli",
            )
            conn.close()
        assert app.poll_changes()
        await settle(pilot)
        assert grid.cursor == pos
        assert grid._codes[pos] == cell_code("human", 1.0)
        assert "renamed_elsewhere" in screen_text(app)


# ---------------------------------------------------------------- search


async def test_search_shows_results_as_you_type_and_enter_opens_detail(kb):
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash")
        await settle(pilot)
        assert isinstance(app.screen, SearchScreen)
        await pilot.press(*"decode_fr")
        await settle(pilot)  # the debounce worker, awaited (no sleeping)
        text = screen_text(app)
        assert "decode_frame_header" in text and "1 result(s)" in text
        assert "v1-2" in text  # across all versions
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        assert app.screen.version_id == 2 and app.screen.index == 10


async def test_search_by_stable_id_prefix_finds_unnamed_functions(kb):
    conn = open_ro(kb)
    unnamed = next(r for r in queries.heatmap_rows(conn, 2) if r[2] is None)
    conn.close()
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *unnamed[1][:8])
        await settle(pilot)
        assert unnamed[1] in screen_text(app)
        await pilot.press("down", "enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen) and app.screen.index == unnamed[0]


async def test_search_with_no_match_says_so(kb):
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"zzzz")
        await settle(pilot)
        assert "no named function matches zzzz" in screen_text(app)


# ---------------------------------------------------------------- detail + history


async def test_detail_shows_record_facts_and_navigable_callees(kb):
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_detail(2, 10)  # fn6: human name, summary, evidence, calls f3 f4 f5
        await settle(pilot)
        text = screen_text(app)
        for needle in (
            "decode_frame_header",
            "human",
            "locked",
            "Parses the frame header",
            sid("fn6"),
            "app-1.1",
            "callers (",
            "callees (3)",
            "evidence",
            "human:cli",
        ):
            assert needle in text, needle
        await pilot.press("tab", "tab")  # main -> callers -> callees
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen) and app.screen.index == 7
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen.index == 10


async def test_detail_shows_facts_strings_and_imports(kb):
    app = make_app(kb)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        app.open_detail(1, 4 + 35)  # fn35: n % 7 == 0 (strings), n % 5 == 0 (an import call)
        await settle(pilot)
        text = screen_text(app)
        assert "corrupted block" in text
        assert "env." in text or "wasi_snapshot_preview1." in text


async def test_history_timeline_with_events_and_body_changes(kb):
    app = make_app(kb)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        app.open_detail(2, 10)
        await settle(pilot)
        await pilot.press("h")
        await settle(pilot)
        assert isinstance(app.screen, HistoryScreen)
        text = screen_text(app)
        for needle in (
            "first seen",
            "app-1.0",
            "app-1.1",
            "agent-guess",
            "oracle-match",
            "rejection",
            "human-edit",
            "maybe_frame",
            "ZSTD_getFrameHeader",
            "decode_frame_header",
            "2026-01-15 12:00",
        ):
            assert needle in text, needle
        await pilot.press("escape", "escape")
        app.open_history(sid("fn13"))  # n % 13 == 0: body changed in 1.1
        await settle(pilot)
        assert "changed" in screen_text(app)


# ---------------------------------------------------------------- rename through the gate


async def test_rename_writes_a_locked_human_name_with_a_toast(kb):
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("l", "n")
        await settle(pilot)
        box = app.screen.query_one(Input)
        box.value = ""
        await pilot.press(*"my_new_name", "enter")
        await settle(pilot)
        conn = open_ro(kb)
        stable_id = app.screen._rows[1][1]
        rec = queries.get_symbol(conn, stable_id)
        ev = queries.annotation_events(conn, stable_id)[-1]
        conn.close()
        assert rec["name"] == "my_new_name" and rec["provenance"] == "human" and rec["locked"]
        assert ev["actor"] == "human:tui" and ev["written"]
        assert any("renamed" in (n.title or "") for n in app._notifications)
        assert "my_new_name" in screen_text(app)  # side panel updated in place


async def test_rename_refused_by_the_gate_is_a_error_toast(kb):
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        app.screen.query_one(Input).value = "not a name!"
        await pilot.press("enter")
        await settle(pilot)
        msgs = [n.message for n in app._notifications]
        assert any("not renamed: invalid name" in m for m in msgs), msgs


async def test_rename_escape_cancels(kb):
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        before = queries.change_token(app.conn)
        await pilot.press("n", "x", "escape")
        await settle(pilot)
        assert isinstance(app.screen, HeatmapScreen)
        assert queries.change_token(app.conn) == before


async def test_read_only_hides_rename_and_never_writes(kb):
    app = make_app(kb, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        footer = screen_text(app).splitlines()[-1]
        assert "rename" not in footer and "history" in footer
        before = queries.change_token(app.conn)
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, HeatmapScreen)  # no dialog
        assert queries.change_token(app.conn) == before
        with pytest.raises(sqlite3.OperationalError):
            app.conn.execute("CREATE TABLE t (x)")  # the app's connection cannot write


# ---------------------------------------------------------------- palette, theme, keys


async def test_command_palette_jumps_to_a_function_by_name_and_stable_id(kb):
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await pilot.press(*"decode_frame_hea")
        await settle(pilot)  # the palette searches in a worker: awaited
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen) and app.screen.index == 10
        await pilot.press("ctrl+p", *sid("fn7")[:10])
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen) and app.screen.index == 11


async def test_theme_toggle_and_light_theme_tints(kb):
    app = make_app(kb, theme="light")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.theme == "textual-light"
        grid = app.screen.query_one(HeatmapGrid)
        assert grid._get_palette().color(cell_code("human", 1.0), True).hex.lower() == "#10b981"
        await pilot.press("t")
        await settle(pilot)
        assert app.theme == "textual-dark"


# ---------------------------------------------------------------- bad input


async def test_small_terminal_degrades_without_crashing(kb):
    app = make_app(kb)
    async with app.run_test(size=(50, 14)) as pilot:
        await settle(pilot)
        assert app.has_class("-small")
        assert "50x14 < 80x24" in screen_text(app)
        await pilot.press("l")
        await settle(pilot)
        assert not app.screen.query_one("#side").display
        assert "#5 unnamed" in screen_text(app)  # the one-line cell info instead
        await pilot.press("j", "l", "enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        for key in ("h", "escape", "escape", "v", "d", "escape", "slash", "a", "escape"):
            await pilot.press(key)
            await settle(pilot)
        await pilot.resize_terminal(20, 6)
        await settle(pilot)
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        assert not app.has_class("-small")


async def test_hostile_names_are_shown_literally(kb):
    app = make_app(kb)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        app.open_detail(1, 8)  # export name with Rich markup
        await settle(pilot)
        assert MARKUP_NAME in screen_text(app)
        app.open_detail(1, 9)  # raw name and a string with terminal escapes
        await settle(pilot)
        text = screen_text(app)
        assert "\x1b" not in text and "\x07" not in text
        assert ESC_RAW.replace("\x1b", "\\x1b").replace("\x07", "\\x07") in text
        assert "\\x1b]0;owned\\x07 [link=http://x]click[/link]" in text
        await pilot.press("escape", "escape", "slash", *"pwned")
        await settle(pilot)
        assert MARKUP_NAME in screen_text(app)


def test_cli_missing_kb_fails_before_the_app_starts(tmp_path, capsys):
    rc = main(["tui", "--db", str(tmp_path / "nope.db")])
    assert rc == 1
    err = capsys.readouterr().err
    assert "no KB at" in err and "kbtool demo" in err


def test_cli_older_and_newer_schema_are_clear_errors(kb, monkeypatch, capsys):
    monkeypatch.setattr(schema, "SCHEMA_VERSION", schema.SCHEMA_VERSION + 1)
    assert main(["tui", "--db", str(kb)]) == 1
    assert "run `kbtool migrate --db" in capsys.readouterr().err
    monkeypatch.undo()
    conn = open_rw(kb)
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.close()
    assert main(["tui", "--db", str(kb)]) == 1
    assert "newer than this kbtool" in capsys.readouterr().err


def test_cli_unknown_version_or_theme_is_a_clear_error(kb, capsys):
    assert main(["tui", "--db", str(kb), "--version", "42"]) == 1
    assert "unknown version id 42" in capsys.readouterr().err
    assert main(["tui", "--db", str(kb), "--theme", "nope"]) == 1
    assert "unknown theme 'nope'" in capsys.readouterr().err


# ---------------------------------------------------------------- mouse


async def test_mouse_clicks_rows_links_and_footer_keys(kb):
    app = make_app(kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        await pilot.click("#versions-table", offset=(5, 1))  # row 1 (under the header): app-1.0
        await settle(pilot)
        assert app.screen.query_one("#versions-table").cursor_row == 0
        await pilot.click("#versions-table", offset=(5, 1))  # a click on the cursor row opens it
        await settle(pilot)
        assert isinstance(app.screen, HeatmapScreen) and app.screen.version_id == 1
        await pilot.click(HeatmapGrid, offset=(2, 0))
        await pilot.click(HeatmapGrid, offset=(2, 0), times=2)  # double click opens
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        await pilot.click("#callees", offset=(3, 0))  # follow the first callee link
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen) and len(app.screen_stack) >= 4
