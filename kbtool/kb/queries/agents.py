"""Agent pass input, suggestions and the agents' answers."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import orjson

from kbtool.kb.queries._base import version_row
from kbtool.kb.queries.shapes import (
    AgentAnswer,
    AgentAnswerCounts,
    AgentRow,
    MemOp,
    Suggestion,
    SuggestionPage,
)
from kbtool.kb.queries.versions import get_version


def agent_rows(conn: sqlite3.Connection, version_id: int) -> list[AgentRow]:
    """Every function of a version (imports included) in index order, with the stored facts an
    agent context needs and the current annotation (``symbol``: name, provenance, confidence,
    locked; None when unnamed)."""

    version_row(conn, version_id)
    loads = orjson.loads
    out: list[AgentRow] = []
    for r in conn.execute(
        "SELECT f.idx, f.stable_id, f.imported, f.import_module, f.import_field, f.type_sig,"
        " f.export_names, f.instr_count, x.calls, x.call_indirect, x.consts, x.strings,"
        " x.globals_used, x.mem_ops, x.loops, x.ops, s.name, s.provenance, s.confidence, s.locked"
        " FROM functions f JOIN facts x ON x.version_id = f.version_id AND x.idx = f.idx"
        " LEFT JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE f.version_id = ? ORDER BY f.idx",
        (version_id,),
    ):
        out.append(
            {
                "index": r[0],
                "stable_id": r[1],
                "imported": bool(r[2]),
                "import_module": r[3],
                "import_field": r[4],
                "type_sig": r[5],
                "export_names": loads(r[6] or "[]"),
                "instr_count": r[7],
                "calls": loads(r[8]),
                "call_indirect": r[9],
                "consts": loads(r[10]),
                "strings": loads(r[11]),
                "globals_used": loads(r[12]),
                "mem_ops": [MemOp(*m) for m in loads(r[13])],
                "loops": r[14],
                "ops": r[15],
                "symbol": None
                if r[16] is None
                else {
                    "name": r[16],
                    "provenance": r[17],
                    "confidence": r[18],
                    "locked": bool(r[19]),
                },
            }
        )
    return out


SUGGESTION_PAGE = 500  # hard cap of one page of suggestions


def _suggestion(r: sqlite3.Row) -> Suggestion:
    return {
        "version_id": r["version_id"],
        "stable_id": r["stable_id"],
        "index": r["func_index"],
        "name": r["name"],
        "confidence": r["confidence"],
        "backend": r["backend"],
        "model": r["model"],
        "rule": r["rule"],
        "source": r["source"],
        "evidence": json.loads(r["evidence"] or "{}"),
        "status": r["status"],
        "created_at": r["created_at"],
        "decided_at": r["decided_at"],
        "current": (
            {
                "name": r["cur_name"],
                "provenance": r["cur_prov"],
                "confidence": r["cur_conf"],
                "locked": bool(r["cur_locked"]),
            }
            if r["cur_name"] is not None
            else None
        ),
    }


_SUGGESTION_SELECT = (
    "SELECT s.*, y.name AS cur_name, y.provenance AS cur_prov, y.confidence AS cur_conf, "
    "y.locked AS cur_locked FROM suggestions s LEFT JOIN symbols y ON y.stable_id = s.stable_id "
)


def suggestions(
    conn: sqlite3.Connection,
    version_id: int,
    *,
    status: str | None = "open",
    min_confidence: float | None = None,
    offset: int = 0,
    limit: int = 100,
) -> SuggestionPage:
    """A version's agent suggestions (names kept below the write floor), highest confidence
    first: ``{version_id, total, offset, limit, items}`` (``status`` None: all of them).
    Each item carries the function's ``current`` annotation (or None). Unknown version:
    :class:`UnknownVersionError`."""
    get_version(conn, version_id)
    limit = max(0, min(int(limit), SUGGESTION_PAGE))
    offset = max(0, int(offset))
    where, args = ["s.version_id = ?"], [version_id]
    if status is not None:
        where.append("s.status = ?")
        args.append(status)
    if min_confidence is not None:
        where.append("s.confidence >= ?")
        args.append(float(min_confidence))
    cond = " AND ".join(where)
    total = conn.execute(f"SELECT COUNT(*) FROM suggestions s WHERE {cond}", args).fetchone()[0]
    rows = conn.execute(
        _SUGGESTION_SELECT + f"WHERE {cond} ORDER BY s.confidence DESC, s.func_index "
        "LIMIT ? OFFSET ?",
        [*args, limit, offset],
    ).fetchall()
    return {
        "version_id": version_id,
        "total": total,
        "offset": offset,
        "limit": limit,
        "items": [_suggestion(r) for r in rows],
    }


def open_suggestion(
    conn: sqlite3.Connection, stable_id: str, version_id: int | None = None
) -> Suggestion | None:
    """The open suggestion for ``stable_id`` (in ``version_id``, else in its newest version)."""
    sql = _SUGGESTION_SELECT + "WHERE s.stable_id = ? AND s.status = 'open'"
    args: list[Any] = [stable_id]
    if version_id is not None:
        sql += " AND s.version_id = ?"
        args.append(version_id)
    row = conn.execute(sql + " ORDER BY s.version_id DESC LIMIT 1", args).fetchone()
    return _suggestion(row) if row else None


def agent_answer(
    conn: sqlite3.Connection, backend: str, model: str | None, prompt_hash: str
) -> AgentAnswer | None:
    """The stored provider answer to one prompt (``text``, ``tokens_in``, ``tokens_out``), or
    None."""
    row = conn.execute(
        "SELECT answer, tokens_in, tokens_out FROM agent_answers"
        " WHERE backend = ? AND model = ? AND prompt_hash = ?",
        (backend, model or "", prompt_hash),
    ).fetchone()
    if row is None:
        return None
    return {"text": row[0], "tokens_in": row[1], "tokens_out": row[2]}


def agent_model_usage(
    conn: sqlite3.Connection, backend: str, model: str | None
) -> AgentAnswerCounts:
    """Answers one backend and model gave in this KB (any version) with billed token counts,
    and the tokens they cost (what an answer of that model costs, before a new pass)."""
    n, tin, tout = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(tokens_in), 0), COALESCE(SUM(tokens_out), 0)"
        " FROM agent_answers WHERE backend = ? AND model = ? AND tokens_in IS NOT NULL"
        " AND tokens_out IS NOT NULL",
        (backend, model or ""),
    ).fetchone()
    return {"answers": n, "tokens_in": tin, "tokens_out": tout}


def agent_answer_counts(conn: sqlite3.Connection, version_id: int) -> AgentAnswerCounts:
    """Answers stored for a version's prompts and the provider tokens they cost."""
    n, tin, tout = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(tokens_in), 0), COALESCE(SUM(tokens_out), 0)"
        " FROM agent_answers WHERE version_id = ?",
        (version_id,),
    ).fetchone()
    return {"answers": n, "tokens_in": tin, "tokens_out": tout}
