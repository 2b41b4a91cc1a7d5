"""Navigable function links (callers, callees) with vim keys: the detail and code screens'
(importable from :mod:`kbtool.tui.widgets.lists` too; not loaded by a start on the heatmap)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, cast

from rich.text import Text
from textual import events
from textual._cells import cell_len
from textual.binding import Binding
from textual.geometry import Size
from textual.visual import RulesMap
from textual.widgets import OptionList
from textual.widgets.option_list import Option


class LinkList(OptionList):
    """Navigable function links (callers, callees); option ids are ``version:index``."""

    BINDINGS = [
        Binding("enter", "select", "open", key_display="⏎"),
        Binding("j", "cursor_down", "down", show=False),
        Binding("k", "cursor_up", "up", show=False),
    ]

    MAX_LINKS = 1000
    FIRST_LINKS = 60  # options in the first frame; the rest are added just after it

    _batch = 0  # the set_links call whose remaining options are wanted

    def set_links(
        self,
        links: Iterable[tuple[str, Any]],
        empty: str = "none",
        prompt: Callable[[Any], Text] | None = None,
    ) -> None:
        """Show ``(option id, prompt)`` links (at most ``MAX_LINKS``, then a "… N more" line);
        with ``prompt``, ``(option id, entry)`` pairs whose prompts it makes when shown.

        A long list (a libc function's 1,000 callers) shows its first ``FIRST_LINKS`` in the
        first frame and gets the rest right after it: measuring every option's wrapped height
        (and making its prompt) is what the frame would otherwise wait for (~30 ms for 1,000)."""
        keep = self.highlighted
        self._batch += 1
        self.clear_options()
        items = list(links)
        if not items:
            self.add_option(Option(Text(empty, style="dim italic"), disabled=True))
            return
        more = len(items) - self.MAX_LINKS
        items = items[: self.MAX_LINKS]
        tail = [Option(Text(f"… {more:,} more", style="dim italic"), disabled=True)]
        tail = tail if more > 0 else []
        n = len(items) + len(tail)
        cut = self.FIRST_LINKS if keep is None or keep < self.FIRST_LINKS else n
        self.add_options(_options(items[:cut], prompt) + (tail if cut >= len(items) else []))
        self.highlighted = min(keep, n - 1) if keep is not None else 0
        self._scrollbar_up_front()
        if cut < len(items):
            self.call_after_refresh(self._add_rest, self._batch, items[cut:], prompt, tail)

    def _scrollbar_up_front(self) -> None:
        """Before its first layout, a list with more options than the terminal has lines will
        scroll whatever room it gets: its vertical scrollbar is shown from that first layout.

        An OptionList learns its line count (and so its scrollbar) only while drawing its first
        frame; the scrollbar then appeared a frame later, narrowing every option by its width,
        and that frame drew every option again. Once laid out, Textual's own reckoning rules."""
        if self.size or self.styles.overflow_y != "auto":
            return
        lines = self.option_count  # each option is one line at least
        if lines > self.app.size.height:
            self.virtual_size = Size(0, lines)  # read by the first layout's scrollbar check
            self.show_vertical_scrollbar = True

    def on_resize(self, event: events.Resize) -> None:
        # A layout sends its Resize after its frame was drawn: the first one at the very size
        # the options were just measured and drawn at, and OptionList's own handler would
        # measure and draw them all again. Its caches are kept when every frame since they
        # were last cleared drew at the options' width of now.
        if self._drawn_at and not self._drawn_stale:
            if self.scrollable_content_region.width == self._drawn_at:
                event.prevent_default()
        self._drawn_stale = False

    _drawn_at = 0  # the options' width at the last frame (0: never drawn)
    _drawn_stale = False  # a frame drew at another width than the one before it

    def render_lines(self, crop):  # type: ignore[no-untyped-def]
        width = self.scrollable_content_region.width
        if self._drawn_at and width != self._drawn_at:
            self._drawn_stale = True  # drawn from caches of another width: the Resize clears
        lines = super().render_lines(crop)
        self._drawn_at = width
        return lines

    def _update_lines(self) -> None:
        """OptionList's line index (each new option's height), without making an option's
        visual to measure it when its text plainly fits on one line.

        OptionList turns every option's prompt into Content and wraps it to learn its height,
        off-screen options too (~70 % of a detail open with hundreds of links). A Text prompt
        of printable characters (no newline, no tab) at most the options' width is one line
        whatever the wrap and overflow rules; any other option is measured as OptionList
        does. The visuals of the rows drawn are made as they are drawn."""
        region = self.scrollable_content_region
        if not region:
            return
        cache = self._line_cache
        lines, options = cache.lines, self._options
        start = lines[-1][0] + 1 if lines else 0
        width = region.width - self._get_left_gutter_width()
        if start < len(options):
            styles = self.styles
            inner = width - self.get_component_styles("option-list--option").padding.width
            room = inner - int(styles.get("line_pad", 0) or 0) * 2  # type: ignore[call-overload]
            get_visual = self._get_visual
            index_to_line, heights = cache.index_to_line, cache.heights
            for index in range(start, len(options)):
                option = options[index]
                index_to_line[index] = len(lines)
                prompt = option._prompt
                if (
                    option._visual is None
                    and type(prompt) is Text
                    and room > 0
                    and (plain := prompt.plain).isprintable()
                    and cell_len(plain) <= room
                ):
                    count = 1
                else:
                    count = get_visual(option).get_height(cast(RulesMap, styles), inner)
                count += option._divider
                heights[index] = count
                lines.extend([(index, n) for n in range(count)])
        last_divider = options and options[-1]._divider
        virtual_size = Size(width, len(lines) - (1 if last_divider else 0))
        if virtual_size != self.virtual_size:
            self.virtual_size = virtual_size
            self._scroll_update(virtual_size)

    def _add_rest(
        self, batch: int, rest: list, prompt: Callable[[Any], Text] | None, tail: list[Option]
    ) -> None:
        if batch == self._batch and self.is_attached:
            self.add_options(_options(rest, prompt) + tail)


def _options(items: list, prompt: Callable[[Any], Text] | None) -> list[Option]:
    if prompt is None:
        return [Option(p, id=oid) for oid, p in items]
    return [Option(prompt(entry), id=oid) for oid, entry in items]
