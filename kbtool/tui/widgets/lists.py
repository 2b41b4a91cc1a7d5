"""Tables and link lists with vim keys, plus the one-line title bar of every screen.

:class:`KbTable` is in :mod:`kbtool.tui.widgets.table` (Textual's ``DataTable``, ~3 ms of
import, is not loaded by a start on the heatmap: no table is shown before the versions screen
is), and still importable from here; so is :class:`LinkList` (:mod:`kbtool.tui.widgets.link_list`:
no link list is shown before a detail or code screen)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from textual.widget import Widget

if TYPE_CHECKING:
    from kbtool.tui.widgets.link_list import LinkList as LinkList
    from kbtool.tui.widgets.table import KbTable as KbTable


def __getattr__(name: str) -> Any:
    if name == "KbTable":  # imported from here by most screens (and tests)
        from kbtool.tui.widgets.table import KbTable

        return KbTable
    if name == "LinkList":  # the detail and code screens' (not made at a start on the heatmap)
        from kbtool.tui.widgets.link_list import LinkList

        return LinkList
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class TitleBar(Widget):
    """The top line of a screen: where you are (literal Text), and the keys to find the rest."""

    DEFAULT_CSS = """
    TitleBar {
        height: 1;
        width: 1fr;
        background: $panel;
        color: $foreground;
        padding: 0 1;
    }
    """

    MIN_SIZE = (80, 24)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._parts: tuple[Text | str, ...] = ()

    def show(self, *parts: Text | str) -> None:
        self._parts = parts
        self.refresh()

    @property
    def plain(self) -> str:
        return self._left().plain

    def _left(self) -> Text:
        out = Text()
        out.append("kbtool", style="bold")
        for part in self._parts:
            out.append("  ›  ", style="dim")
            out.append_text(part if isinstance(part, Text) else Text(part))
        return out

    def render(self) -> Table:
        right = Text()
        w, h = self.app.size
        if w < self.MIN_SIZE[0] or h < self.MIN_SIZE[1]:
            right.append(f"{w}x{h} < 80x24: panels hidden ", style="bold yellow")
        right.append("? ", style="bold")
        right.append("keys ", style="dim")
        right.append("^p ", style="bold")
        right.append("jump", style="dim")
        grid = Table.grid(expand=True)
        grid.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
        grid.add_column(no_wrap=True, justify="right")
        grid.add_row(self._left(), right)
        return grid


class Panel(Widget):
    """A fixed-size box showing one Rich renderable; updating it repaints without a relayout.

    (``Static.update`` triggers a layout pass of the whole screen, which is what made a heatmap
    cursor step cost ~100 ms; this only repaints its own lines.)
    """

    DEFAULT_CSS = """
    Panel {
        height: auto;
        width: 1fr;
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._renderable: RenderableType = ""

    def set(self, renderable: RenderableType) -> None:
        self._renderable = renderable
        self.refresh()

    @property
    def renderable(self) -> RenderableType:
        return self._renderable

    def render(self) -> RenderableType:
        return self._renderable
