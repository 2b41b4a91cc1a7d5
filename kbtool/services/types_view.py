"""What the TUI's types screen and the web's ``/api/types`` show (read-only): the KB's types
and one type's layout, with each place it is applied resolved to its function (name, latest
version and index) where it is a local."""

from __future__ import annotations

import sqlite3
from typing import Any

from kbtool.kb import queries
from kbtool.services import types as ts

MAX_NAME = 300  # characters of a type name asked for


class TypeNotFound(ts.TypesError):
    """No type of that name in the KB."""


def types_page(conn: sqlite3.Connection, offset: int = 0, limit: int = 100) -> dict[str, Any]:
    """:func:`kbtool.services.types.list_types`: ``{total, offset, types: [...]}``."""
    return ts.list_types(conn, offset, limit)


def type_detail(conn: sqlite3.Connection, name: str, *, history: bool = False) -> dict[str, Any]:
    """:func:`kbtool.services.types.show_type` (its ``history`` only when asked) with each
    ``applied`` local's ``function``: ``{stable_id, name, version_id, index}``. Raises
    :class:`TypeNotFound` for an unknown name, ``TypesError`` for an unusable one."""
    t = (name or "").strip()
    if not t or len(t) > MAX_NAME:
        raise ts.TypesError("give a type name: NAME, struct NAME, union NAME or enum NAME")
    try:
        ts.resolve_name(conn, t)
    except ts.TypesError as exc:
        raise TypeNotFound(str(exc)) from None
    r = ts.show_type(conn, t)
    if not history:
        r.pop("history", None)
    for a in r["applied"]:
        if a["kind"] != "local_type":
            continue
        where = queries.functions_by_stable_id(conn, a["target"])
        sym = queries.get_symbol(conn, a["target"])
        a["function"] = {
            "stable_id": a["target"],
            "name": sym["name"] if sym else None,
            "version_id": where[-1]["version_id"] if where else None,
            "index": where[-1]["index"] if where else None,
        }
    return r
