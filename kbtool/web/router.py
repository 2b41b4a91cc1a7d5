"""The pure router of the dashboard and its read-only JSON API.

``route(db_path, path, query) -> (status, content_type, body)`` is the single source of
truth for every HTTP answer: the Starlette app (:mod:`kbtool.web.app`) only adapts it and
adds the security headers. ``query`` maps a parameter name to the list of its values (what
``urllib.parse.parse_qs`` gives). ``body`` is ``bytes``.

Every API request opens a fresh read-only connection (``open_ro``: ``mode=ro`` URI plus
``PRAGMA query_only=ON``), answers through :mod:`kbtool.kb.queries` or
:func:`kbtool.services.diff.report.get_diff` semantics (through the in-process cache of
:mod:`kbtool.services.diff.cache`), and closes it. No route can write.

The page is a shell (``static/dashboard.html``) whose scripts and styles are served from a
fixed whitelist of package files at ``/static/<name>`` (``STATIC_FILES``; a name from the
request never reaches the file system) plus ``/static/provenance.css``, generated from
:mod:`kbtool.kb.provenance` like ``/api/provenance``. Routes marked ``expensive`` compute
(``/api/diff``, ``/api/changelog``); the app bounds how many of those run at once (:func:`is_expensive`).

Adding a route: write a handler ``(conn, params, query) -> JSON value`` and append one
``Route`` to ``ROUTES`` (the path pattern names its parameters and how they are checked).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Callable
from functools import cache, lru_cache
from importlib import resources
from typing import Any

import orjson

from kbtool.kb import provenance, queries
from kbtool.kb.db import open_ro
from kbtool.kb.errors import (
    KBError,
    KBLockedError,
    KBMissingError,
    UnknownFunctionError,
    UnknownStableIdError,
    UnknownVersionError,
)
from kbtool.services import nav
from kbtool.services.diff.cache import DIFF_CACHE
from kbtool.services.diff.changelog import ORDERS, reorder
from kbtool.services.diff.triage import order_changes
from kbtool.web import code_routes, data_routes, list_routes, types_routes
from kbtool.web.http import (
    MAX_SQLITE_INT,
    Handler,
    HTTPError,
    Kept,
    Query,
    Response,
    Route,
    clip,
    one,
    rule,
    stable_id,
    version_id,
)

__all__ = [
    "HTTPError",
    "MAX_SQLITE_INT",
    "Query",
    "Response",
    "Route",
    "ROUTES",
    "route",
    "stable_id",
    "version_id",
]

log = logging.getLogger("kbtool.web")

JSON = "application/json"
HTML = "text/html; charset=utf-8"
CSS = "text/css; charset=utf-8"
JS = "text/javascript; charset=utf-8"
ALLOWED_METHODS = ("GET", "HEAD")
SEARCH_LIMIT = 100  # the HTTP search cap (queries.SEARCH_CAP is the hard cap)
# stable ids are 16 hex digits when ingested; accept any short token of safe characters


# ---------------------------------------------------------------- encoding

ENCODER = "orjson"  # about 6x faster than json on the 50,000-row function list


def _encode(value: Any) -> bytes:
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:  # e.g. an integer beyond 64 bits: the stdlib encoder handles it
        pass
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode(
        "utf-8"
    )


def _json(status: int, value: Any) -> Response:
    return status, JSON, _kept_body(value) if isinstance(value, Kept) else _encode(value)


#: the last answers made from a cache's object (:class:`Kept`), encoded: a whole ffmpeg diff
#: (5.7 MB) or call graph (6.2 MB) is ~20-30 ms of orjson per request otherwise
_BODIES: dict[tuple[int, str], tuple[object, bytes]] = {}
_BODIES_KEPT = 4  # a diff in the report's order, triage (the dashboard), index; a call graph
_BODIES_LOCK = threading.Lock()


def _kept_body(kept: Kept) -> bytes:
    key = (id(kept.anchor), kept.tag)
    with _BODIES_LOCK:
        hit = _BODIES.get(key)
    if hit is not None and hit[0] is kept.anchor:
        return hit[1]
    body = _encode(kept.make())
    with _BODIES_LOCK:
        _BODIES.pop(key, None)
        while len(_BODIES) >= _BODIES_KEPT:
            _BODIES.pop(next(iter(_BODIES)))
        _BODIES[key] = (kept.anchor, body)
    return body


def error(status: int, message: str) -> Response:
    """The error shape of every route: ``{"error": message}``."""
    return _json(status, {"error": message})


# ---------------------------------------------------------------- static files

#: every file served under /static/: a fixed whitelist of package files (no path from the
#: request ever reaches the file system) and the generated provenance stylesheet
STATIC_FILES: dict[str, str] = {
    "dashboard.css": CSS,
    "dom.js": JS,
    "api.js": JS,
    "state.js": JS,
    "provenance.js": JS,
    "heatmap.js": JS,
    "diff.js": JS,
    "changelog.js": JS,
    "search.js": JS,
    "fnpanel.js": JS,
    "main.js": JS,
    "studio.js": JS,
    "studio-early.js": JS,
    "early.js": JS,
    "dashboard-early.js": JS,
    "studio.css": CSS,
    "code.js": JS,
    "graph.js": JS,
    "fndiff.js": JS,
    "data.js": JS,
    "types.js": JS,
}


@cache
def _package_file(name: str) -> bytes:
    return resources.files("kbtool.web").joinpath("static", name).read_bytes()


def dashboard_html() -> bytes:
    """The dashboard shell (package data ``kbtool/web/static/dashboard.html``)."""
    return _package_file("dashboard.html")


def studio_html() -> bytes:
    """The studio shell (package data ``kbtool/web/static/studio.html``)."""
    return _package_file("studio.html")


@lru_cache(maxsize=1)
def provenance_css() -> bytes:
    """``/static/provenance.css``: the colours of :mod:`kbtool.kb.provenance`."""
    return provenance.stylesheet().encode("utf-8")


def static_file(name: str) -> Response:
    """``/static/<name>``: a whitelisted package file, or 404."""
    if name == "provenance.css":
        return 200, CSS, provenance_css()
    ctype = STATIC_FILES.get(name)
    if ctype is None:
        return error(404, f"no static file {clip(name)!r}")
    return 200, ctype, _package_file(name)


# ---------------------------------------------------------------- parameters


# ---------------------------------------------------------------- handlers


def _coverage(conn: sqlite3.Connection, params: dict[str, str], query: Query) -> Any:
    return queries.coverage(conn, version_id(params["id"]))


def _provenance(conn: Any, params: dict[str, str], query: Query) -> Any:
    return provenance.vocabulary()


def _pair(conn: sqlite3.Connection, query: Query, route_path: str) -> tuple[int, int]:
    a, b = one(query, "from"), one(query, "to")
    missing = [n for n, v in (("from", a), ("to", b)) if v is None or v == ""]
    if missing:
        raise HTTPError(
            400, f"missing query parameter {' and '.join(missing)}: {route_path}?from=ID&to=ID"
        )
    assert a is not None and b is not None
    va, vb = version_id(a, "from version id"), version_id(b, "to version id")
    for v in (va, vb):  # 404 before any diff work, with the known ids in the message
        queries.get_version(conn, v)
    return va, vb


def _diff(conn: sqlite3.Connection, params: dict[str, str], query: Query) -> Any:
    """The Diff report (docs/interface.md): stored if saved, else computed (and kept in memory until
    the KB changes, :mod:`kbtool.services.diff.cache`). It names each side's program
    (``from_program``, ``to_program``) and carries a ``warning`` when they differ.
    ``order=triage`` (modified functions patch-like first, as ``ui diff``, the TUI and MCP
    ``get_diff``) or ``order=index``; without it, the report's own (index) order."""
    order = one(query, "order")
    if order not in (None, "", "triage", "index"):
        raise HTTPError(400, f"unknown order {order!r}: use triage or index")
    report = DIFF_CACHE.report(conn, *_pair(conn, query, "/api/diff"))
    # the same report object until the KB changes (a rename makes a new one): its bytes kept
    if not order:
        return Kept(report, "diff", lambda: report)
    return Kept(
        report,
        f"diff:{order}",
        lambda: {**report, "order": order, "changes": order_changes(report["changes"], order)},
    )


