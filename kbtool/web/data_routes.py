"""The data-model routes of the dashboard and the studio (issue 26): strings, globals, data
items, cross-references and initial memory of a version, answered by
:mod:`kbtool.services.data` from the model ``kbtool analyze`` stores.

- ``/api/strings/{version_id}?q=&offset=&limit=``: a page of strings (``{items, total,
  offset, next_offset}``);
- ``/api/data/{version_id}?kind=&q=&offset=&limit=``: a page of data items of any kind;
- ``/api/globals/{version_id}``: the globals with roles, names, readers and writers;
- ``/api/xrefs/{version_id}?target=&offset=&limit=``: who uses a function (``#12``, a name,
  a stable id), a global (``g:NAME``), an address (``0x1234``), a data label or a string
  (``"text``);
- ``/api/memory/{version_id}?address=&length=``: hex + ASCII rows (at most MAX_READ bytes).

Unknown version, no data model yet, a target that matches nothing, an address outside the
data: 404 ``{"error": ...}``; a malformed or out-of-bound parameter: 400. Every list is a
bounded page (``limit`` at most :data:`MAX_LIMIT`).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from kbtool.services import data as data_svc

# imported by kbtool.web.router while it builds its route table
from kbtool.web.http import HTTPError, Query, one, rule, version_id

MAX_LIMIT = 500  # rows per page of a list route
DEFAULT_LIMIT = 100
MAX_TEXT = 512  # characters of a search text or a target


def _int(query: Query, name: str, default: int, *, lo: int = 0, hi: int = 2**63 - 1) -> int:
    raw = one(query, name)
    if raw is None or raw == "":
        return default
    value = version_id(raw, name)  # digits only, 400 otherwise
    if not lo <= value <= hi:
        raise HTTPError(400, f"{name} {value} is out of range ({lo}..{hi})")
    return value


def _text(query: Query, name: str) -> str | None:
    raw = one(query, name)
    if raw is not None and len(raw) > MAX_TEXT:
        raise HTTPError(400, f"{name} longer than {MAX_TEXT} characters")
    return raw or None


def _call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn`` with DataNotFoundError as 404 and any other DataError as 400."""
    try:
        return fn(*args, **kwargs)
    except data_svc.DataNotFoundError as exc:
        raise HTTPError(404, str(exc)) from None
    except data_svc.DataError as exc:
        raise HTTPError(400, str(exc)) from None


def _page(query: Query) -> tuple[int, int]:
    return _int(query, "offset", 0), _int(query, "limit", DEFAULT_LIMIT, lo=1, hi=MAX_LIMIT)


def _strings(conn: sqlite3.Connection, params: dict[str, str], query: Query) -> Any:
    offset, limit = _page(query)
    return _call(
        data_svc.strings,
        conn,
        version_id(params["vid"]),
        search=_text(query, "q"),
        offset=offset,
        limit=limit,
    )


def _data(conn: sqlite3.Connection, params: dict[str, str], query: Query) -> Any:
    offset, limit = _page(query)
    return _call(
        data_svc.list_data,
        conn,
        version_id(params["vid"]),
        kind=_text(query, "kind"),
        search=_text(query, "q"),
        offset=offset,
        limit=limit,
    )


def _globals(conn: sqlite3.Connection, params: dict[str, str], query: Query) -> Any:
    return _call(data_svc.globals_of, conn, version_id(params["vid"]))


def _xrefs(conn: sqlite3.Connection, params: dict[str, str], query: Query) -> Any:
    vid = version_id(params["vid"])
    target = _text(query, "target")
    if not target:
        raise HTTPError(
            400, 'missing query parameter target: /api/xrefs/ID?target=g:NAME|0x1234|#12|"text'
        )
    offset, limit = _page(query)
    return _call(data_svc.xrefs, conn, vid, target, offset=offset, limit=limit)


def _memory(conn: sqlite3.Connection, params: dict[str, str], query: Query) -> Any:
    vid = version_id(params["vid"])
    raw = one(query, "address")
    if not raw:
        raise HTTPError(
            400, "missing query parameter address: /api/memory/ID?address=0x1234&length=64"
        )
    try:
        address = int(raw.strip(), 0) if len(raw) <= 32 else -1
    except ValueError:
        address = -1
    if address < 0:
        raise HTTPError(400, f"malformed address {raw[:40]!r}: expected 0x1234 or a decimal number")
    length = _int(query, "length", 64, lo=1, hi=data_svc.MAX_READ)
    return _call(data_svc.memory, conn, vid, address, length)


ROUTES = [
    rule(r"/api/strings/(?P<vid>[^/]+)", _strings),
    rule(r"/api/data/(?P<vid>[^/]+)", _data),
    rule(r"/api/globals/(?P<vid>[^/]+)", _globals),
    rule(r"/api/xrefs/(?P<vid>[^/]+)", _xrefs),
    # reads the module's data segments from the stored bytes: bounded like the code routes
    rule(r"/api/memory/(?P<vid>[^/]+)", _memory, expensive=True),
]
