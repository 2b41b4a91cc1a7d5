"""Stored analysis: deep-analysis results, threads, recovered structs, analysis runs."""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING

from kbtool.kb.queries._base import version_row

if TYPE_CHECKING:
    from kbtool.kb.queries.shapes import Analysis, AnalysisResult, AnalysisRun, Struct, ThreadFact


def get_analysis(conn: sqlite3.Connection, stable_id: str) -> Analysis | None:
    """The deep-analysis record of a function (docs/interface.md: raw_c, clean_c, understanding,
    rename_map, status, confidence; plus stable_id, version_id, func_index, backend, model,
    updated_at), or None when ``kbtool deep`` has not run on it."""
    row = conn.execute("SELECT * FROM analyses WHERE stable_id = ?", (stable_id,)).fetchone()
    if row is None:
        return None
    return {
        "stable_id": row["stable_id"],
        "version_id": row["version_id"],
        "func_index": row["func_index"],
        "raw_c": row["raw_c"],
        "clean_c": row["clean_c"],
        "understanding": row["understanding"],
        "rename_map": json.loads(row["rename_map"] or "{}"),
        "status": row["status"],
        "confidence": row["confidence"],
        "backend": row["backend"],
        "model": row["model"],
        "updated_at": row["updated_at"],
    }


def deep_done(conn: sqlite3.Connection, version_id: int) -> set[int]:
    """Function indices of a version that already have a finished deep record."""
    return {
        r[0]
        for r in conn.execute(
            "SELECT func_index FROM analyses WHERE version_id = ? AND status = 'done'",
            (version_id,),
        )
    }


def module_bytes(conn: sqlite3.Connection, version_id: int) -> bytes | None:
    """The stored module bytes of a version (None when the KB holds none for it).

    Read through SQLite's incremental blob I/O (``modules.version_id`` is the rowid): the
    pages are copied once, into the bytes returned; a query assembled the whole value in a
    buffer of its own first (32 MB on ffmpeg: 0.030-0.043 s of CPU against 0.024-0.026,
    what a later release's report pays for its parent's view)."""
    version_row(conn, version_id)
    try:
        blob = conn.blobopen("modules", "data", version_id, readonly=True)
    except sqlite3.OperationalError:  # no module row for the version
        return None
    with blob:
        return blob.read()


def thread_facts(
    conn: sqlite3.Connection, version_id: int, func_index: int | None = None
) -> list[ThreadFact]:
    """The stored thread facts of a version (or of one function), in recorded order: one
    shape per ``kind`` (:data:`kbtool.kb.queries.shapes.ThreadFact`)."""
    version_row(conn, version_id)
    if func_index is None:
        rows = conn.execute(
            "SELECT payload FROM thread_facts WHERE version_id = ? ORDER BY seq", (version_id,)
        )
    else:
        rows = conn.execute(
            "SELECT payload FROM thread_facts WHERE version_id = ? AND func_index = ? ORDER BY seq",
            (version_id, func_index),
        )
    return [json.loads(r[0]) for r in rows]


def _struct(row: sqlite3.Row) -> Struct:
    return {
        "name": row["name"],
        "source_function": row["source_function"],
        "fields": json.loads(row["fields"]),
        "members": json.loads(row["members"]),
    }


def structs(conn: sqlite3.Connection, version_id: int) -> list[Struct]:
    """The recovered structs of a version: {name, source_function, fields, members},
    ordered by source function then name."""
    version_row(conn, version_id)
    return [
        _struct(r)
        for r in conn.execute(
            "SELECT name, source_function, fields, members FROM structs WHERE version_id = ?"
            " ORDER BY source_function, name",
            (version_id,),
        )
    ]


def structs_for_function(
    conn: sqlite3.Connection, version_id: int, func_index: int
) -> list[Struct]:
    """The structs of a version that one function accesses (it is among their members)."""
    version_row(conn, version_id)
    needle = f'"func_index":{int(func_index)},'  # compact JSON written by kb.store
    out: list[Struct] = []
    for r in conn.execute(
        "SELECT name, source_function, fields, members FROM structs"
        " WHERE version_id = ? AND instr(members, ?) > 0 ORDER BY source_function, name",
        (version_id, needle),
    ):
        s = _struct(r)
        if any(m.get("func_index") == func_index for m in s["members"]):
            s["bases"] = [m.get("base") for m in s["members"] if m.get("func_index") == func_index]
            out.append(s)
    return out


def last_analysis_run(
    conn: sqlite3.Connection, version_id: int, kind: str = "analyze"
) -> AnalysisRun | None:
    """The latest run record of ``kind`` for a version: {id, kind, summary, created_at}."""
    row = conn.execute(
        "SELECT id, kind, summary, created_at FROM analysis_runs WHERE version_id = ? AND kind = ?"
        " ORDER BY id DESC LIMIT 1",
        (version_id, kind),
    ).fetchone()
    if row is None:
        return None
    return {"id": row[0], "kind": row[1], "summary": json.loads(row[2]), "created_at": row[3]}


def analysis_result(conn: sqlite3.Connection, version_id: int) -> AnalysisResult:
    """The stored Analysis result of a version (the shape of docs/interface.md: ``thread_facts``,
    ``structs``) plus ``version_id``, ``analyzed`` and the last run's ``summary``."""
    run = last_analysis_run(conn, version_id)
    return {
        "version_id": version_id,
        "analyzed": run is not None,
        "thread_facts": thread_facts(conn, version_id),
        "structs": structs(conn, version_id),
        "summary": run["summary"] if run else None,
    }
