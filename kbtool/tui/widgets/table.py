"""The row-cursor table of every list screen (Textual's ``DataTable`` with vim keys).

Its own module: a start on the heatmap shows no table (the versions screen under it composes
when first shown), so Textual's ``DataTable`` module is imported when a table is first made
(:mod:`kbtool.tui.widgets.lists` still gives it by name)."""

from __future__ import annotations

from collections.abc import Iterable

from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.widgets import DataTable

__all__ = ["KbTable"]


class KbTable(DataTable):
    """A row-cursor DataTable with j/k/g/G. Cells must be Rich ``Text`` (never markup strings)."""

    BINDINGS = [
        Binding("enter", "select_cursor", "open", key_display="⏎"),
        Binding("j", "cursor_down", "down", show=False),
        Binding("k", "cursor_up", "up", show=False),
        Binding("g", "scroll_top", "top", show=False),
        Binding("G", "scroll_bottom", "bottom", show=False),
    ]

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        # renderable priority: provenance colours stay visible on the cursor row
        super().__init__(
            id=id,
            classes=classes,
            cursor_type="row",
            zebra_stripes=True,
            cursor_foreground_priority="renderable",
        )
        self._flex: tuple[str, int] | None = None
        self.painted = 0  # times drawn (a screen waits for its rows' frame before more work)

    def render_lines(self, crop):  # type: ignore[no-untyped-def]
        self.painted += 1
        return super().render_lines(crop)

    def flex(self, key: str, min_width: int = 12) -> None:
        """Give column ``key`` whatever width the others leave (at least ``min_width``)."""
        self._flex = (key, min_width)
        self._apply_flex()

    def on_resize(self, event: events.Resize) -> None:
        self._apply_flex()

    def _apply_flex(self) -> None:
        # Before its first layout a table has no width: it is given the terminal's (what a
        # screen's main table gets), so that the first layout draws the column at its width;
        # a table laid out narrower is set again on its resize (as it always was). Without
        # the guess the resize after the first layout changed the column and the screen was
        # laid out and drawn again (~70 ms CPU of the diff screen's open on ffmpeg).
        width = self.size.width or self.app.size.width
        if self._flex is None or not self.columns or not width:
            return
        key, min_width = self._flex
        col = self.columns.get(key)  # type: ignore[call-overload]
        if col is None:
            return
        pad = 2 * self.cell_padding
        others = sum(c.get_render_width(self) for c in self.columns.values() if c is not col)
        avail = width - self.styles.scrollbar_size_vertical
        width = max(min_width, avail - others - pad)
        if width != col.width or col.auto_width:
            col.width = width
            col.auto_width = False
            self.virtual_size = Size(others + width + pad, self.virtual_size.height)
            self._clear_caches()
            self.refresh()

    def replace_rows(self, rows: Iterable[tuple[str, list]], keep_key: str | None = None) -> None:
        """Clear and add ``(key, cells)`` rows; put the cursor back on ``keep_key`` (or its row)."""
        old_row = self.cursor_row
        self.clear()
        target = None
        for i, (key, cells) in enumerate(rows):
            self.add_row(*cells, key=key)
            if key == keep_key:
                target = i
        if self.row_count:
            row = target if target is not None else min(old_row, self.row_count - 1)
            self.move_cursor(row=max(0, row), animate=False)

    def current_key(self) -> str | None:
        if not self.row_count:
            return None
        try:
            key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        except Exception:
            return None
        return key.value
