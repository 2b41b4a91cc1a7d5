"""Answers that fit a model's context window: the paging rule of every kbtool MCP tool.

The rule (docs/mcp.md, "Paging"):

- a tool called exactly as docs/interface.md lists it (no optional paging input) answers the
  base shape of docs/interface.md, unchanged;
- a list answer called with any paging input (``offset``, ``limit`` or a filter) becomes
  ``{items, total, offset, next_offset, truncated, note}``: ``total`` counts the rows that
  match, ``next_offset`` is the ``offset`` of the next page (``null`` at the end) and
  ``note`` says how to get the rest;
- an object answer keeps its keys; its long list is the page and a ``page`` object
  ``{total, offset, next_offset, truncated, note}`` is added;
- no paged answer is larger than :data:`MAX_ANSWER_BYTES` of JSON: a page stops early
  (``truncated`` true, ``next_offset`` set) rather than overflow.

Pure: no ``mcp``, no SQL.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

MAX_ANSWER_BYTES = 100_000  # the documented size bound of one answer (JSON bytes)
DEFAULT_PAGE = 500  # rows per page when only an offset or a filter is given
MAX_PAGE = 5_000


def _size(row: Any) -> int:
    return len(json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode("utf-8")) + 1


def page_rows(
    rows: Sequence[Any],
    offset: int,
    limit: int | None,
    *,
    call: str,
    budget: int = MAX_ANSWER_BYTES - 2_000,
) -> dict[str, Any]:
    """``rows[offset:offset+limit]`` cut to ``budget`` JSON bytes, with the paging keys.

    ``call`` is the tool call without its offset, e.g. ``list_functions(version_id=3)``;
    the note tells the agent to repeat it with ``offset=next_offset``.
    """
    limit = page_limit(limit)
    offset = max(0, offset)
    return page_window(rows[offset : offset + limit], len(rows), offset, call=call, budget=budget)


def page_limit(limit: int | None) -> int:
    """The rows a page may hold: ``limit`` within 1..MAX_PAGE, DEFAULT_PAGE when absent."""
    return DEFAULT_PAGE if limit is None else max(1, min(limit, MAX_PAGE))


def page_window(
    window: Sequence[Any],
    total: int,
    offset: int,
    *,
    call: str,
    budget: int = MAX_ANSWER_BYTES - 2_000,
) -> dict[str, Any]:
    """The page of :func:`page_rows` when the caller already read only the rows from
    ``offset`` (at most one page of them) and knows ``total`` (e.g. LIMIT/OFFSET in SQL)."""
    items: list[Any] = []
    size = 0
    for row in window:
        size += _size(row)
        if size > budget and items:
            break
        items.append(row)
    end = offset + len(items)
    next_offset = end if end < total else None
    truncated = next_offset is not None
    if offset >= total and total:
        note = f"offset {offset} is past the end: there are {total} rows"
    elif truncated:
        head = call[:-1] + (", " if not call.endswith("(") else "")
        note = f"rows {offset}-{end - 1} of {total}; for the rest call {head}offset={end})"
    else:
        note = f"rows {offset}-{end - 1} of {total}; this is the last page" if total else "no rows"
    return {
        "items": items,
        "total": total,
        "offset": offset,
        "next_offset": next_offset,
        "truncated": truncated,
        "note": note,
    }


def call_text(tool: str, **args: Any) -> str:
    """``tool(a=1, b='x')`` for a note, leaving out arguments that are None."""
    inner = ", ".join(f"{k}={v!r}" for k, v in args.items() if v is not None)
    return f"{tool}({inner})"


def cut_lists(obj: dict[str, Any], max_items: int, fields: Sequence[str]) -> dict[str, Any]:
    """``obj`` with each list in ``fields`` cut to ``max_items``; ``truncated`` maps each cut
    field to how many items were left out and ``note`` says so (both absent when nothing
    was cut)."""
    out = dict(obj)
    left: dict[str, int] = {}
    for name in fields:
        value = out.get(name)
        if isinstance(value, list) and len(value) > max_items:
            left[name] = len(value) - max_items
            out[name] = value[:max_items]
    if left:
        out["truncated"] = left
        out["note"] = (
            f"lists cut to {max_items} items ({', '.join(f'{k}: {n} more' for k, n in left.items())});"
            " pass a larger max_items for more, or read the code with get_disassembly"
        )
    return out
