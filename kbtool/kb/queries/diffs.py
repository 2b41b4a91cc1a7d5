"""Stored diff reports and the input of the matcher (identities, hashes, memory ops)."""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING, Any

import orjson

from kbtool.kb.queries._base import version_row

if TYPE_CHECKING:
    from kbtool.kb.queries.shapes import IdentityRow, MatchingRow, MemOp, StoredDiffReport


def function_identities(conn: sqlite3.Connection, version_id: int) -> list[IdentityRow]:
    """Every function of a version in index order, imports included, with its name."""
    from kbtool.kb.queries.shapes import IdentityRow

    version_row(conn, version_id)
    return [
        IdentityRow(idx, sid, bool(imported), mod, fld, name, prov)
        for idx, sid, imported, mod, fld, name, prov in conn.execute(
            "SELECT f.idx, f.stable_id, f.imported, f.import_module, f.import_field, s.name,"
            " s.provenance FROM functions f LEFT JOIN symbols s ON s.stable_id = f.stable_id"
            " WHERE f.version_id = ? ORDER BY f.idx",
            (version_id,),
        )
    ]


def stored_diff_report(
    conn: sqlite3.Connection, from_version_id: int, to_version_id: int
) -> StoredDiffReport | None:
    """The diff report saved for the pair (``kbtool diff A B --save``, and ingest for each
    (parent, new) pair), or None."""
    row = conn.execute(
        "SELECT report FROM diffs WHERE from_version_id = ? AND to_version_id = ?",
        (from_version_id, to_version_id),
    ).fetchone()
    return json.loads(row[0]) if row else None


def mem_ops_for(
    conn: sqlite3.Connection, version_id: int, indices: list[int]
) -> dict[int, list[MemOp]]:
    """index -> memory accesses ``(op, offset, width)`` of some functions of a version."""
    from kbtool.kb.queries.shapes import MemOp

    out: dict[int, list[MemOp]] = {}
    for k in range(0, len(indices), 500):
        chunk = indices[k : k + 500]
        for idx, mem in conn.execute(
            f"SELECT idx, mem_ops FROM facts WHERE version_id = ? AND idx IN ({','.join('?' * len(chunk))})",
            (version_id, *chunk),
        ):
            out[idx] = [MemOp(*m) for m in json.loads(mem)]
    return out


def mem_offsets_for(
    conn: sqlite3.Connection, version_id: int, indices: list[int]
) -> dict[int, list[list[int]]]:
    """index -> ``[op, offset, width]`` of each memory access of some functions of a
    version, in body order (the stored ``mem_ops`` facts as JSON gives them, by orjson:
    what the diff's layout check reads)."""
    return {i: _loads(t) for i, t in mem_ops_json_for(conn, version_id, indices).items()}


def mem_ops_json_for(
    conn: sqlite3.Connection, version_id: int, indices: list[int]
) -> dict[int, str]:
    """index -> the stored ``mem_ops`` facts of some functions of a version as their JSON
    text, unparsed: two equal texts are equal accesses (the diff's layout check compares
    them first and parses only those that differ, :func:`parse_mem_ops`)."""
    out: dict[int, str] = {}
    for k in range(0, len(indices), 500):
        chunk = indices[k : k + 500]
        for idx, mem in conn.execute(
            f"SELECT idx, mem_ops FROM facts WHERE version_id = ? AND idx IN ({','.join('?' * len(chunk))})",
            (version_id, *chunk),
        ):
            out[idx] = mem
    return out


def mem_ops_json_all(conn: sqlite3.Connection, version_id: int) -> dict[int, str]:
    """index -> every function's stored ``mem_ops`` facts of a version as their JSON text
    (:func:`mem_ops_json_for` of all of them, in one scan)."""
    cur = conn.cursor()
    cur.row_factory = None  # (plain tuples: no row objects made)
    return dict(cur.execute("SELECT idx, mem_ops FROM facts WHERE version_id = ?", (version_id,)))


def parse_mem_ops(text: str) -> list[list[int]]:
    """One text of :func:`mem_ops_json_for` as :func:`mem_offsets_for` gives it."""
    return _loads(text)


#: the columns of a matcher row (:func:`matching_row` reads them in this order)
MATCHING_SELECT = (
    "SELECT f.idx, f.stable_id, f.imported, f.import_module, f.import_field, f.type_sig,"
    " f.body_hash, f.shape_hash, f.raw_name, f.export_names, f.body_size, f.instr_count,"
    " x.calls, x.strings, x.consts, x.ops, x.loops, x.call_indirect, x.table_slots"
    " FROM functions f JOIN facts x ON x.version_id = f.version_id AND x.idx = f.idx"
)


