"""The detail screen's string xrefs come from a worker: an answer arriving while the screen
closes (its widgets removed before it is detached) is dropped, never a crash."""

from __future__ import annotations

import pytest

from kbtool.tui.screens.detail import DetailScreen
from tests.support.tui import make_app, settle


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_string_xrefs_arriving_while_the_detail_closes_are_dropped(tui_kb) -> None:
    app = make_app(tui_kb)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        app.open_detail(1, 4 + 35)  # fn35 references strings
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, DetailScreen)
        await screen.query_one("#xrefs").remove()  # as closing does: the widgets first
        assert screen.is_attached
        screen._show_xrefs(screen._xref_gen, [("a string", [], False)])  # no exception
        await settle(pilot)
        assert app.screen is screen
