"""The confidence heatmap: one half-block cell per defined function, drawn with the Line API.

Each terminal character shows two functions stacked (``▀``: foreground = upper cell,
background = lower cell), so an 80x24 terminal shows well over a thousand functions and
50,000 functions take a few hundred lines. Cells run left to right, top to bottom, in
function index order. Only the visible lines are rendered (:meth:`render_line`), so the
cost of a paint or a cursor move does not depend on the number of functions.

Tints follow docs/interface.md (human emerald, oracle blue, export cyan, diff-carry amber,
agent darker amber, unnamed zinc); confidence sets the intensity: the tint is blended
into the background, faint at confidence 0 and full at 1.
"""

from __future__ import annotations

from math import ceil
from time import perf_counter

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.color import Color
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from kbtool.plainclass import FrozenPlain
from kbtool.tui.widgets.palette import PROVENANCES, TINT

BUCKETS = 11  # confidence quantised to 0.0, 0.1, ... 1.0
UNNAMED = PROVENANCES.index(None)
EMPTY = 255  # past the last function
CURSOR = 254
HALF = "▀"


def cell_code(provenance: str | None, confidence: float | None) -> int:
    """The colour code of one cell: provenance slot * BUCKETS + confidence bucket."""
    try:
        slot = PROVENANCES.index(provenance)
    except ValueError:
        slot = UNNAMED
    if slot == UNNAMED or confidence is None:
        return UNNAMED * BUCKETS + BUCKETS - 1
    bucket = min(BUCKETS - 1, max(0, round(float(confidence) * (BUCKETS - 1))))
    return slot * BUCKETS + bucket


def intensity(bucket: int) -> float:
    """Share of the tint over the background: 0.3 at confidence 0, 1.0 at confidence 1."""
    return 0.3 + 0.7 * bucket / (BUCKETS - 1)


class _Palette(FrozenPlain):
    """The grid's colours (a frozen record; no dataclass compiled at the TUI's start)."""

    _FIELDS = ("background", "cursor", "cursor_dim")
    __slots__ = _FIELDS
    background: Color
    cursor: Color
    cursor_dim: Color

    def __init__(self, background: Color, cursor: Color, cursor_dim: Color) -> None:
        object.__setattr__(self, "background", background)
        object.__setattr__(self, "cursor", cursor)
        object.__setattr__(self, "cursor_dim", cursor_dim)

    def color(self, code: int, focused: bool) -> Color:
        if code == EMPTY:
            return self.background
        if code == CURSOR:
            return self.cursor if focused else self.cursor_dim
        slot, bucket = divmod(code, BUCKETS)
        if slot == UNNAMED:
            return self.background.blend(TINT[None], 0.55)
        return self.background.blend(TINT[PROVENANCES[slot]], intensity(bucket))