def _changelog(conn: sqlite3.Connection, params: dict[str, str], query: Query) -> Any:
    """The semantic changelog of the pair (what ``kbtool ui diff`` and the TUI print after the
    table): modified functions most changed first with their explanation lines (``items``)
    and, when unnamed, a ``hint``; new and deleted functions; imports added/removed; the
    programs of both sides and, across programs, the ``warning``. ``order=triage`` (default:
    patch-like first, each with ``triage`` and ``reasons``), ``index`` or ``weight``."""
    order = one(query, "order") or "triage"
    if order not in ORDERS:
        raise HTTPError(400, f"unknown order {order!r}: use one of {', '.join(ORDERS)}")
    return reorder(DIFF_CACHE.changelog(conn, *_pair(conn, query, "/api/changelog")), order)


def _search(conn: sqlite3.Connection, params: dict[str, str], query: Query) -> Any:
    """Name search (docs/interface.md); ``q=#1031`` (or ``q=2:1031``) the function at that index of
    the latest version (or ``version=``, name null when unnamed); ``string=``/``const=`` the
    functions referencing a string / using an integer constant (see docs/navigation.md)."""
    q, text, const = one(query, "q"), one(query, "string"), one(query, "const")
    for value in (q, text, const):
        if value and len(value) > 256:
            raise HTTPError(400, "search text longer than 256 characters")
    version = one(query, "version")
    vid = version_id(version) if version else None
    if text:
        return nav.by_string(conn, text, vid, limit=SEARCH_LIMIT)
    if const:
        try:
            value = nav.parse_const(const)
        except ValueError as exc:
            raise HTTPError(400, str(exc)) from None
        return nav.by_const(conn, value, vid, limit=SEARCH_LIMIT)
    if not q:
        return []
    if q.lstrip().startswith("#") or ":" in q:
        ref = nav.parse_ref(q)
        if ref is not None:
            hit = nav.function_at(
                conn, ref.index, ref.version_id if ref.version_id is not None else vid
            )
            return [hit] if hit is not None else []
    return queries.search_symbols(conn, q, limit=SEARCH_LIMIT)


