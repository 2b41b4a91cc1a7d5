"""While a screen that closes is open, the collector's first threshold is ten times Python's,
so its full collections (which walk the diff report, the changelog and the screen's widgets
while their freeze waits) are that many times rarer; with only the resident screens open,
Python's again (issue 30). Without the long-lived policy (``heap.enable``) it is untouched."""

from __future__ import annotations

import gc
import weakref

import pytest

from kbtool.services import heap
from kbtool.tui.app import YOUNG_FACTOR
from kbtool.tui.screens.diff import DiffScreen
from tests.support.tui import make_app, settle, until

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def thresholds():
    before = gc.get_threshold()
    yield before
    gc.set_threshold(*before)


async def test_raised_while_a_diff_screen_is_open_restored_on_close(demo_kb, thresholds):
    base = thresholds[0]
    heap.disable()
    heap.enable()  # what `kbtool tui` does (KbApp.run); Pilot skips run()
    try:
        app = make_app(demo_kb)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            assert gc.get_threshold() == thresholds  # only the resident screens
            screen = DiffScreen(1, 2)
            await app.push_screen(screen)
            await settle(pilot)
            assert gc.get_threshold() == (base * YOUNG_FACTOR, *thresholds[1:])
            # a version's preparation restores the thresholds it found (code_prepared):
            # the next idle check raises it again
            gc.set_threshold(*thresholds)
            app.collect_when_idle()
            assert gc.get_threshold()[0] == base * YOUNG_FACTOR
            await pilot.press("c")  # the changelog: its rows are freed with the screen
            await settle(pilot)
            ref = weakref.ref(screen)
            del screen
            app.pop_screen()
            await settle(pilot)
            assert gc.get_threshold() == thresholds
            await app.workers.wait_for_complete()

            def freed() -> bool:
                gc.collect()
                return ref() is None

            if not freed():  # not frozen: an ordinary collection frees it
                await until(pilot, freed, 0.05)
            assert ref() is None
            app.collect_when_idle()
            assert gc.get_threshold() == thresholds
        assert gc.get_threshold() == thresholds  # the app gone: Python's
    finally:
        heap.disable()


async def test_untouched_without_the_long_lived_policy(demo_kb, thresholds):
    heap.disable()
    app = make_app(demo_kb)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await app.push_screen(DiffScreen(1, 2))
        await settle(pilot)
        assert gc.get_threshold() == thresholds
        app.collect_when_idle()
        assert gc.get_threshold() == thresholds