class HeatmapGrid(ScrollView, can_focus=True):
    """A dense grid of function cells with a cell cursor."""

    DEFAULT_CSS = """
    HeatmapGrid {
        background: $surface;
        overflow-y: scroll;
        overflow-x: hidden;
        scrollbar-size-vertical: 1;
        height: 1fr;
        width: 1fr;
    }
    HeatmapGrid:focus {
        background-tint: $foreground 0%;
    }
    """

    _MOVE = Binding.Group("move", compact=True)
    BINDINGS = [
        Binding("h", "move(-1, 0)", "left", group=_MOVE),
        Binding("j", "move(0, 1)", "down", group=_MOVE),
        Binding("k", "move(0, -1)", "up", group=_MOVE),
        Binding("l", "move(1, 0)", "right", group=_MOVE),
        Binding("left", "move(-1, 0)", "left", show=False),
        Binding("right", "move(1, 0)", "right", show=False),
        Binding("up", "move(0, -1)", "up", show=False),
        Binding("down", "move(0, 1)", "down", show=False),
        Binding("pageup,ctrl+b", "page(-1)", "page up", show=False),
        Binding("pagedown,ctrl+f,space", "page(1)", "page down", show=False),
        Binding("home", "jump(0)", "first", show=False),  # g: go to an index (the screen)
        Binding("end,G", "jump(-1)", "last", show=False),
        Binding("enter", "select", "open", key_display="⏎"),
    ]

    cursor: reactive[int] = reactive(0, repaint=False, init=False)  # watch_cursor repaints 2 lines

    class CursorMoved(Message):
        """The cursor now sits on cell ``position`` (index into the grid's cells)."""

        def __init__(self, grid: HeatmapGrid, position: int) -> None:
            super().__init__()
            self.grid = grid
            self.position = position

        @property
        def control(self) -> HeatmapGrid:
            return self.grid

    class Selected(Message):
        """Enter or a double click on cell ``position``."""

        def __init__(self, grid: HeatmapGrid, position: int) -> None:
            super().__init__()
            self.grid = grid
            self.position = position

        @property
        def control(self) -> HeatmapGrid:
            return self.grid

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._codes = bytearray()
        self._cols = 1
        self._palette: _Palette | None = None
        self._styles: dict[tuple[int, int, bool], Style] = {}
        self.first_paint: float | None = None  # perf_counter() of the first line drawn with cells

    # ------------------------------------------------------------ data

    @property
    def count(self) -> int:
        return len(self._codes)

    @property
    def columns(self) -> int:
        return self._cols

    def set_cells(self, codes: bytes | bytearray, cursor: int | None = None) -> None:
        """Replace every cell (colour codes from :func:`cell_code`), keeping or setting the cursor."""
        self._codes = bytearray(codes)
        self._update_virtual_size()
        target = self.cursor if cursor is None else cursor
        target = max(0, min(target, len(self._codes) - 1)) if self._codes else 0
        if target != self.cursor:
            self.set_reactive(HeatmapGrid.cursor, target)
        self._scroll_to_cursor()
        self.refresh()
        self.post_message(self.CursorMoved(self, self.cursor))

    def set_cell(self, position: int, code: int) -> None:
        if 0 <= position < len(self._codes) and self._codes[position] != code:
            self._codes[position] = code
            self.refresh_line(self._line_of(position))

    # ------------------------------------------------------------ geometry

    def _line_of(self, position: int) -> int:
        return position // (2 * self._cols)

    def _update_virtual_size(self) -> None:
        width = self.scrollable_content_region.width or self.size.width or 1
        self._cols = max(1, width)
        rows = ceil(len(self._codes) / self._cols) if self._codes else 0
        self.virtual_size = Size(self._cols, ceil(rows / 2))

    def on_resize(self, event: events.Resize) -> None:
        old = self._cols
        self._update_virtual_size()
        if old != self._cols:
            self._scroll_to_cursor()
            self.refresh()

    def _scroll_to_cursor(self) -> None:
        if not self._codes:
            return
        line = self._line_of(self.cursor)
        top = round(self.scroll_offset.y)
        height = max(1, self.scrollable_content_region.height)
        if line < top:
            self.scroll_to(y=line, animate=False, immediate=True)
        elif line >= top + height:
            self.scroll_to(y=line - height + 1, animate=False, immediate=True)

    # ------------------------------------------------------------ painting

    def _get_palette(self) -> _Palette:
        if self._palette is None:
            _, background = self.background_colors
            dark = self.app.current_theme.dark
            self._palette = _Palette(
                background=background,
                cursor=Color.parse("#ffffff" if dark else "#000000"),
                cursor_dim=Color.parse("#a1a1aa" if dark else "#52525b"),
            )
        return self._palette

    def _style(self, top: int, bottom: int, focused: bool) -> Style:
        key = (top, bottom, focused)
        style = self._styles.get(key)
        if style is None:
            pal = self._get_palette()
            style = Style(
                color=pal.color(top, focused).rich_color,
                bgcolor=pal.color(bottom, focused).rich_color,
            )
            self._styles[key] = style
        return style

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._palette = None
        self._styles.clear()

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)

    def _theme_changed(self, _theme: object) -> None:
        self._palette = None
        self._styles.clear()
        self.refresh()

    def render_line(self, y: int) -> Strip:
        cols = self._cols
        line = y + round(self.scroll_offset.y)
        width = self.size.width
        codes = self._codes
        n = len(codes)
        focused = self.has_focus
        top0 = line * 2 * cols
        if top0 >= n or line < 0:
            return Strip([Segment(" " * width, self._style(EMPTY, EMPTY, focused))], width)
        if self.first_paint is None:
            self.first_paint = perf_counter()
        bot0 = top0 + cols
        cur = self.cursor
        segments: list[Segment] = []
        run_key: tuple[int, int] | None = None
        run = 0
        for c in range(cols):
            t = top0 + c
            b = bot0 + c
            tc = EMPTY if t >= n else (CURSOR if t == cur else codes[t])
            bc = EMPTY if b >= n else (CURSOR if b == cur else codes[b])
            key = (tc, bc)
            if key != run_key:
                if run:
                    segments.append(self._segment(run_key, run, focused))
                run_key, run = key, 0
            run += 1
        if run:
            segments.append(self._segment(run_key, run, focused))
        if width > cols:
            segments.append(Segment(" " * (width - cols), self._style(EMPTY, EMPTY, focused)))
        return Strip(segments, max(width, cols))

    def _segment(self, key: tuple[int, int] | None, run: int, focused: bool) -> Segment:
        assert key is not None
        top, bottom = key
        if top == EMPTY and bottom == EMPTY:
            return Segment(" " * run, self._style(EMPTY, EMPTY, focused))
        return Segment(HALF * run, self._style(top, bottom, focused))

    # ------------------------------------------------------------ cursor

    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh_line(self._line_of(old))
        self.refresh_line(self._line_of(new))
        self._scroll_to_cursor()
        self.post_message(self.CursorMoved(self, new))

    def _on_focus(self, event: events.Focus) -> None:
        self.refresh_line(self._line_of(self.cursor))

    def _on_blur(self, event: events.Blur) -> None:
        self.refresh_line(self._line_of(self.cursor))

    def move_to(self, position: int) -> None:
        if self._codes:
            self.cursor = max(0, min(position, len(self._codes) - 1))

    def action_move(self, dx: int, dy: int) -> None:
        if not self._codes:
            return
        row, col = divmod(self.cursor, self._cols)
        if dx:
            self.move_to(self.cursor + dx)
            return
        target = (row + dy) * self._cols + col
        if 0 <= target < len(self._codes):
            self.cursor = target
        elif dy > 0:
            self.cursor = len(self._codes) - 1

    def action_page(self, direction: int) -> None:
        if not self._codes:
            return
        height = max(1, self.scrollable_content_region.height)
        step = 2 * self._cols * height
        target = self.cursor + direction * step
        if target >= len(self._codes):
            target = len(self._codes) - 1
        self.move_to(target)
        # keep the cursor's screen row: scroll by a page as well
        self.scroll_to(
            y=round(self.scroll_offset.y) + direction * height, animate=False, immediate=True
        )
        self._scroll_to_cursor()

    def action_jump(self, where: int) -> None:
        self.move_to(0 if where >= 0 else len(self._codes) - 1)

    def action_select(self) -> None:
        if self._codes:
            self.post_message(self.Selected(self, self.cursor))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or not self._codes:
            return
        if event.chain >= 2:
            self.post_message(self.Selected(self, self.cursor))
            return
        if offset.x >= self._cols:
            return
        line = offset.y + round(self.scroll_offset.y)
        top = line * 2 * self._cols + offset.x
        pos = top + self._cols if self.cursor == top else top
        if pos >= len(self._codes):
            pos = top
        if pos >= len(self._codes):
            return
        self.focus()
        self.cursor = pos

    def cell_region(self, position: int) -> Region:
        """Screen region (content coordinates) of the character holding ``position``."""
        return Region(position % self._cols, self._line_of(position), 1, 1)
