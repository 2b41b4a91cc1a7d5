"""The detail record is drawn once per width and replayed: the same segments Rich makes, for
every measure and frame at that width; a new width is drawn anew."""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.table import Table
from rich.text import Text

from kbtool.tui.screens.detail import DrawnOnce


class _Counted:
    """Rich tables and text that count how often they are drawn."""

    def __init__(self) -> None:
        self.drawn = 0
        grid = Table.grid(padding=(0, 1))
        grid.add_column(style="bold", no_wrap=True, min_width=9)
        grid.add_column(overflow="fold")
        grid.add_row("name", Text("a_function_with_a_rather_long_name_" * 3, style="green"))
        grid.add_row("size", Text("1,234 bytes, 56 instructions"))
        self.group = Group(Text("annotation", style="bold underline"), grid)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        self.drawn += 1
        yield self.group


def _lines(console: Console, renderable, width: int) -> list[str]:
    with console.capture() as cap:
        console.print(renderable, width=width)
    return cap.get().splitlines()


def test_the_same_lines_as_rich_and_one_drawing_per_width() -> None:
    console = Console(width=80, color_system="truecolor", force_terminal=True)
    counted = _Counted()
    once = DrawnOnce(counted)
    for width in (40, 40, 40):
        assert _lines(console, once, width) == _lines(console, counted.group, width)
    assert counted.drawn == 1  # measured and drawn again at 40: replayed
    narrow = _lines(console, once, 25)
    assert narrow == _lines(console, counted.group, 25) and len(narrow) > 4  # folded anew
    assert counted.drawn == 2
    # as Textual asks it (its own console options): a height to crop to is not a new drawing
    options = console.options.update(width=40, highlight=False)
    whole = list(console.render(once, options))
    drawn = counted.drawn
    assert list(console.render(once, options.update(height=3))) == whole
    assert counted.drawn == drawn
