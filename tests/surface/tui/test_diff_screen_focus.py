"""The diff screen gives its table the focus from its compose (issue 30): Textual focused the
first focusable widget (the "from" picker) when the screen was composed, the table took it a
call later, and that move restyled the picker and the table's scrollbars after the first frame:
a second full layout with every visible cell drawn again. The first frame now shows the table
focused and the picker never is."""

from __future__ import annotations

import pytest
from textual.screen import Screen
from textual.widgets import Select

from kbtool.tui.screens.diff import DiffScreen
from kbtool.tui.widgets.lists import KbTable
from tests.support.tui import make_app, settle

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_table_has_the_focus_in_the_first_frame_and_the_picker_never(tui_kb, monkeypatch):
    focused: list[object] = []  # what the diff screen focused, in order
    set_focus = Screen.set_focus

    def spy(self, widget, *args, **kwargs):
        if isinstance(self, DiffScreen) and widget is not None:
            focused.append(widget)
        return set_focus(self, widget, *args, **kwargs)

    monkeypatch.setattr(Screen, "set_focus", spy)
    app = make_app(tui_kb)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        first_frame: list[object] = []
        display = app._display

        def frame(screen, renderable):
            if renderable is not None and isinstance(screen, DiffScreen) and not first_frame:
                first_frame.append(screen.focused)
            return display(screen, renderable)

        app._display = frame
        await pilot.press("d")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, DiffScreen)
        table = screen.query_one("#diff-table", KbTable)
        assert first_frame == [table]
        assert screen.focused is table
        assert focused and all(w is table for w in focused)
        assert not any(isinstance(w, Select) for w in focused)
