"""The versions screen's rules are in ``versions.tcss`` (issue 30): a start on the heatmap
does not parse them; they are added when the screen's widgets are first made (shown by ``v``,
or at a start on the versions screen), once, and select only that screen's nodes."""

from __future__ import annotations

import re

import pytest

from kbtool.tui.screens.versions import VersionsScreen
from tests.support.paths import PACKAGE
from tests.support.tui import make_app, settle

pytestmark = pytest.mark.anyio
FILE = str(PACKAGE / "tui" / "versions.tcss")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _sources(app) -> list[str]:
    return [path for path, _ in app.stylesheet.source]


def test_the_file_selects_only_the_versions_screen():
    text = re.sub(r"/\*.*?\*/", "", (PACKAGE / "tui" / FILE).read_text(), flags=re.S)
    selectors = [s.strip() for b in re.findall(r"([^{}]+)\{", text) for s in b.split(",")]
    assert selectors
    for sel in selectors:
        assert re.fullmatch(
            r"VersionsScreen(\.[\w-]+)*", sel.removeprefix("App.-small ").split()[0]
        )
    main = (PACKAGE / "tui" / "kbtool.tcss").read_text()
    assert "VersionsScreen" not in re.sub(r"/\*.*?\*/", "", main, flags=re.S)


async def test_added_when_the_screen_is_first_made(tui_kb):
    app = make_app(tui_kb)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert FILE not in _sources(app)  # the heatmap's start
        await pilot.press("v")
        await settle(pilot)
        assert isinstance(app.screen, VersionsScreen) and app.screen.query("#versions-table")
        assert _sources(app).count(FILE) == 1
        table = app.screen.query_one("#versions-table")
        assert str(table.styles.max_height) == "60h"  # VersionsScreen #versions-table: 60%
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        assert _sources(app).count(FILE) == 1


async def test_a_start_on_the_versions_screen_has_them(tui_kb):
    app = make_app(tui_kb, start="versions")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, VersionsScreen)
        assert FILE in _sources(app)
        assert str(app.screen.query_one("#versions-table").styles.max_height) == "60h"
