"""A version's function list, whole or as the heatmap's cells, kept encoded per KB change.

``/api/versions/{id}/functions`` answers the Function list entries (docs/interface.md);
``?form=cells`` (optional) answers only what the dashboard's heatmap draws, in columns:
``{"version_id", "count", "provenances": [...], "index": [...], "provenance": [...],
"confidence": [...], "coverage": {...}}`` where ``provenance[i]`` is a position in
``provenances`` (the vocabulary's order, ``unnamed`` for a function without a name),
``confidence[i]`` the annotation's confidence (0 when there is none) and ``coverage`` the
version's Coverage (as ``/api/versions/{id}/coverage``). No names, no stable ids: ~14x
smaller, so the heatmap is painted before the whole list has come and been parsed (issue 30
point 1). With ``form=cells`` the id may be ``latest`` (the newest version: what the
dashboard opens by default, asked for before the versions are known).

Both answers, and ``/api/versions``, are kept encoded (the JSON bytes) per KB file, version and change token
(:func:`kbtool.kb.queries.change_token`: any ingest or annotation write makes a new one) and
the KB file's and WAL's size and time (any other write), so a second page asks the KB for the
token only.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import orjson

from kbtool.kb import provenance, queries
from kbtool.kb.errors import UnknownVersionError
from kbtool.kb.queries.cells import heatmap_cells, latest_version_id
from kbtool.kb.queries.events import file_and_change_token
from kbtool.web.http import HTTPError, Query, one, version_id

FORMS = ("list", "cells")
KEEP = 9  # encoded answers kept (each ~3 MB for a 22,000-function version, ~0.2 MB as cells)

_LOCK = threading.Lock()
_KEPT: OrderedDict[tuple, bytes] = OrderedDict()


def form_of(query: Query) -> str:
    """The ``form`` asked for (``list`` when absent); 400 when unknown."""
    form = one(query, "form") or "list"
    if form not in FORMS:
        raise HTTPError(400, f"unknown form {form!r}: use list or cells")
    return form


def costly(query: Query) -> bool:
    """Whether a request of the route takes an expensive slot: the whole list does."""
    return (one(query, "form") or "list") != "cells"


def cells_answer(conn: sqlite3.Connection, vid: int) -> dict[str, Any]:
    """The ``form=cells`` answer of version ``vid`` (see the module docstring)."""
    order = list(provenance.vocabulary()["order"])
    code = {p: i for i, p in enumerate(order)}
    unnamed = code.get("unnamed", len(order) - 1)
    cells = heatmap_cells(conn, vid)
    return {
        "version_id": vid,
        "count": len(cells.index),
        "provenances": order,
        "index": cells.index,
        "provenance": [unnamed if p is None else code.get(p, unnamed) for p in cells.provenance],
        "confidence": [c or 0 for c in cells.confidence],
        "coverage": queries.coverage(conn, vid),
    }


def _encode(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)


def functions(conn: sqlite3.Connection, params: dict[str, str], query: Query) -> Any:
    """The route's handler: the kept bytes (an ``orjson.Fragment``) when the KB has not
    changed since they were encoded, else the answer read, encoded and kept."""
    form = form_of(query)
    if form == "cells" and params["id"] == "latest":
        latest = latest_version_id(conn)
        if latest is None:
            raise UnknownVersionError("the KB has no versions yet (kbtool ingest app.wasm)")
        vid = latest
    else:
        vid = version_id(params["id"])
    if form == "cells":
        return _kept(conn, (vid, form), lambda: cells_answer(conn, vid))
    return _kept(conn, (vid, form), lambda: queries.list_functions(conn, vid))


def versions(conn: sqlite3.Connection, params: dict[str, str], query: Query) -> Any:
    """``/api/versions`` (with each version's coverage), kept encoded like the lists."""
    return _kept(conn, (0, "versions"), lambda: queries.list_versions(conn, with_coverage=True))


def _stamp(path: str) -> tuple:
    """The KB file's and its WAL's size and modification time: any write moves one of them
    (a change the token does not count, e.g. a version moved to another program)."""
    out: list[int] = []
    for name in (path, path + "-wal"):
        try:
            st = os.stat(name)
        except OSError:
            out += [0, 0]
        else:
            out += [st.st_size, st.st_mtime_ns]
    return tuple(out)


def _kept(conn: sqlite3.Connection, what: tuple, compute: Callable[[], Any]) -> orjson.Fragment:
    """``compute()`` encoded, or the bytes kept for ``what`` at the KB's change token."""
    path, token = file_and_change_token(conn)
    key = (path, *what, token, _stamp(path)) if path else None  # an in-memory KB: never kept
    if key is not None:
        with _LOCK:
            body = _KEPT.get(key)
            if body is not None:
                _KEPT.move_to_end(key)
                return orjson.Fragment(body)
    body = _encode(compute())
    if key is not None:
        with _LOCK:
            for old in [k for k in _KEPT if k[:-1] == key[:-1]]:  # an older token's answer
                del _KEPT[old]
            _KEPT[key] = body
            while len(_KEPT) > KEEP:
                _KEPT.popitem(last=False)
    return orjson.Fragment(body)


def warm(db_path: str, count: int = 2) -> int:
    """Encode and keep the cells and the whole list of the KB's ``count`` newest versions
    (``kbtool serve`` as it starts: the dashboard's first page then reads kept bytes);
    how many versions were kept. A KB that cannot be read keeps nothing (its requests say
    why)."""
    from kbtool.kb.db import open_ro

    try:
        conn = open_ro(db_path)
    except Exception:  # noqa: BLE001 - the server's own requests say why
        return 0
    try:
        versions(conn, {}, {})
        ids = [v["id"] for v in queries.list_versions(conn)][::-1][: max(0, count)]
        for vid in ids:
            for form in FORMS:
                functions(conn, {"id": str(vid)}, {"form": [form]})
        return len(ids)
    except Exception:  # noqa: BLE001
        return 0
    finally:
        conn.close()


def clear() -> None:
    """Forget every kept answer (tests)."""
    with _LOCK:
        _KEPT.clear()