def _symbol(conn: sqlite3.Connection, params: dict[str, str], query: Query) -> Any:
    sid = stable_id(params["sid"])
    sym = queries.get_symbol(conn, sid)
    if sym is None:
        if queries.stable_id_exists(conn, sid):
            raise HTTPError(404, f"function {sid} has no annotation (unnamed)")
        raise HTTPError(404, f"unknown stable_id {sid!r}")
    return sym


def _history(conn: sqlite3.Connection, params: dict[str, str], query: Query) -> Any:
    """The History of docs/interface.md, plus ``function``/``facts`` of one version for the detail panel.

    ``?version=ID`` picks that version (when the function appears in it); otherwise the
    latest version it appears in.
    """
    sid = stable_id(params["sid"])
    hist = queries.history(conn, sid)
    want = one(query, "version")
    appear = {v["version_id"]: v["index"] for v in hist["versions"]}
    vid = hist["versions"][-1]["version_id"]
    if want:
        w = version_id(want)
        if w in appear:
            vid = w
    hist["function"] = _function_summary(queries.get_function(conn, vid, appear[vid]))
    hist["facts"] = _facts_summary(queries.get_function_facts(conn, vid, appear[vid]))
    # `kbtool analyze` results for this function (empty until the version is analysed)
    hist["threads"] = queries.thread_facts(conn, vid, appear[vid])[:200]
    hist["structs"] = queries.structs_for_function(conn, vid, appear[vid])[:20]
    return hist


_FUNCTION_KEYS = (
    "version_id",
    "index",
    "stable_id",
    "imported",
    "import_module",
    "import_field",
    "type",
    "raw_name",
    "export_names",
    "is_exported",
    "body_size",
    "instr_count",
    "body_hash",
    "shape_hash",
    "body_changed",
    "match_method",
    "match_score",
    "prev_index",
)


def _analysis(conn: sqlite3.Connection, params: dict[str, str], query: Query) -> Any:
    """The deep-analysis record (``kbtool deep``) of one function; 404 when there is none."""
    sid = stable_id(params["sid"])
    rec = queries.get_analysis(conn, sid)
    if rec is None:
        if queries.stable_id_exists(conn, sid):
            raise HTTPError(
                404, f"no deep analysis of {sid} yet (run `kbtool deep VERSION -f INDEX`)"
            )
        raise HTTPError(404, f"unknown stable_id {sid!r}")
    return rec


def _renames(conn: sqlite3.Connection, params: dict[str, str], query: Query) -> Any:
    """The reversible rename trail of one function, newest first."""
    sid = stable_id(params["sid"])
    queries.require_stable_id(conn, sid)
    return queries.renames(conn, sid)


def _events(conn: sqlite3.Connection, params: dict[str, str], query: Query) -> Any:
    """The studio's feed: ``{last_id, events}`` after ``since`` (latest 50 without it)."""
    since = one(query, "since")
    limit = one(query, "limit")
    return queries.events_since(
        conn,
        version_id(since, "since (event id)") if since is not None else None,
        version_id(limit, "limit") if limit is not None else queries.EVENT_PAGE,
    )


def _function_summary(fn: dict[str, Any]) -> dict[str, Any]:
    return {k: fn.get(k) for k in _FUNCTION_KEYS}


