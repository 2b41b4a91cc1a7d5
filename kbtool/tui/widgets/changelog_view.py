"""The diff screen's changelog pane: a :class:`LinesView` drawing only the rows on screen.

The semantic changelog of a big pair is thousands of entries (ffmpeg: ~10,000 functions,
~30,000 lines). Made into one Rich renderable for a scrolling ``Static``, it was tens of
thousands of Texts, Spans and lists built on a worker as soon as the diff screen opened,
while the pane was still hidden (``c`` shows it), and kept for as long as the screen: the
collector walked them all (a 50-140 ms pause in the TUI on ffmpeg). Here the pane keeps the
changelog as its plain data (the dict the diff cache holds anyway) and, per unit (a heading,
one function's entry), where its first row is (an ``array`` of ints, nothing the collector
walks); a row becomes a Rich ``Text`` only when it scrolls into view, from the same pieces
:func:`kbtool.render.changelog_lines.changelog_sections` gives ``kbtool diff``. Nothing is
read or made while the pane is hidden: the pair's changelog is read when the pane is first
shown for that pair.

Rows are not wrapped: a long line (a list of calls) scrolls sideways (left/right), as the
code pane's lines do; everything else reads as before, line for line.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from functools import cache
from pathlib import Path

from rich.cells import cell_len
from rich.text import Text
from textual import events, work

from kbtool.kb.db import open_ro
from kbtool.render.changelog_lines import Line, changelog_sections
from kbtool.render.text import lit
from kbtool.services import heap
from kbtool.services.diff.view import cached_view
from kbtool.tui.widgets.lines_view import LinesView
from kbtool.tui.workers import ReleasingWorkers

__all__ = ["PREPARING", "ChangelogPane", "ChangelogRows", "changelog_data"]

PREPARING = "preparing the changelog…"
#: rows measured before the pane shows them (a tall screen and a page or two beyond it); the
#: rest are measured after that frame, for their width alone (sideways scrolling)
FIRST_ROWS = 300
NONE = "no semantic changelog for this pair"


def _rows_of(line: Line) -> list[Text]:
    """The rows of one changelog line: a heading's leading newline is a blank row; an
    entry's detail line is indented by four (the reference's ``Padding``)."""
    indent, body = line
    if indent < 0:
        return list(body.split("\n"))  # type: ignore[union-attr]
    pieces: list[tuple[str, str]] = body  # type: ignore[assignment]
    if indent:
        return [Text.assemble(" " * indent, *pieces)]
    return [Text.assemble(*pieces)]


def _measure(line: Line) -> tuple[int, int]:
    """(rows, cells of the widest) of one changelog line, without making its Texts."""
    indent, body = line
    if indent < 0:
        parts = body.plain.split("\n")  # type: ignore[union-attr]
        return len(parts), max(map(cell_len, parts))
    plain = "".join(t for t, _ in body)  # type: ignore[union-attr]
    if plain.isascii() or _narrow().issuperset(plain):
        return 1, indent + len(plain)
    return 1, indent + cell_len(plain)


@cache
def _narrow() -> frozenset[str]:
    """Characters one cell wide as Rich measures them: printable Latin, Greek and Cyrillic,
    and what the changelog writes itself (→ in every modified head, ± in a delta, —).
    Rich's own shortcut misses →: a line with one was measured a character at a time."""
    chars = (chr(c) for c in (*range(0x20, 0x7F), *range(0xA0, 0x483), *map(ord, "→±—…")))
    return frozenset(c for c in chars if cell_len(c) == 1)


def _width(lines: list[Line]) -> int:
    return max((_measure(line)[1] for line in lines), default=0)


class ChangelogRows:
    """A changelog's rows, addressed without making them: :meth:`row` makes the Text of row
    ``i`` from the unit it belongs to (the last unit's rows are kept: a screen of rows is a
    few units). ``count`` rows, the widest ``width`` cells.

    ``first``: only the units of the first ``first`` rows are made to measure their width
    (the first screen and a margin); the others' rows are counted (a function's entry is one
    row a line, :func:`changelog_sections` counts its lines), so every row is addressed at
    once, and ``width`` is the widest of those measured until :meth:`finish` measures the
    rest (ffmpeg: 9,662 rows, ~50 ms to measure, ~3 ms to count)."""

    def __init__(self, cl: dict, only: frozenset[str] | None = None, first: int | None = None):
        self._sections = changelog_sections(cl, only)
        self._first_unit: list[int] = []  # per section: the index of its first unit
        starts = array("q")  # per unit: its first row
        rows = width = 0
        rest = -1  # the first unit counted, not measured (-1: none)
        for lines, units, count in self._sections:
            self._first_unit.append(len(starts))
            for unit in units:
                starts.append(rows)
                if count is not None and first is not None and rows >= first:
                    if rest < 0:
                        rest = len(starts) - 1
                    rows += count(unit)
                    continue
                for line in lines(unit):
                    n, w = _measure(line)
                    rows += n
                    width = max(width, w)
        self._starts = starts
        self._rest = rest
        self.count = rows
        self.width = width
        self._kept: tuple[int, list[Text]] = (-1, [])

    @property
    def complete(self) -> bool:
        """Every row measured: ``width`` is the widest row's."""
        return self._rest < 0

    def finish(self) -> int:
        """Measure the rows only counted so far (off the event loop: read-only on the
        changelog, ``width`` set once at the end); the width."""
        if self._rest >= 0:
            width = self.width
            k = self._rest
            for s, (lines, units, _count) in enumerate(self._sections):
                start = self._first_unit[s]
                for j in range(max(0, k - start), len(units)):
                    width = max(width, _width(lines(units[j])))
            self.width = width
            self._rest = -1
        return self.width

    def _unit(self, k: int) -> list[Line]:
        s = bisect_right(self._first_unit, k) - 1
        lines, units, _count = self._sections[s]
        return lines(units[k - self._first_unit[s]])

    def row(self, i: int) -> Text:
        k = bisect_right(self._starts, i) - 1
        if k != self._kept[0]:
            made = [t for line in self._unit(k) for t in _rows_of(line)]
            self._kept = (k, made)
        return self._kept[1][i - self._starts[k]]

    def plain(self) -> list[str]:
        """Every row's text (tests; a real pane makes only what is on screen)."""
        return [self.row(i).plain for i in range(self.count)]


