"""The diff screen's changelog pane (``ChangelogPane``): the rows it draws on demand are the
changelog ``kbtool diff`` prints, line for line (unwrapped: long lines scroll sideways), with
hostile names and strings; it reads the pair on screen when shown, again after a swap."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console

from kbtool.render.terminal import changelog_from_data, parse_only
from kbtool.tui.screens.diff import DiffScreen
from kbtool.tui.widgets.changelog_view import ChangelogPane, ChangelogRows
from tests.support.changelog_data import changelog
from tests.support.tui import make_app, screen_text, settle

pytestmark = pytest.mark.anyio
WIDE = 20_000  # wider than any line drawn: the reference printed without wrapping


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _reference_lines(cl: dict, keep) -> list[str]:
    """What ``kbtool diff`` prints for the changelog on a console wide enough to wrap
    nothing (no colour), each line without the padding Rich adds on its right."""
    buf = io.StringIO()
    Console(file=buf, width=WIDE, color_system=None).print(changelog_from_data(cl, only=keep))
    return [line.rstrip(" ") for line in buf.getvalue().split("\n")[:-1]]


@settings(max_examples=150, deadline=None)
@given(cl=changelog(), only=st.sampled_from([None, "modified", "new,deleted", "changed"]))
def test_the_rows_are_the_printed_changelog_line_for_line(cl, only):
    keep = parse_only(only)
    rows = ChangelogRows(cl, keep)
    plain = rows.plain()
    assert [r.rstrip(" ") for r in plain] == _reference_lines(cl, keep)
    assert rows.count == len(plain)
    assert rows.width == max(map(cell_len, plain))
    for i in reversed(range(rows.count)):  # any order (a jump, scrolling up): the same rows
        assert rows.row(i).plain == plain[i]


async def test_the_pane_reads_the_pair_on_screen_when_shown_and_after_a_swap(demo_kb):
    app = make_app(demo_kb)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = DiffScreen(1, 2)
        await app.push_screen(screen)
        await settle(pilot)
        pane = screen.query_one(ChangelogPane)
        assert pane.rows is None and not pane.loaded  # hidden: not read
        await pilot.press("c")
        await settle(pilot)
        first = pane.rows
        assert pane.loaded and first is not None and first.count > 1
        title = first.row(1).plain  # after the blank row: "changelog A → B"
        assert title.startswith("changelog ") and title in screen_text(app)
        await pilot.press("x")  # swapped while shown: the other pair's changelog read
        await settle(pilot)
        assert pane.loaded and pane.rows is not None and pane.rows is not first
        swapped = pane.rows.row(1).plain
        a, b = title.removeprefix("changelog ").split(" → ")
        assert swapped == f"changelog {b} → {a}" and swapped in screen_text(app)
        await pilot.press("c")  # hidden again, swapped back: nothing read until shown
        await pilot.press("x")
        await settle(pilot)
        assert pane.rows is None and not pane.loaded
        await pilot.press("c")
        await settle(pilot)
        assert pane.loaded and pane.rows is not None and pane.rows.row(1).plain == title
        pane.focus()
        await pilot.press("end")  # the last row, as with any lines view
        await settle(pilot)
        last = pane.rows.row(pane.rows.count - 1).plain.strip()
        assert pane.cursor == pane.rows.count - 1 and last in screen_text(app)


@settings(max_examples=100, deadline=None)
@given(
    cl=changelog(),
    only=st.sampled_from([None, "modified", "new,deleted", "changed"]),
    first=st.integers(min_value=0, max_value=40),
)
def test_rows_counted_before_measured_are_the_same_rows(cl, only, first):
    """The pane measures only the first rows before its first frame (the others' lines are
    counted): every row is the same, at the same place, at once; the width is the widest of
    those measured until ``finish`` measures the rest, then the whole changelog's."""
    keep = parse_only(only)
    full = ChangelogRows(cl, keep)
    lazy = ChangelogRows(cl, keep, first)
    assert lazy.count == full.count
    assert lazy.plain() == full.plain()
    assert lazy.width <= full.width
    if lazy.complete:
        assert lazy.width == full.width
    assert lazy.finish() == full.width and lazy.complete and lazy.width == full.width
    assert lazy.plain() == full.plain()


async def test_the_pane_draws_before_measuring_every_row_then_widens(demo_kb, monkeypatch):
    """Shown, the pane draws its first screen from the rows measured so far; the other rows
    are measured afterwards, and the pane can then scroll sideways to the widest of all."""
    from kbtool.tui.widgets import changelog_view

    made: list[tuple[ChangelogRows, int, bool]] = []  # each, as built: its width, complete

    class Rows(ChangelogRows):
        def __init__(self, *args) -> None:
            super().__init__(*args)
            made.append((self, self.width, self.complete))

    monkeypatch.setattr(changelog_view, "FIRST_ROWS", 1)
    monkeypatch.setattr(changelog_view, "ChangelogRows", Rows)
    app = make_app(demo_kb)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = DiffScreen(1, 2)
        await app.push_screen(screen)
        await settle(pilot)
        pane = screen.query_one(ChangelogPane)
        await pilot.press("c")
        await settle(pilot)
        rows = pane.rows
        assert pane.loaded and rows is not None and [m[0] for m in made] == [rows]
        _, width_first, complete_first = made[0]
        assert not complete_first  # drawn from the first rows measured
        assert rows.complete  # then the others measured
        plain = rows.plain()
        widest = max(map(cell_len, plain))
        assert width_first < rows.width == widest
        assert pane.virtual_size.width == widest + 1  # no gutter; one cell of room
        assert plain[1] in screen_text(app)


@pytest.mark.parametrize(
    "text",
    [
        "#1→#2  ±0 instr",
        "é—…ж",
        "e\u0301 combining",
        "囗 wide",
        "a\u200db",
        "x\ufe0f",
        "\u00ad",
        "",
    ],
)
def test_a_line_is_measured_as_rich_measures_it(text):
    """The measure's shortcut (every character one cell wide) agrees with Rich's cell_len."""
    from kbtool.tui.widgets.changelog_view import _measure

    assert _measure((4, [(text, "bold"), ("→", "")])) == (1, 4 + cell_len(text + "→"))
