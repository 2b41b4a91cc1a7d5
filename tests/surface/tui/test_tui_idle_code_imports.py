"""The start imports no code service (issue 30: it reads no module); the TUI imports it on
its prefetch thread at its first idle moment instead, so the first detail (whose code
preparation needs it) does not pay the import while it is drawn, and it is frozen with the
resident screens' objects. A detail and its code still open after that."""

from __future__ import annotations

from tests.support.tui import run_child

CHILD = r"""
import asyncio, json, sys, time, threading
from kbtool.services import heap
heap.enable()  # what `kbtool tui` turns on (Pilot's run_test does not call App.run)
heap.IDLE_SECONDS = 3.0  # a start slower than 1 s past its first frame (a busy machine)
# would already be idle when Pilot hands the app over
from kbtool.tui.app import KbApp

async def main():
    app = KbApp(sys.argv[1], poll_seconds=None, blink=False)
    out = {}
    async with app.run_test(size=(100, 30)) as pilot:
        out["at_start"] = "kbtool.services.code" in sys.modules or "kbtool.wasm" in sys.modules
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        out["screen"] = type(app.screen).__name__
        frozen = heap.stats()["frozen"]
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (
            "kbtool.wasm" in sys.modules and heap.stats()["frozen"] > frozen and not heap.pending()
        ):
            await asyncio.sleep(0.05)
        out["idle_imported"] = "kbtool.services.code" in sys.modules and "kbtool.wasm" in sys.modules
        out["frozen_more"] = heap.stats()["frozen"] > frozen
        out["pending"] = heap.pending()
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        out["after_enter"] = type(app.screen).__name__
        await pilot.press("c")
        await app.workers.wait_for_complete()
        await pilot.pause()
        out["after_c"] = type(app.screen).__name__
    print(json.dumps(out))

asyncio.run(main())
"""


def test_the_code_service_is_imported_when_idle_not_at_start(tui_kb):
    out = run_child(CHILD, tui_kb)
    assert out["screen"] == "HeatmapScreen"
    assert out["at_start"] is False
    assert out["idle_imported"] is True
    assert out["frozen_more"] is True and out["pending"] is False
    assert out["after_enter"] == "DetailScreen"
    assert out["after_c"] == "CodeScreen"
