"""The TUI's start loads only what its first screen shows (issue 30): the diff, detail,
history, search, feed and rename screens, the diff services, the static analysis, the gate
the table widget (Textual's DataTable: the versions screen under the heatmap composes
when first shown), the link lists (the detail and code screens') and the queries' record shapes (the change token's module reads them only
as hints) are imported when first opened, and still open from their keys."""

from __future__ import annotations

from tests.support.tui import run_child

# a fresh process: the app started by Pilot on the heatmap, what is loaded once it is
# painted, then `d` (the diff screen, imported then) and its footer rule
CHILD = r"""
import asyncio, json, sys
from kbtool.tui.app import KbApp

LATER = ("kbtool.tui.screens.diff", "kbtool.tui.screens.detail", "kbtool.tui.screens.history",
         "kbtool.tui.screens.search", "kbtool.tui.screens.feed", "kbtool.tui.screens.rename",
         "kbtool.services.diff.report", "kbtool.analysis", "kbtool.kb.gate",
         "kbtool.tui.widgets.table", "textual.widgets._data_table",
         "kbtool.tui.screens.goto", "kbtool.kb.queries.shapes", "kbtool.tui.widgets.link_list")

async def main():
    app = KbApp(sys.argv[1], poll_seconds=None, blink=False)
    out = {}
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        out["screen"] = type(app.screen).__name__
        out["loaded"] = [m for m in LATER if m in sys.modules]
        out["diff_key_before"] = bool(app.check_action("diff", ()))
        await pilot.press("d")
        await app.workers.wait_for_complete()
        await pilot.pause()
        out["after_d"] = type(app.screen).__name__
        out["diff_key_on_diff"] = bool(app.check_action("diff", ()))
        await pilot.press("slash")
        await pilot.pause()
        out["after_slash"] = type(app.screen).__name__
    print(json.dumps(out))

asyncio.run(main())
"""


def test_start_loads_only_the_first_screen_and_the_rest_opens_from_its_key(tui_kb):
    out = run_child(CHILD, tui_kb)
    assert out["screen"] == "HeatmapScreen"
    assert out["loaded"] == []
    assert out["diff_key_before"] is True
    assert out["after_d"] == "DiffScreen"
    assert out["diff_key_on_diff"] is False  # the key to the screen shown is hidden
    assert out["after_slash"] == "SearchScreen"
