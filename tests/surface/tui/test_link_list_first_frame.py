"""A long links list (a libc function's 1,000 callers on the detail screen) puts its first
``FIRST_LINKS`` in the first frame and the rest just after it: the same options, in order."""

from __future__ import annotations

import pytest
from rich.text import Text
from textual.app import App, ComposeResult
from textual.screen import Screen

from kbtool.tui.widgets.lists import LinkList


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class _Links(App):
    def compose(self) -> ComposeResult:
        yield LinkList(id="links")


def _ids(links: LinkList) -> list[str | None]:
    return [links.get_option_at_index(i).id for i in range(links.option_count)]


@pytest.mark.anyio
async def test_a_long_list_comes_in_two_steps_with_the_same_options() -> None:
    app = _Links()
    async with app.run_test(size=(60, 20)) as pilot:
        links = app.query_one(LinkList)
        items = [(f"1:{i}", Text(f"#{i} f{i}")) for i in range(1_500)]
        links.set_links(items)
        assert links.option_count == LinkList.FIRST_LINKS  # the first frame's share
        await pilot.pause()
        await pilot.pause()
        # then every link up to MAX_LINKS, and the "… more" line
        assert links.option_count == LinkList.MAX_LINKS + 1
        assert _ids(links)[:-1] == [oid for oid, _ in items[: LinkList.MAX_LINKS]]
        assert "500 more" in str(links.get_option_at_index(LinkList.MAX_LINKS).prompt)
        # a second list before the rest of the first was added: only the second shows
        links.set_links(items[:200])
        links.set_links(items[:100])
        await pilot.pause()
        await pilot.pause()
        assert _ids(links) == [oid for oid, _ in items[:100]]
        # a cursor past the first share (a live reload) is kept: everything at once
        links.highlighted = 90
        links.set_links(items[:120])
        assert links.option_count == 120 and links.highlighted == 90
        links.set_links(items[:30])  # short: whole at once
        assert links.option_count == 30


@pytest.mark.anyio
async def test_prompts_are_made_for_the_links_shown() -> None:
    app = _Links()
    async with app.run_test(size=(60, 20)) as pilot:
        links = app.query_one(LinkList)
        made: list[int] = []

        def prompt(entry: int) -> Text:
            made.append(entry)
            return Text(f"#{entry}")

        links.set_links(((f"1:{i}", i) for i in range(300)), "none", prompt)
        assert made == list(range(LinkList.FIRST_LINKS))  # the first frame's only
        await pilot.pause()
        await pilot.pause()
        assert made == list(range(300)) and links.option_count == 300
        assert str(links.get_option_at_index(299).prompt) == "#299"


class _Drawn(LinkList):
    """A LinkList noting, at each frame, the options' width and whether its scrollbar shows."""

    def __init__(self) -> None:
        super().__init__(id="links")
        self.frames: list[tuple[int, bool]] = []

    def render_lines(self, crop):  # type: ignore[no-untyped-def]
        self.frames.append((self.scrollable_content_region.width, self.show_vertical_scrollbar))
        return super().render_lines(crop)


class _LinksApp(App):
    CSS = "LinkList { height: 1fr; border: none; padding: 0; }"  # as on the detail screen


class _LinksScreen(Screen):
    def __init__(self, count: int) -> None:
        super().__init__()
        self.count = count

    def compose(self) -> ComposeResult:
        yield _Drawn()

    def on_mount(self) -> None:  # as the detail screen does: links set before the first layout
        self.query_one(_Drawn).set_links((f"1:{i}", Text(f"#{i} f{i}")) for i in range(self.count))


@pytest.mark.anyio
async def test_a_list_longer_than_the_terminal_has_its_scrollbar_in_the_first_frame() -> None:
    app = _LinksApp()
    async with app.run_test(size=(60, 20)) as pilot:
        await app.push_screen(_LinksScreen(40))
        await pilot.pause()
        links = app.screen.query_one(_Drawn)
        final = links.scrollable_content_region.width
        assert links.show_vertical_scrollbar and final == 60 - links.styles.scrollbar_size_vertical
        # every frame, the first included, drew the options at their final width
        assert links.frames and all(f == (final, True) for f in links.frames)
        # a short list is left to Textual: no scrollbar
        await app.push_screen(_LinksScreen(5))
        await pilot.pause()
        short = app.screen.query_one(_Drawn)
        assert not short.show_vertical_scrollbar and short.scrollable_content_region.width == 60


@pytest.mark.anyio
async def test_options_are_drawn_again_at_a_new_width() -> None:
    app = _LinksApp()
    async with app.run_test(size=(60, 20)) as pilot:
        await app.push_screen(_LinksScreen(40))
        await pilot.pause()
        links = app.screen.query_one(_Drawn)
        long = "x" * 50  # one line at 58 columns, two at 38
        links.set_links([("1:0", Text(long))] + [(f"1:{i}", Text(f"#{i}")) for i in range(1, 40)])
        await pilot.pause()
        assert links.virtual_size.height == 40
        await pilot.resize_terminal(40, 20)
        await pilot.pause()
        await pilot.pause()
        width = links.scrollable_content_region.width
        assert width < 40
        assert links.virtual_size.height == 41  # the long option wraps at the new width
        assert all(links.render_line(y).cell_length == width for y in range(links.size.height))
        assert links.render_line(0).text.rstrip() == long[:width]