def _facts_summary(facts: dict[str, Any] | None, top: int = 16) -> dict[str, Any] | None:
    """Facts without the full mnemonic stream (a histogram of the most used opcodes instead)."""
    if facts is None:
        return None
    out = {k: v for k, v in facts.items() if k not in ("instruction_mnemonics", "memory_accesses")}
    counts: dict[str, int] = {}
    for m in facts.get("instruction_mnemonics", ()):
        counts[m] = counts.get(m, 0) + 1
    out["top_mnemonics"] = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    out["memory_access_count"] = len(facts.get("memory_accesses", ()))
    out["constants"] = facts.get("constants", [])[:64]
    out["referenced_strings"] = facts.get("referenced_strings", [])[:64]
    return out


# ---------------------------------------------------------------- the table

# Path parameters match one segment ([^/]+) and are validated by the handler, so a
# malformed id is a 400 with a message rather than an unknown-route 404.
ROUTES: list[Route] = [
    rule(r"/api/versions", list_routes.versions),  # kept encoded per KB change
    # one row per function: tens of MB of objects on a 200,000-function module (kept encoded
    # per KB change); `?form=cells`: the heatmap's columns only (cheap)
    rule(
        r"/api/versions/(?P<id>[^/]+)/functions",
        list_routes.functions,
        expensive=list_routes.costly,
    ),
    rule(r"/api/versions/(?P<id>[^/]+)/coverage", _coverage),
    rule(r"/api/diff", _diff, expensive=True),
    rule(r"/api/changelog", _changelog, expensive=True),
    rule(r"/api/provenance", _provenance, needs_kb=False),
    rule(r"/api/search", _search),
    rule(r"/api/symbol/(?P<sid>[^/]+)", _symbol),
    rule(r"/api/history/(?P<sid>[^/]+)", _history),
    rule(r"/api/analysis/(?P<sid>[^/]+)", _analysis),
    rule(r"/api/renames/(?P<sid>[^/]+)", _renames),
    rule(r"/api/events", _events),
]

# the code routes (/api/disasm, /api/callgraph), the data model's (strings, globals, xrefs,
# memory: issue 26) and the KB's types (read-only: issue 27)
ROUTES += code_routes.ROUTES + data_routes.ROUTES + types_routes.ROUTES

PAGES: dict[str, Callable[[], bytes]] = {
    "/": dashboard_html,
    "/studio": studio_html,
}
STATIC_PREFIX = "/static/"


def is_expensive(path: str, query: Query | None = None) -> bool:
    """True when ``path`` (with ``query``) is a request that computes (the app bounds their
    concurrency); a cheap request of such a route (a first screen of disassembly) is not."""
    for r in ROUTES:
        if r.pattern.match(path):
            return r.costly(query or {})
    return False


def route(db_path: str, path: str, query: Query | None = None, method: str = "GET") -> Response:
    """Answer one request: ``(status, content_type, body)``; never raises, never writes."""
    query = query or {}
    try:
        if method.upper() not in ALLOWED_METHODS:
            return error(
                405, f"method {clip(method, 16)} not allowed: the API is read-only (GET, HEAD)"
            )
        page = PAGES.get(path)
        if page is not None:
            return 200, HTML, page()
        if path.startswith(STATIC_PREFIX):
            return static_file(path[len(STATIC_PREFIX) :])
        for r in ROUTES:
            m = r.pattern.match(path)
            if m is not None:
                if not r.needs_kb:
                    return _json(200, r.handler(None, m.groupdict(), query))
                return _answer(db_path, r.handler, m.groupdict(), query)
        return error(404, f"no route {clip(path)}")
    except Exception:  # pragma: no cover - defensive: never leak a traceback
        log.exception("internal error answering %s", path)
        return error(500, "internal error")


def _answer(db_path: str, handler: Handler, params: dict[str, str], query: Query) -> Response:
    conn: sqlite3.Connection | None = None
    try:
        conn = open_ro(db_path)
        return _json(200, handler(conn, params, query))
    except HTTPError as exc:
        return error(exc.status, exc.message)
    except (UnknownVersionError, UnknownStableIdError, UnknownFunctionError) as exc:
        return error(404, str(exc))
    except KBMissingError as exc:
        return error(503, str(exc))
    except KBLockedError as exc:
        return error(503, str(exc))
    except KBError as exc:
        return error(500, str(exc))
    except sqlite3.OperationalError as exc:
        log.warning("database error: %s", exc)
        return error(503, "the KB is busy or unreadable; try again")
    except Exception:
        log.exception("internal error")
        return error(500, "internal error")
    finally:
        if conn is not None:
            conn.close()
