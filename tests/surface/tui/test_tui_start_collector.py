"""The TUI's start up to its first frame runs with the cyclic collector paused when the
long-lived policy is on (``kbtool tui``: :func:`kbtool.services.heap.enable`), and turns it
back on after that frame, whatever way the start ends (issue 30: ~5 % of the start's
instructions were young and full collections over objects that all live on)."""

from __future__ import annotations

import gc

import pytest

from kbtool.cli import main
from kbtool.kb.errors import UnknownVersionError
from kbtool.services import heap
from kbtool.tui.widgets.heatmap import HeatmapGrid
from tests.support.tui import make_app, until

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def policy():
    heap.disable()
    heap.enable()  # what `kbtool tui` does (KbApp.run); Pilot skips run()
    try:
        yield
    finally:
        heap.disable()
        gc.enable()


@pytest.fixture
def paint_states(monkeypatch) -> list[bool]:
    """Whether the collector ran when the heatmap's first line with cells was drawn."""
    states: list[bool] = []
    render_line = HeatmapGrid.render_line

    def spy(self, y: int):
        before = self.first_paint
        strip = render_line(self, y)
        if before is None and self.first_paint is not None:
            states.append(gc.isenabled())
        return strip

    monkeypatch.setattr(HeatmapGrid, "render_line", spy)
    return states


async def test_paused_from_construction_to_the_first_frame(demo_kb, policy, paint_states):
    assert gc.isenabled()
    app = make_app(demo_kb)
    assert not gc.isenabled()  # from the constructor on
    async with app.run_test(size=(100, 30)) as pilot:
        assert await until(pilot, gc.isenabled)  # on again once the first frame is drawn
        assert paint_states == [False]  # the first frame was drawn with it paused
        assert gc.isenabled()
    assert gc.isenabled()


async def test_not_paused_without_the_policy(demo_kb, paint_states):
    heap.disable()
    app = make_app(demo_kb)
    assert gc.isenabled()  # tests and one-shot uses keep Python's policy
    async with app.run_test(size=(100, 30)) as pilot:
        assert await until(pilot, lambda: paint_states)
        assert paint_states == [True]
    assert gc.isenabled()


def test_a_start_that_fails_turns_it_back_on(demo_kb, policy):
    with pytest.raises(UnknownVersionError):
        make_app(demo_kb, version_id=999)
    assert gc.isenabled()
    gc.disable()  # a caller that paused it for the imports (kbtool tui) leaves it to the app
    with pytest.raises(UnknownVersionError):
        make_app(demo_kb, version_id=999, collector_paused=True)
    assert gc.isenabled()


def test_kbtool_tui_on_a_missing_kb_leaves_it_on(tmp_path):
    assert main(["--db", str(tmp_path / "missing.db"), "tui"]) == 1
    assert gc.isenabled()


def test_run_resumes_it_after_the_first_frame(demo_kb, paint_states):
    """``kbtool tui``'s own path: the command pauses it for the imports, ``run`` enables the
    policy (its first freeze) and the first frame turns the collector back on."""
    heap.disable()
    gc.disable()
    seen: list[bool] = []

    async def person(pilot) -> None:
        assert await until(pilot, gc.isenabled)
        seen.append(gc.isenabled())
        pilot.app.exit()

    try:
        app = make_app(demo_kb, collector_paused=True)
        app.run(headless=True, size=(100, 30), auto_pilot=person)
        assert paint_states == [False] and seen == [True]
        assert heap.enabled() and gc.isenabled()
    finally:
        heap.disable()
        gc.enable()
