"""A scrollable list of lines drawn on demand (Textual's line API): only the visible lines
are made (and cached), so a 10,000-instruction function scrolls as fast as a short one."""

from __future__ import annotations

from collections.abc import Callable

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

CACHE_LINES = 4_000  # highlighted lines kept per view
CURSOR = Style(bgcolor="grey27")
GUTTER = Style(dim=True)


class LinesView(ScrollView, can_focus=True):
    """A scrollable list of lines drawn on demand: ``render(i) -> Text`` for line ``i``.

    Long lines scroll sideways (left/right, shift for bigger steps); the line numbers stay put.
    """

    DEFAULT_CSS = """
    LinesView { background: $surface; }
    """
    BINDINGS = [
        Binding("up,k", "cursor(-1)", "up", show=False),
        Binding("down,j", "cursor(1)", "down", show=False),
        Binding("pageup", "page(-1)", "page up", show=False),
        Binding("pagedown,space", "page(1)", "page down", show=False),
        Binding("home,g", "cursor_to(0)", "top", show=False),
        Binding("end,G", "cursor_to(-1)", "bottom", show=False),
        Binding("left", "columns(-1)", "scroll left", show=False),
        Binding("right", "columns(1)", "scroll right", show=False),
        Binding("shift+left", "columns(-8)", "scroll far left", show=False),
        Binding("shift+right", "columns(8)", "scroll far right", show=False),
    ]
    COLUMNS_STEP = 4  # columns per left/right press (shift: 8 steps)

    def __init__(self, *, id: str | None = None, gutter: bool = True) -> None:
        super().__init__(id=id)
        self.count = 0
        self.render_fn: Callable[[int], Text] = lambda i: Text("")
        self.line_numbers = gutter
        self.cursor = 0
        self._cache: dict[int, Strip] = {}
        self._gutter_width = 0

    def set_lines(
        self, count: int, render: Callable[[int], Text], width: int, *, cursor: int = 0
    ) -> None:
        """Show ``count`` lines; ``width`` is the longest line's cell width (for scrolling)."""
        self.count = count
        self.render_fn = render
        self._cache.clear()
        self._gutter_width = len(str(count)) + 1 if self.line_numbers else 0
        self.virtual_size = Size(width + self._gutter_width + 1, count)
        self.cursor = max(0, min(cursor, count - 1))
        self.scroll_to(0, max(0, self.cursor - 3), animate=False)
        self.refresh()

    def forget(self, lines: range, width: int | None = None) -> None:
        """Lines whose text changed (a page read): drawn again; ``width``: the longest line's
        width now, when it grew."""
        cache = self._cache
        for i in lines:
            cache.pop(i, None)
        if width is not None and width + self._gutter_width + 1 > self.virtual_size.width:
            self.virtual_size = Size(width + self._gutter_width + 1, self.count)
        top = int(self.scroll_offset.y)
        if lines.start < top + max(1, self.size.height) and lines.stop > top:
            self.refresh()

    def _strip(self, i: int) -> Strip:
        """Line ``i`` without its number (the gutter is drawn apart: it never scrolls)."""
        strip = self._cache.get(i)
        if strip is None:
            text = self.render_fn(i)
            strip = Strip(list(text.render(self.app.console)))
            if len(self._cache) >= CACHE_LINES:
                self._cache.clear()
            self._cache[i] = strip
        return strip

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        i = scroll_y + y
        width = self.size.width
        base = self.rich_style
        if i >= self.count:
            return Strip.blank(width, base)
        gw = min(self._gutter_width, width)
        strip = self._strip(i).crop_extend(scroll_x, scroll_x + width - gw, base)
        if gw:
            number = f"{i + 1:>{gw - 1}} "[:gw]
            strip = Strip.join([Strip([Segment(number, GUTTER)], gw), strip])
        strip = strip.apply_style(base)
        if i == self.cursor and self.has_focus:  # over the line's own background
            strip = Strip(Segment.apply_style(list(strip), post_style=CURSOR), strip.cell_length)
        return strip

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def _rows_shown(self) -> int:
        """Lines on screen: the view's height less a horizontal scrollbar's row."""
        return max(1, self.scrollable_content_region.height)

    def _move(self, line: int) -> None:
        if not self.count:
            return
        self.cursor = max(0, min(line, self.count - 1))
        top = int(self.scroll_offset.y)
        height = self._rows_shown()
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False)
        self.refresh()

    @property
    def wider_than_view(self) -> bool:
        """Whether some line is cut at the right edge (sideways scrolling has work to do)."""
        return self.virtual_size.width > self.size.width

    def action_columns(self, steps: int) -> None:
        self.scroll_to(x=max(0, self.scroll_offset.x + steps * self.COLUMNS_STEP), animate=False)

    def action_cursor(self, step: int) -> None:
        self._move(self.cursor + step)

    def action_cursor_to(self, line: int) -> None:
        self._move(self.count - 1 if line < 0 else line)

    def action_page(self, step: int) -> None:
        self._move(self.cursor + step * max(1, self._rows_shown() - 1))
