"""Helpers to drive ``KbApp`` with Pilot in the TUI tests (the KB: ``tests.support.tui_kb``)."""

from __future__ import annotations

from pathlib import Path

from kbtool.tui.app import KbApp


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
