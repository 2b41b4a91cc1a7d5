"""The studio's code routes: ``/api/disasm/{version_id}/{func_index}`` (with
``?kind=wasm|c&offset=&limit=``: a window of lines) and
``/api/callgraph/{version_id}`` (the Disassembly and Call graph objects of docs/interface.md).

Handlers have the router's shape ``(conn, params, query) -> JSON value`` and answer from
:mod:`kbtool.services.code` on the router's read-only connection. Unknown version, index
out of range, an import, or module bytes not stored: 404 ``{"error": ...}``; a malformed
int: 400.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from kbtool.kb.errors import ModuleBytesMissingError
from kbtool.services import code as code_service
from kbtool.services import code_first, knowledge

# imported by kbtool.web.router while it builds its route table (everything used is
# defined above that table)
from kbtool.web.http import HTTPError, Kept, Query, rule, version_id


def _func_index(text: str) -> int:
    return version_id(text, "function index")


def _disasm(conn: sqlite3.Connection, params: dict[str, str], query: Query) -> Any:
    """The Disassembly object; with ``kind`` (``wasm``/``c``), ``offset`` or ``limit`` a window
    of lines instead (``{kind, lines, offset, limit, total, next_offset}``): a huge function's
    first screen without its whole listing. The first window (offset 0) also carries
    ``stable_id`` and ``knowledge`` (as the Disassembly object), so a page needs no other call."""
    vid, idx = version_id(params["vid"]), _func_index(params["idx"])
    paged = any(query.get(k) for k in ("kind", "offset", "limit"))
    try:
        if paged:
            kind = (query.get("kind") or ["wasm"])[0]
            if kind not in ("wasm", "c"):
                raise HTTPError(400, f"kind must be wasm or c, not {kind[:20]!r}")
            offset = version_id((query.get("offset") or ["0"])[0], "offset")
            limit = version_id((query.get("limit") or ["200"])[0], "limit")
            # before the version is prepared: a first screen of disassembly from the kept
            # preparation, the function's body alone; a huge function's C from its kept C
            # (the same lines; None: prepare the version)
            first = (
                code_first.first_window(conn, vid, idx, offset, limit)
                if kind == "wasm"
                else code_first.first_c_window(conn, vid, idx, offset, limit)
            )
            if first is not None:
                out, sid = first
                if offset == 0:
                    out["stable_id"] = sid
                    out["knowledge"] = knowledge.function_knowledge(conn, sid, vid) if sid else None
                return out
            out = code_service.code_window(conn, vid, idx, kind=kind, offset=offset, limit=limit)
            if offset == 0:  # the first window also carries what the studio shows beside it
                sid = code_service.code_module(conn, vid).check(idx).stable_id
                out["stable_id"] = sid
                out["knowledge"] = knowledge.function_knowledge(conn, sid, vid) if sid else None
            return out
        # before the version is prepared: a huge function's whole answer from its kept
        # disassembly and C (None: prepare the version)
        whole = code_first.whole_function(conn, vid, idx)
        return whole if whole is not None else code_service.disassembly(conn, vid, idx)
    except ModuleBytesMissingError as exc:
        raise HTTPError(404, str(exc)) from None
    except code_service.CodeUnavailableError as exc:
        raise HTTPError(422, str(exc)) from None


def _callgraph(conn: sqlite3.Connection, params: dict[str, str], query: Query) -> Any:
    try:
        graph = code_service.callgraph(conn, version_id(params["vid"]))
    except ModuleBytesMissingError as exc:
        raise HTTPError(404, str(exc)) from None
    except code_service.CodeUnavailableError as exc:
        raise HTTPError(422, str(exc)) from None
    # the code module's graph: the same object until the KB changes (its bytes are kept)
    return Kept(graph, "callgraph", lambda: graph)


def _disasm_costly(query: Query) -> bool:
    """Whether a ``/api/disasm`` request computes: the whole Disassembly object, a window of
    C (the function is lifted) or of more than a first screen of disassembly do; a screen of
    disassembly anywhere does not (it decodes only its own instructions, after one
    decode-only pass over a huge body), so it never waits behind a lift or a call graph: it
    is what the studio shows, and scrolls, while a huge function's C is lifted."""
    if not any(query.get(k) for k in ("kind", "offset", "limit")):
        return True
    kind = (query.get("kind") or ["wasm"])[0]
    try:
        int((query.get("offset") or ["0"])[0])
        limit = int((query.get("limit") or ["200"])[0])
    except ValueError:  # the handler answers 400 at once
        return False
    return kind != "wasm" or limit > code_service.FIRST_SCREEN


ROUTES = [
    # bounded like the diff (a cold call parses the module, a call graph decodes every body)
    rule(r"/api/disasm/(?P<vid>[^/]+)/(?P<idx>[^/]+)", _disasm, expensive=_disasm_costly),
    rule(r"/api/callgraph/(?P<vid>[^/]+)", _callgraph, expensive=True),
]
