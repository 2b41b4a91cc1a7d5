"""The TUI's start reads no module, so it does not import the wasm package (issue 30: ~30 ms
CPU of the start at load 1, more on a busy machine): the collector policy
(:mod:`kbtool.services.heap`) imports its ``gc_paused`` when first used, and pausing the
collector still works then."""

from __future__ import annotations

from tests.support.tui import run_child

CHILD = r"""
import asyncio, gc, json, sys
from kbtool.services import heap
from kbtool.tui.app import KbApp
from kbtool.tui.screens.heatmap import HeatmapScreen

async def main():
    app = KbApp(sys.argv[1], poll_seconds=None, blink=False)
    out = {}
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        out["screen"] = type(app.screen).__name__
        out["wasm_loaded"] = sorted(m for m in sys.modules if m.startswith("kbtool.wasm"))
    with heap.collector_paused():
        out["paused"] = not gc.isenabled()
    out["after"] = gc.isenabled()
    out["wasm_after"] = "kbtool.wasm.facts" in sys.modules
    print(json.dumps(out))

asyncio.run(main())
"""


def test_the_start_imports_no_wasm_and_the_collector_pause_still_works(tui_kb):
    out = run_child(CHILD, tui_kb)
    assert out["screen"] == "HeatmapScreen"
    assert out["wasm_loaded"] == []
    assert out["paused"] is True and out["after"] is True
    assert out["wasm_after"] is True
