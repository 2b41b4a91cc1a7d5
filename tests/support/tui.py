"""Helpers to drive ``KbApp`` with Pilot in the TUI tests (the KB: ``tests.support.tui_kb``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from kbtool.tui.app import KbApp

#: how long ``until`` waits at most: what a slow machine (a CI VM at a third of this one's
#: speed, two test workers on it) may need for a huge function's lift, with room to spare
UNTIL_SECONDS = 60.0


def make_app(db: Path | str, **kw) -> KbApp:
    kw.setdefault("poll_seconds", None)  # tests call poll_changes() themselves: no timers racing
    kw.setdefault("blink", False)
    return KbApp(db, **kw)


def screen_text(app: KbApp) -> str:
    """Everything visible on the terminal, as plain text lines."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def settle(pilot) -> None:
    """Let workers (search debounce, diff, rename) finish and the screen repaint: no sleeping."""
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()  # the footer recomposes its keys one message later


def run_child(code: str, kb: Path | str) -> dict:
    """Run ``code`` in a fresh interpreter with the KB's path as its argument (nothing of
    this process's imports leaks into it); its last stdout line, parsed as JSON."""
    import json
    import subprocess
    import sys

    from tests.support.paths import ROOT

    done = subprocess.run(
        [sys.executable, "-c", code, str(kb)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


async def until(pilot, ready: Callable[[], object], step: float = 0.02) -> bool:
    """Pause ``step`` s at a time until ``ready()`` is true (checked after each pause); at
    most :data:`UNTIL_SECONDS` of wall clock, not a count of pauses (on a slow machine the
    pauses last no longer, the work they wait for does). Returns whether it became true:
    the caller asserts what it needs."""
    end = time.monotonic() + UNTIL_SECONDS
    while True:
        await pilot.pause(step)
        if ready():
            return True
        if time.monotonic() > end:
            return False