def _loads(text: str) -> Any:
    """``json.loads`` of a stored JSON list, by orjson (the same values, several times
    faster); what orjson refuses (a lone surrogate escape) goes to ``json.loads``."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def matching_row(r: tuple) -> MatchingRow:
    """One row of :data:`MATCHING_SELECT` as the matcher's dict."""
    return {
        "index": r[0],
        "stable_id": r[1],
        "imported": bool(r[2]),
        "import_name": f"{r[3]}.{r[4]}" if r[2] else None,
        "type_sig": r[5],
        "body_hash": r[6],
        "shape_hash": r[7],
        "raw_name": r[8],
        "export_names": _loads(r[9]) if r[9] else [],
        "body_size": r[10],
        "instr_count": r[11],
        "calls": _loads(r[12]),
        "strings": _loads(r[13]),
        "consts": _loads(r[14]),
        "ops": r[15],
        "loops": r[16],
        "call_indirect": r[17],
        "table_slots": _loads(r[18]) if r[18] else [],
    }


def matching_rows(conn: sqlite3.Connection, version_id: int) -> list[MatchingRow]:
    """Per-function rows the diff matcher needs (identity, hashes, names, facts).

    The rows :func:`matching_row` makes, in one comprehension with orjson called directly
    (no call per row or field: ffmpeg's 22.6k rows are a later ingest's first read of the
    parent, in this process and in the early match child); a text orjson refuses sends the
    whole version through :func:`matching_row` (the same rows)."""
    version_row(conn, version_id)
    sql, args = MATCHING_SELECT + " WHERE f.version_id = ? ORDER BY f.idx", (version_id,)
    cur = conn.cursor()
    cur.row_factory = None  # (plain tuples: no row objects made)
    loads = orjson.loads
    try:
        return [
            {
                "index": idx,
                "stable_id": sid,
                "imported": bool(imp),
                "import_name": f"{mod}.{fld}" if imp else None,
                "type_sig": sig,
                "body_hash": bh,
                "shape_hash": sh,
                "raw_name": raw,
                "export_names": loads(exp) if exp else [],
                "body_size": size,
                "instr_count": count,
                "calls": loads(calls),
                "strings": loads(strings),
                "consts": loads(consts),
                "ops": ops,
                "loops": loops,
                "call_indirect": ci,
                "table_slots": loads(slots) if slots else [],
            }
            for (
                idx, sid, imp, mod, fld, sig, bh, sh, raw, exp, size, count,
                calls, strings, consts, ops, loops, ci, slots,
            ) in cur.execute(sql, args)
        ]  # fmt: skip
    except orjson.JSONDecodeError:  # (a lone surrogate escape: json.loads reads it)
        return [matching_row(r) for r in cur.execute(sql, args)]


def stored_diff_stamp(
    conn: sqlite3.Connection, from_version_id: int, to_version_id: int
) -> tuple[str, int] | None:
    """``(created_at, size)`` of the stored report of a pair, or None: changes when a report is
    saved again or deleted (the in-process diff cache keys on it, and every kept answer of the
    pair and the diff screen's kept head with it).

    ``size`` is the report's length in bytes, read from the row's record header through a blob
    handle (SQLite's incremental I/O: the text itself is not read). ``length(report)`` counted
    the characters of the whole text (5.3 MB on ffmpeg, ~7 ms of the diff screen's open on the
    UI thread, issue 30); the report is JSON of ASCII but for non-ASCII names, so both sizes
    are the same number for it and kept answers keep their key. ``created_at`` is read
    with the rowid (it lies after the report in the row: SQLite walks the report's overflow
    pages without reading them)."""
    row = conn.execute(
        "SELECT rowid, created_at FROM diffs WHERE from_version_id = ? AND to_version_id = ?",
        (from_version_id, to_version_id),
    ).fetchone()
    if row is None:
        return None
    try:
        with conn.blobopen("diffs", "report", row[0], readonly=True) as blob:
            return (str(row[1]), len(blob))
    except sqlite3.Error:  # the row went meanwhile (another connection): one statement
        row = conn.execute(
            "SELECT created_at, length(CAST(report AS BLOB)) FROM diffs"
            " WHERE from_version_id = ? AND to_version_id = ?",
            (from_version_id, to_version_id),
        ).fetchone()
        return (str(row[0]), int(row[1])) if row else None
