"""A link list learns each option's height without making its visual when its text plainly
fits on one line: the line index (heights, lines, virtual size) is OptionList's own, for
short, long (wrapped or cut), wide, tabbed, multi-line and markup prompts, wrapping or not."""

from __future__ import annotations

import pytest
from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import Horizontal
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from kbtool.tui.widgets.lists import LinkList


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


PROMPTS: list = [
    Text("#1 f"),
    Text("#12345 a_rather_long_function_name_that_wraps_somewhere", style="bold"),
    Text("#7 " + "x" * 40),
    Text("#8 名前の長い関数名前の長い関数"),
    Text("#9 tab\there"),
    Text("#10 two\nlines"),
    Text(""),
    Text("  “some string”", style="dim").append(" (more)", style="dim italic"),
    "[b]markup[/b] string prompt that is long enough to wrap at twenty",
    Text("#11 exactly-twenty-ch"),
]
PROMPTS += [Text("#" + "y" * n) for n in range(16, 27)]  # around the options' width
PROMPTS += [Text("#1 " + "z" * n) for n in range(14, 24)]


class _Pair(App):
    CSS = """
    OptionList { height: 1fr; width: 24; border: none; padding: 0; }
    .nowrap { text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, nowrap: bool) -> None:
        super().__init__()
        self.nowrap = nowrap

    def compose(self) -> ComposeResult:
        classes = "nowrap" if self.nowrap else ""
        with Horizontal():
            yield OptionList(id="plain", classes=classes)
            yield LinkList(id="links", classes=classes)


@pytest.mark.anyio
@pytest.mark.parametrize("nowrap", [False, True])
async def test_link_list_heights_are_option_lists(nowrap: bool) -> None:
    app = _Pair(nowrap)
    async with app.run_test(size=(60, 8)) as pilot:
        plain, links = app.query_one("#plain", OptionList), app.query_one("#links", LinkList)
        for ol in (plain, links):
            ol.add_options([Option(p, id=f"1:{i}") for i, p in enumerate(PROMPTS * 3)])
        await pilot.pause()
        await pilot.pause()
        assert links.scrollable_content_region.width == plain.scrollable_content_region.width
        assert links._line_cache.heights == plain._line_cache.heights
        assert links._line_cache.lines == plain._line_cache.lines
        assert links._line_cache.index_to_line == plain._line_cache.index_to_line
        assert links.virtual_size == plain.virtual_size
        if not nowrap:  # wrapping: some prompts take more than one line
            assert max(links._line_cache.heights.values()) > 1
        # the off-screen one-line options were not made into visuals
        assert any(o._visual is None for o in links.options)
        assert [links.render_line(y).text for y in range(6)] == [
            plain.render_line(y).text for y in range(6)
        ]
