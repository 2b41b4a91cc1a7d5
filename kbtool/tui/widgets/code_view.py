"""One function's code in a :class:`LinesView`: raw wasm or C, highlighted line by line as
it comes into view, the lines that call a function underlined (links)."""

from __future__ import annotations

from rich.text import Text

from kbtool.render.code import WASM, highlight_line
from kbtool.render.text import lit
from kbtool.textutil import printable
from kbtool.tui.widgets.lines_view import LinesView
from kbtool.tui.widgets.listing_pages import ListingPages

PLACEHOLDER = "…"  # a line whose page is being read


def code_width(lines: list[str], text: str | None = None) -> int:
    """The cells of the longest line as the view shows it (for sideways scrolling);
    ``text``: the text ``lines`` were split from, when at hand (one check for all of them)."""
    # a line of printable characters is shown as it is (printable() never changes it):
    # only the others are escaped to be measured (a huge function's C: 100,000 lines)
    if text is not None and text.replace("\n", "").isprintable():
        return max(map(len, lines), default=0)  # every line printable: ~3x faster
    return max((len(x) if x.isprintable() else len(printable(x)) for x in lines), default=0)


#: the last big texts split (``id(text)`` -> text, lines, width): a huge function's C is
#: shown again (its code screen reopened, a key that reads the cursor's line) without
#: splitting and measuring its ~50,000 lines again (~10-20 ms of the UI thread on ffmpeg)
_SPLITS: dict[int, tuple[str, list[str], int]] = {}
SPLITS_KEPT = 2
SPLIT_KEPT_FROM = 1 << 16  # characters: a text this long is kept split


def split_code(text: str) -> tuple[list[str], int]:
    """``text``'s lines (``splitlines``, at least one) and their :func:`code_width`; a long
    text's are kept for the next call with the same text object."""
    hit = _SPLITS.get(id(text))
    if hit is not None and hit[0] is text:
        return hit[1], hit[2]
    lines = text.splitlines() or [""]
    width = code_width(lines, text)
    if len(text) >= SPLIT_KEPT_FROM:
        keep_split(text, lines, width)
    return lines, width


def keep_split(text: str, lines: list[str], width: int) -> None:
    """Keep ``text``'s lines and width (split elsewhere, e.g. on a worker thread)."""
    while len(_SPLITS) >= SPLITS_KEPT:
        _SPLITS.pop(next(iter(_SPLITS)))
    _SPLITS[id(text)] = (text, lines, width)


class CodeView(LinesView):
    """The code pane: ``show_code`` draws lines of ``mode`` (``wasm`` or ``c``)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.calls: dict[int, int] = {}  # 0-based line -> callee index

    def show_code(
        self,
        lines: list[str],
        mode: str,
        *,
        calls: dict[int, int] | None = None,
        hint: bool = False,
        cursor: int = 0,
        width: int | None = None,
    ) -> None:
        """Show ``lines`` highlighted as ``mode``; ``hint``: plain italic text (no code);
        ``calls``: the lines that call a function (underlined in wasm); ``width``: their
        :func:`code_width` when measured already (off the UI thread)."""
        self.calls = calls or {}

        def render(i: int) -> Text:
            if hint:
                return lit(lines[i], "italic")
            t = highlight_line(lines[i], mode)
            if mode == WASM and i in self.calls:
                t.stylize("underline")
            return t

        if width is None:
            width = code_width(lines)
        self.set_lines(len(lines), render, width, cursor=cursor)

    def show_pages(self, pages: ListingPages, *, cursor: int = 0) -> None:
        """Show a huge function's disassembly held by pages: a line not read yet is a
        placeholder until :meth:`page_added` says its page is here."""
        self.calls = {}

        def render(i: int) -> Text:
            line = pages.line(i)
            if line is None:
                return Text(PLACEHOLDER, style="dim")
            t = highlight_line(line, WASM)
            if pages.callee(i) is not None:
                t.stylize("underline")
            return t

        self.set_lines(pages.total, render, pages.width, cursor=cursor)

    def page_added(self, lines: range, width: int) -> None:
        """The lines of a page just read: drawn again (their placeholders dropped)."""
        self.forget(lines, width)
