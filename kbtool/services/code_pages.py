"""Pages of one function's disassembly for a view that scrolls it (the TUI's Raw WASM of a
huge function, issue 30 point 2): each page's lines and the instruction records behind them
(what ``⏎`` follows and ``x`` cross-references), decoded from the resume point before the
page (:mod:`kbtool.services.code_window`), never the whole listing.

The lines are exactly the whole listing's (:func:`kbtool.services.code.disassembly`'s
``mnemonics``). A body the windows cannot resume in (rejected by the decoder, or past the
listing's instruction limit) is paged from its whole listing, as the other code views show it.
"""

from __future__ import annotations

import sqlite3
from bisect import bisect_right
from dataclasses import dataclass

from kbtool.lift.disasm import Instr
from kbtool.render.disasm import head_lines, instr_line
from kbtool.services.code_function import function_code
from kbtool.services.code_prepared import code_module
from kbtool.services.code_window import EVERY, skim, window_records

__all__ = ["ListingPage", "line_of_offset", "listing_page"]


@dataclass(frozen=True, slots=True)
class ListingPage:
    """Lines ``offset..offset+len(lines)`` of a listing of ``total`` lines, and the record of
    each instruction line among them (0-based line of the whole listing -> record)."""

    offset: int
    lines: list[str]
    instrs: dict[int, Instr]
    total: int


def listing_page(
    conn: sqlite3.Connection, version_id: int, func_index: int, offset: int, limit: int
) -> ListingPage:
    """Lines ``offset..offset+limit`` of the function's disassembly with their records."""
    cm = code_module(conn, version_id)
    cm.check(func_index)
    sk = skim(cm.lm, func_index)
    if sk is None:  # no resume points: from the whole listing (an error line, or a cut)
        out, rec = function_code(conn, version_id, func_index)
        lines = out["mnemonics"].splitlines() or [""]
        total = len(lines)
        offset = max(0, min(offset, total))
        end = min(total, offset + max(0, limit))
        instrs: dict[int, Instr] = {}
        if rec is not None:
            n_head = len(head_lines(rec))
            instrs = {
                n_head + k: ins for k, ins in enumerate(rec.instrs) if offset <= n_head + k < end
            }
        return ListingPage(offset, lines[offset:end], instrs, total)
    n_head = len(sk.head)
    total = n_head + sk.count
    offset = max(0, min(offset, total))
    end = min(total, offset + max(0, limit))
    lines = list(sk.head[offset:end])
    first, last = max(0, offset - n_head), max(0, end - n_head)
    recs = window_records(cm.lm, func_index, sk, first, last) if first < last else []
    lines += [instr_line(ins) for ins in recs]
    return ListingPage(offset, lines, {n_head + first + k: r for k, r in enumerate(recs)}, total)


def line_of_offset(
    conn: sqlite3.Connection, version_id: int, func_index: int, file_offset: int
) -> int | None:
    """The 0-based listing line of the instruction at ``file_offset`` (None: not in the body),
    decoding at most one resume interval."""
    cm = code_module(conn, version_id)
    cm.check(func_index)
    sk = skim(cm.lm, func_index)
    if sk is None:
        _out, rec = function_code(conn, version_id, func_index)
        if rec is None:
            return None
        n_head = len(head_lines(rec))
        return next(
            (n_head + k for k, ins in enumerate(rec.instrs) if ins.offset == file_offset), None
        )
    k = bisect_right([pt[0] for pt in sk.points], file_offset) - 1
    if k < 0:
        return None
    first = k * EVERY
    recs = window_records(cm.lm, func_index, sk, first, min(sk.count, first + EVERY))
    n_head = len(sk.head)
    return next(
        (n_head + first + j for j, ins in enumerate(recs) if ins.offset == file_offset), None
    )