def changelog_data(db_path: str | Path, frm: int, to: int) -> dict | None:
    """The pair's changelog data through the diff cache (its report is a hit by then), or
    None when there is none to show (the change table stays useful)."""
    conn = open_ro(db_path)
    try:
        return cached_view(conn, frm, to)["changelog"]
    except (LookupError, ValueError):
        return None
    finally:
        conn.close()


class ChangelogPane(ReleasingWorkers, LinesView):
    """The changelog of the pair on screen (:meth:`want`), read once the pane is shown."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, gutter=False)
        self.rows: ChangelogRows | None = None  # the changelog drawn (None: a message)
        self.message = ""  # what the pane says instead (plain text), "" with rows
        self._want: tuple[int, int] | None = None  # the pair on screen
        self._have: tuple[int, int] | None = None  # the pair read (or being read)
        self._gen = 0
        self._visible = False

    # ------------------------------------------------------------ the screen's side

    def want(self, frm: int, to: int) -> None:
        """The pair on screen is (frm, to): its changelog is read when the pane is shown
        (now, if it is)."""
        self._want = (frm, to)
        if self._have != self._want:
            self._forget()
            if self._visible:
                self._load()

    def clear(self) -> None:
        """No pair on screen (a message instead of a report)."""
        self._want = None
        self._forget()

    @property
    def loaded(self) -> bool:
        """The pair on screen is drawn (its changelog, or why there is none)."""
        return self._want is not None and self._have == self._want and self.message != PREPARING

    def about_to_show(self) -> None:
        """The pane is about to be shown: the pair's changelog read from now, so that its
        "preparing" line is drawn by the layout that shows the pane (set on show, it made a
        layout of its own just after that one)."""
        if self._want is not None and self._have != self._want:
            self._load()

    # ------------------------------------------------------------ visibility

    def on_show(self, event: events.Show) -> None:
        self._visible = True
        if self._want is not None and self._have != self._want:
            self._load()

    def on_hide(self, event: events.Hide) -> None:
        self._visible = False

    # ------------------------------------------------------------ reading

    def _forget(self) -> None:
        self._gen += 1  # a read under way is for another pair now
        self._have = None
        self.rows = None
        self._say("", "")

    def _say(self, text: str, style: str) -> None:
        self.rows = None
        self.message = text
        shown = lit(text, style) if text else Text("")
        self.set_lines(1 if text else 0, lambda i: shown, cell_len(text))

    def _load(self) -> None:
        assert self._want is not None
        self._gen += 1
        self._have = self._want
        self._say(PREPARING, "italic")
        self._read(self._gen, self.app.db_path, *self._want)  # type: ignore[attr-defined]

    # a description of its own: Textual's default is the repr of the arguments
    @work(thread=True, group="changelog", exclusive=True, description="the changelog")
    def _read(self, gen: int, db_path: Path, frm: int, to: int) -> None:
        """The changelog read and its rows addressed on a worker (what is on screen is made
        when drawn)."""
        result: ChangelogRows | tuple[str, str]
        try:
            # read with the collector on: a pause is the whole process's, and a changelog
            # built from the facts (no kept answer) can take a minute
            data = changelog_data(db_path, frm, to)
            result = (NONE, "dim") if data is None else ChangelogRows(data, None, FIRST_ROWS)
        except Exception as exc:  # the table stays; the pane says why
            result = (f"cannot show the changelog: {type(exc).__name__}: {exc}", "bold red")
        self.app.call_from_thread(self._ready, gen, result)

    def _ready(self, gen: int, result: ChangelogRows | tuple[str, str]) -> None:
        if gen != self._gen or not self.is_attached or self._closing or self._pruning:
            return  # another pair asked for meanwhile, or the screen closing
        if isinstance(result, tuple):  # why there is nothing to show
            self._say(*result)
        else:
            self.message = ""
            self.rows = result
            self.set_lines(result.count, result.row, result.width)
            if not result.complete:  # the other rows' width, once the first screen is drawn
                self.call_after_refresh(self._measure_rest, gen, result)
        # the changelog stays in the diff cache: frozen once nothing short-lived is open
        self.set_timer(0.5, heap.settle)

    @work(thread=True, group="changelog-width", exclusive=True, description="its width")
    def _measure_rest(self, gen: int, rows: ChangelogRows) -> None:
        """The rows only counted measured, on a worker (the first screen is already drawn)."""
        if gen != self._gen:
            return
        rows.finish()
        self.app.call_from_thread(self._widened, gen, rows)

    def _widened(self, gen: int, rows: ChangelogRows) -> None:
        if gen == self._gen and self.rows is rows and self.is_attached and not self._closing:
            self.forget(range(0), rows.width)  # a wider line: room to scroll sideways
