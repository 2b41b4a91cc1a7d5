"""The types routes (issue 27), read-only: ``/api/types?offset=&limit=`` (a page of the KB's
struct/union/enum/typedef declarations: ``{total, offset, types: [{name, kind, size, align,
fields, provenance, confidence, locked, uses}]}``) and ``/api/types/{name}`` (one type: its
declaration ``text``, ``fields`` with offsets and sizes or ``enumerators``, and ``applied``:
where it is applied, a local's ``function`` resolved). ``name`` is ``struct NAME``,
``union NAME``, ``enum NAME`` or a bare name (percent-encoded in the path). Unknown type:
404; an empty or over-long name, a malformed or out-of-range parameter: 400.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from kbtool.services import types as ts
from kbtool.services import types_view

# imported by kbtool.web.router while it builds its route table
from kbtool.web.http import HTTPError, Query, one, rule, version_id

DEFAULT_LIMIT = 200


def _int(query: Query, name: str, default: int, hi: int) -> int:
    raw = one(query, name)
    if raw is None or raw == "":
        return default
    value = version_id(raw, name)  # digits only, 400 otherwise
    if value > hi:
        raise HTTPError(400, f"{name} {value} is out of range (0..{hi})")
    return value


def _types(conn: sqlite3.Connection, params: dict[str, str], query: Query) -> Any:
    offset = _int(query, "offset", 0, 2**31)
    limit = max(1, _int(query, "limit", DEFAULT_LIMIT, ts.MAX_LIST))
    return types_view.types_page(conn, offset, limit)


def _type(conn: sqlite3.Connection, params: dict[str, str], query: Query) -> Any:
    try:
        return types_view.type_detail(conn, params["name"], history=one(query, "history") == "1")
    except types_view.TypeNotFound as exc:
        raise HTTPError(404, str(exc)) from None
    except ts.TypesError as exc:
        raise HTTPError(400, str(exc)) from None


ROUTES = [
    rule(r"/api/types", _types),
    rule(r"/api/types/(?P<name>[^/]+)", _type),
]
