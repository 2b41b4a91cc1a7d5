"""The start on the heatmap (issue 30): the versions screen underneath makes its widgets when
first shown (not before the heatmap's first paint), and a compact footer's keys are made
compact (Textual's key styled itself a second time when mounted). What is shown is the same."""

from __future__ import annotations

import pytest
from textual.widgets._footer import FooterKey

from kbtool.tui.screens.heatmap import HeatmapScreen
from kbtool.tui.screens.versions import VersionsScreen
from kbtool.tui.widgets.diff_footer import DiffFooter
from tests.support.tui import make_app, screen_text, settle

SIZE = (100, 30)
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_versions_screen_is_made_when_first_shown(tui_kb):
    app = make_app(tui_kb)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, HeatmapScreen)
        versions = app.screen_stack[0]
        assert isinstance(versions, VersionsScreen)
        assert list(versions.children) == []  # nothing made under the heatmap
        await pilot.press("v")
        await settle(pilot)
        assert app.screen is versions
        assert versions.query("#versions-table") and versions.query(DiffFooter)
        text = screen_text(app)
        for needle in ("versions (2)", "app-1.0", "app-1.1", "clang 18.1.2", "69.6%", "66.4%"):
            assert needle in text, needle
        assert "open" in text.splitlines()[-1]  # its footer's keys
        assert app.focused is versions.query_one("#versions-table")
        await pilot.press("k", "enter")
        await settle(pilot)
        assert isinstance(app.screen, HeatmapScreen) and app.screen.version_id == 1
        await pilot.press("v")
        await settle(pilot)
        assert app.screen is versions and len(versions.query("#versions-table")) == 1


async def test_compact_footer_keys_are_styled_once(tui_kb):
    """Each key of the start's footer is styled when mounted, not a second time when its
    compact class arrives (one style pass of a key and its parts each, ~1 ms)."""
    app = make_app(tui_kb)
    restyled: list[object] = []
    update_styles = app.update_styles

    def counting(node=None, animate: bool = True) -> None:
        if isinstance(node, FooterKey):
            restyled.append(node)
        update_styles(node, animate=animate)

    app.update_styles = counting  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        footer = app.screen.query_one(DiffFooter)
        keys = list(footer.query(FooterKey))
        assert keys and all(k.has_class("-compact") for k in keys)
        assert "history" in screen_text(app).splitlines()[-1]
        assert restyled == []
