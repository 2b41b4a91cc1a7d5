"""A huge function's disassembly held a page at a time (issue 30 point 2): the code pane asks
for a line, gets it when its page is here, else a placeholder while the page is read on a
worker (:func:`kbtool.services.code_pages.listing_page`). At most ``KEPT`` pages are kept
(least recently used out), beside the first screen the pane opened with: memory stays
bounded whatever the function's length."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

PAGE = 1_000  # lines per page read
KEPT = 8  # pages kept (besides the first screen)
AHEAD = 200  # a line this close to its page's end reads the next page too


class ListingPages:
    """Lines ``0..total`` of a listing: ``first`` (the first screen, with ``first_instrs``:
    line -> record) always here, the rest by pages of ``PAGE`` lines read through ``fetch``
    (called with a page's first line, at most once until :meth:`add` gets it)."""

    def __init__(
        self,
        total: int,
        first: list[str],
        first_instrs: dict[int, Any],
        fetch: Callable[[int], None],
    ) -> None:
        self.total = total
        self._first = first
        self._first_instrs = first_instrs
        self._fetch = fetch
        self._pages: OrderedDict[int, tuple[list[str], dict[int, Any]]] = OrderedDict()
        self._asked: set[int] = set()
        self.width = max((len(x) for x in first), default=0)  # the longest line seen

    def add(self, start: int, lines: list[str], instrs: dict[int, Any]) -> range:
        """A page read (lines from ``start``); the lines it covers."""
        self._asked.discard(start)
        self._pages[start] = (lines, instrs)
        self._pages.move_to_end(start)
        while len(self._pages) > KEPT:
            self._pages.popitem(last=False)
        self.width = max(self.width, max((len(x) for x in lines), default=0))
        return range(start, start + len(lines))

    def _page(self, i: int) -> tuple[list[str], dict[int, Any]] | None:
        start = i - i % PAGE
        page = self._pages.get(start)
        if page is not None:
            self._pages.move_to_end(start)
        return page

    def want(self, i: int) -> None:
        """Read the page of line ``i`` unless it is here or being read."""
        if i < len(self._first) or not 0 <= i < self.total:
            return
        start = i - i % PAGE
        if start not in self._pages and start not in self._asked:
            self._asked.add(start)
            self._fetch(start)

    def line(self, i: int) -> str | None:
        """Line ``i``, or None while its page is read (asked for here)."""
        if i < len(self._first):
            if i + AHEAD >= len(self._first):
                self.want(len(self._first))
            return self._first[i]
        page = self._page(i)
        if page is None:
            self.want(i)
            return None
        k = i % PAGE
        if k + AHEAD >= PAGE:
            self.want(i - k + PAGE)
        return page[0][k] if k < len(page[0]) else None

    def instr(self, i: int) -> Any:
        """The instruction record of line ``i`` when it is here (None for a header line)."""
        if i in self._first_instrs:
            return self._first_instrs[i]
        page = self._page(i)
        return None if page is None else page[1].get(i)

    def callee(self, i: int) -> int | None:
        """The function line ``i`` calls or references (``call``, ``ref.func``), if any."""
        ins = self.instr(i)
        ref = getattr(ins, "ref", None)
        return ref.index if ref is not None and ref.kind == "func" else None

    @property
    def pages_kept(self) -> int:
        return len(self._pages)
