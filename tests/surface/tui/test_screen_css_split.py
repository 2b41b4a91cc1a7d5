"""kbtool's stylesheet in parts (issue 30): ``kbtool.tcss`` holds what the first screen needs;
the detail, history, search, diff and rename screens bring their own file when the first one of
them is registered, after it. The start parses none of them; each screen styled by them looks
as it did (the snapshots and screenshots say so); each file only selects its own screen's
nodes, so putting it after every rule of ``kbtool.tcss`` cannot change which rule wins."""

from __future__ import annotations

import re

import pytest

from kbtool.tui.screen_css import add_screen_css
from kbtool.tui.screens.detail import DetailScreen
from kbtool.tui.screens.diff import DiffScreen
from kbtool.tui.screens.history import HistoryScreen
from kbtool.tui.screens.rename import RenameScreen
from kbtool.tui.screens.search import SearchScreen
from tests.support.paths import PACKAGE
from tests.support.tui import make_app, settle

pytestmark = pytest.mark.anyio

SCREENS = {
    "detail": DetailScreen,
    "history": HistoryScreen,
    "search": SearchScreen,
    "diff": DiffScreen,
    "rename": RenameScreen,
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _selectors(css: str) -> list[str]:
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    return [s.strip() for block in re.findall(r"([^{}]+)\{", css) for s in block.split(",")]


def _sources(app) -> set[str]:
    return {path for path, _ in app.stylesheet.source}


def test_each_screen_file_selects_only_its_screen_and_the_start_file_none_of_them():
    main = _selectors((PACKAGE / "tui" / "kbtool.tcss").read_text(encoding="utf-8"))
    for name, cls in SCREENS.items():
        assert cls.TCSS == name
        text = (PACKAGE / "tui" / f"{name}.tcss").read_text(encoding="utf-8")
        selectors = _selectors(text)
        assert selectors, name
        for sel in selectors:  # "XScreen ..." or "App.-small XScreen ..."
            first = sel.removeprefix("App.-small ").split()[0]
            assert re.fullmatch(rf"{cls.__name__}(\.[\w-]+)*", first), sel
        assert not any(cls.__name__ in sel for sel in main), name


async def test_the_start_parses_no_screen_file_and_a_screen_brings_its_own_once(tui_kb):
    app = make_app(tui_kb)
    files = {name: str(PACKAGE / "tui" / f"{name}.tcss") for name in SCREENS}
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert not set(files.values()) & _sources(app)  # the heatmap's start
        rules = len(app.stylesheet.rules)
        await pilot.press("enter")  # the function's detail
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        assert files["detail"] in _sources(app)
        assert not {files[n] for n in ("history", "search", "diff", "rename")} & _sources(app)
        assert len(app.stylesheet.rules) > rules
        links = app.screen.query_one("#links")
        assert links.outer_size.width == 32  # DetailScreen #links { width: 32 }
        assert not add_screen_css(app, "detail")  # there already: not added twice
        await pilot.press("escape", "d")
        await settle(pilot)
        assert isinstance(app.screen, DiffScreen)
        assert files["diff"] in _sources(app)
        pick = app.screen.query_one("#diff-pick")
        assert pick.outer_size.height == 1  # DiffScreen #diff-pick { height: 1 }
