"""The diff screen's footer is built once as the screen opens (Textual's footer rebuilt every
key at each bindings refresh: eight times before the first rows on ffmpeg), and a key that
becomes available or not is flipped in place, drawn as Textual's footer draws it."""

from __future__ import annotations

import pytest
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from kbtool.tui.screens.diff import DiffScreen
from tests.support.tui import make_app, settle

SIZE = (100, 30)
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _keys(screen) -> list[FooterKey]:
    return list(screen.query_one(Footer).query_children(FooterKey))


async def test_opening_the_diff_screen_builds_its_footer_keys_once(tui_kb, monkeypatch):
    built: list[object] = []  # the screen of each footer build that shows keys
    compose = Footer.compose

    def counting(self):
        keys = list(compose(self))
        if keys:
            built.append(self.screen)
        return iter(keys)

    monkeypatch.setattr(Footer, "compose", counting)
    app = make_app(tui_kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = DiffScreen(1, 2)
        app.push_screen(screen)
        await settle(pilot)
        await settle(pilot)
        assert screen.query_one("#diff-table").row_count > 0
        shown = _keys(screen)
        assert shown and [k.key for k in shown][:2] == ["enter", "escape"]
        # one build of the keys (Textual's footer: one per bindings refresh)
        assert sum(1 for s in built if s is screen) == 1


async def test_a_key_that_becomes_unavailable_is_dimmed_in_place(tui_kb):
    app = make_app(tui_kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = DiffScreen(1, 2)
        app.push_screen(screen)
        await settle(pilot)
        before = _keys(screen)
        history = next(k for k in before if k.action == "history")
        assert not history.has_class("-disabled")  # a row under the cursor
        screen._message("Pick two different versions.")  # the table emptied: no function
        screen.refresh_bindings()
        await settle(pilot)
        after = _keys(screen)
        assert after == before  # the same widgets, not rebuilt
        assert history.has_class("-disabled") and history._disabled
        # as Textual's footer would build it from the screen's bindings now
        states = {b.action: enabled for _, b, enabled, _ in screen.active_bindings.values()}
        assert all(k._disabled == (not states[k.action]) for k in after)
