"""A huge function's Raw WASM by pages (issue 30 point 2): the code screen's first screen of
its disassembly, then the rest read a page at a time as one scrolls
(:func:`kbtool.services.code_pages.listing_page` on a worker), the view drawing a placeholder
for a line whose page is being read. No whole listing is made or kept."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual import work

from kbtool.kb.db import open_ro
from kbtool.render.code import WASM
from kbtool.render.disasm import head_lines
from kbtool.tui.widgets.code_view import CodeView
from kbtool.tui.widgets.listing_pages import PAGE, ListingPages

__all__ = ["PagedDisassembly", "read_ro"]


def read_ro(db_path, fn: Callable, *args):
    """``fn(conn, *args)`` on a read-only connection of its own (a worker thread's)."""
    conn = open_ro(db_path)
    try:
        return fn(conn, *args)
    finally:
        conn.close()


class PagedDisassembly:
    """The code screen's paging of a huge function's disassembly (a mixin of
    :class:`kbtool.tui.screens.code.CodeScreen`, which provides what is declared here)."""

    code: dict | None
    listing: Any
    mode: str
    index: int
    version_id: int
    at_offset: int | None
    _pages: ListingPages | None
    _at_line: int | None
    _shown: tuple[int, str] | None
    kb: Any
    app: Any
    _current: Callable[[int], bool]
    _show: Callable[[], None]
    query_one: Callable[..., Any]

    @work(thread=True, group="code-rest")
    def _fetch_rest(self, gen: int, version_id: int, index: int, at: int | None) -> None:
        """The page after a huge function's first screen (and so its length), and the line
        of instruction ``at`` (from the xrefs screen): the view then pages the rest."""
        from kbtool.services import code_pages

        listing = self.listing
        first = len(head_lines(listing)) + len(listing.instrs) if listing is not None else 0

        def read(conn, vid, idx):
            page = code_pages.listing_page(conn, vid, idx, first - first % PAGE, PAGE)
            line = code_pages.line_of_offset(conn, vid, idx, at) if at is not None else None
            return page, line

        try:
            page, line = read_ro(self.kb.db_path, read, version_id, index)
        except Exception:  # the first screen stays; the status says it is partial
            return
        self.app.call_from_thread(self._pages_ready, gen, page, line)

    def _pages_ready(self, gen: int, page, line: int | None) -> None:
        """A huge function's disassembly from its first screen on, by pages: the view keeps
        its cursor (or goes to ``line``)."""
        rec = self.listing
        if not self._current(gen) or self.code is None or rec is None:
            return
        n_head = len(head_lines(rec))
        first = self.code["mnemonics"].splitlines()[: n_head + len(rec.instrs)]
        instrs = {n_head + k: ins for k, ins in enumerate(rec.instrs)}
        pages = ListingPages(page.total, first, instrs, lambda start: self._fetch_page(gen, start))
        pages.add(page.offset, page.lines, page.instrs)
        self._pages = pages
        if line is not None and self.at_offset is not None:
            self.at_offset, self._at_line = None, line
        if self.mode == WASM:
            self._show()

    @work(thread=True, group="code-page")
    def _fetch_page(self, gen: int, start: int) -> None:
        from kbtool.services import code_pages

        try:
            page = read_ro(
                self.kb.db_path, code_pages.listing_page, self.version_id, self.index, start, PAGE
            )
        except Exception:  # the placeholders stay
            return
        self.app.call_from_thread(self._page_loaded, gen, page)

    def _page_loaded(self, gen: int, page) -> None:
        pages = self._pages
        if not self._current(gen) or pages is None:
            return
        lines = pages.add(page.offset, page.lines, page.instrs)
        if self._shown == (self.index, WASM):
            self.query_one("#code-view", CodeView).page_added(lines, pages.width)
