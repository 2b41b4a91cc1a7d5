"""The functions of a version: list entries, pages, facts, callers and callees."""

from __future__ import annotations

import json
import sqlite3
from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple, TypedDict

from kbtool.kb.errors import UnknownFunctionError
from kbtool.kb.queries._base import names_for, opcode_names, version_row
from kbtool.kb.queries.symbols import get_symbol

if TYPE_CHECKING:
    from kbtool.kb.queries.shapes import (
        FunctionAppearance,
        FunctionFacts,
        FunctionName,
        FunctionRecord,
        MemoryAccess,
    )


class FunctionEntry(TypedDict):
    index: int
    stable_id: str
    type: str | None
    name: str | None
    provenance: str | None
    confidence: float | None


def list_functions(
    conn: sqlite3.Connection, version_id: int, include_imports: bool = False
) -> list[FunctionEntry]:
    """Function list entries of a version in index order (imports only when asked)."""
    version_row(conn, version_id)
    sql = (
        "SELECT f.idx, f.stable_id, f.type_sig, s.name, s.provenance, s.confidence"
        " FROM functions f LEFT JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE f.version_id = ?"
        + ("" if include_imports else " AND f.imported = 0")
        + " ORDER BY f.idx"
    )
    return [
        {"index": i, "stable_id": sid, "type": t, "name": n, "provenance": p, "confidence": c}
        for i, sid, t, n, p, c in conn.execute(sql, (version_id,))
    ]


class HeatmapRow(NamedTuple):
    """One heatmap cell: a defined function with its current annotation."""

    index: int
    stable_id: str
    name: str | None
    provenance: str | None
    confidence: float | None
    body_size: int


def heatmap_rows(conn: sqlite3.Connection, version_id: int) -> list[HeatmapRow]:
    """Compact rows for heatmaps, one :class:`HeatmapRow` per defined function in index order."""
    version_row(conn, version_id)
    cur = conn.cursor()
    cur.row_factory = None  # plain tuples: no sqlite3.Row made for each of ~22,000 rows first
    cur.execute(
        "SELECT f.idx, f.stable_id, s.name, s.provenance, s.confidence, f.body_size"
        " FROM functions f LEFT JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE f.version_id = ? AND f.imported = 0 ORDER BY f.idx",
        (version_id,),
    )
    return list(map(HeatmapRow._make, cur))


def heatmap_row(conn: sqlite3.Connection, version_id: int, index: int) -> HeatmapRow | None:
    """The :class:`HeatmapRow` of one defined function (None: no such defined function)."""
    cur = conn.cursor()
    cur.row_factory = None
    row = cur.execute(
        "SELECT f.idx, f.stable_id, s.name, s.provenance, s.confidence, f.body_size"
        " FROM functions f LEFT JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE f.version_id = ? AND f.idx = ? AND f.imported = 0",
        (version_id, index),
    ).fetchone()
    return HeatmapRow._make(row) if row is not None else None


class HeatmapCells(NamedTuple):
    """A version's heatmap without a row per function: :func:`heatmap_cells`."""

    codes: bytes  # one cell code per defined function, in index order
    indices: Sequence[int]  # the functions' indices, in order (a range when contiguous)
    named: int  # defined functions with a name
    named_by_slot: tuple[int, ...]  # ... and with each named slot's provenance


_CODE_BASE = 48  # a code travels as the character of this plus the code (printable ASCII)


def _code_sql(slots: Sequence[str | None], buckets: int) -> str:
    """SQL of ``slot * buckets + bucket`` for one row (``p``: provenance, ``c``: confidence),
    equal to :func:`kbtool.tui.widgets.heatmap.cell_code`: an unknown provenance, no
    provenance or no confidence is the unnamed slot's last bucket; the bucket is
    ``round(c * (buckets - 1))`` (Python's: half to even) clamped to the buckets. ``t - CAST(t
    AS INTEGER)`` is exact for 0 < t < buckets, so a half is seen exactly as Python sees it."""
    unnamed = slots.index(None) * buckets + buckets - 1
    top = buckets - 1
    whens = " ".join(f"WHEN '{p}' THEN {i * buckets}" for i, p in enumerate(slots) if p is not None)
    t = f"(c * {top})"
    i = f"CAST({t} AS INTEGER)"
    bucket = (
        f"CASE WHEN {t} <= 0 THEN 0 WHEN {t} >= {top} THEN {top}"
        f" ELSE {i} + ({t} - {i} > 0.5) + ({t} - {i} = 0.5 AND {i} % 2 = 1) END"
    )
    return (
        f"CASE WHEN c IS NULL THEN {unnamed} ELSE"
        f" COALESCE(CASE p {whens} END + {bucket}, {unnamed}) END"
    )


def heatmap_cells(
    conn: sqlite3.Connection, version_id: int, slots: Sequence[str | None], buckets: int
) -> HeatmapCells:
    """The heatmap of a version in one aggregate row: each defined function's cell code
    (``slots``: the provenances in code order, None the unnamed one; ``buckets``: confidence
    buckets), worked out by SQLite (no Python object per function: the start of ``kbtool
    tui`` read ~22,000 :class:`HeatmapRow` on ffmpeg only to make these), the indices (a
    range when contiguous, as a module's defined functions are) and the named counts of
    ``queries.coverage``."""
    version_row(conn, version_id)
    named = [p for p in slots if p is not None]
    sums = "".join(f", count(CASE WHEN p = '{p}' THEN name END)" for p in named)
    cur = conn.cursor()
    cur.row_factory = None
    # the ordered subquery is not flattened into an aggregate (SQLite's flattener, rule 16):
    # group_concat sees the rows in index order (the tests compare with heatmap_rows')
    n, lo, hi, n_named, *by_slot, text = cur.execute(
        f"SELECT count(*), min(idx), max(idx), count(name){sums},"
        f" group_concat(char({_CODE_BASE} + {_code_sql(slots, buckets)}), '') FROM ("
        "SELECT f.idx AS idx, s.name AS name, s.provenance AS p, s.confidence AS c"
        " FROM functions f LEFT JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE f.version_id = ? AND f.imported = 0 ORDER BY f.idx)",
        (version_id,),
    ).fetchone()
    codes = (text or "").encode("ascii").translate(_FROM_CODE_CHARS)
    indices: Sequence[int]
    if n and hi - lo + 1 == n:
        indices = range(lo, hi + 1)
    else:
        cur.execute(
            "SELECT idx FROM functions WHERE version_id = ? AND imported = 0 ORDER BY idx",
            (version_id,),
        )
        indices = [r[0] for r in cur]
    return HeatmapCells(codes, indices, n_named, tuple(by_slot))


_FROM_CODE_CHARS = bytes((b - _CODE_BASE) % 256 for b in range(256))


def _function_row(conn: sqlite3.Connection, version_id: int, index: int) -> sqlite3.Row:
    version_row(conn, version_id)
    row = conn.execute(
        "SELECT * FROM functions WHERE version_id = ? AND idx = ?", (version_id, index)
    ).fetchone()
    if row is None:
        raise UnknownFunctionError(f"version {version_id} has no function {index}")
    return row


def get_function(conn: sqlite3.Connection, version_id: int, index: int) -> FunctionRecord:
    """One function of a version with its identity, binary names and annotation."""
    row = _function_row(conn, version_id, index)
    return _function_dict(conn, row)


def _function_dict(conn: sqlite3.Connection, row: sqlite3.Row) -> FunctionRecord:
    sym = get_symbol(conn, row["stable_id"])
    return {
        "version_id": row["version_id"],
        "index": row["idx"],
        "stable_id": row["stable_id"],
        "imported": bool(row["imported"]),
        "import_module": row["import_module"],
        "import_field": row["import_field"],
        "type": row["type_sig"],
        "raw_name": row["raw_name"],
        "export_names": json.loads(row["export_names"] or "[]"),
        "is_exported": bool(row["is_exported"]),
        "body_size": row["body_size"],
        "instr_count": row["instr_count"],
        "body_hash": row["body_hash"],
        "shape_hash": row["shape_hash"],
        "body_changed": bool(row["body_changed"]),
        "match_method": row["match_method"],
        "match_score": row["match_score"],
        "prev_index": row["prev_index"],
        "name": sym["name"] if sym else None,
        "provenance": sym["provenance"] if sym else None,
        "confidence": sym["confidence"] if sym else None,
        "symbol": sym,
    }


def functions_by_stable_id(conn: sqlite3.Connection, stable_id: str) -> list[FunctionAppearance]:
    """Where a logical function appears: one row per version, oldest first."""
    return [
        {
            "version_id": v,
            "label": lab,
            "index": i,
            "body_changed": bool(bc),
            "match_method": mm,
            "match_score": ms,
        }
        for v, lab, i, bc, mm, ms in conn.execute(
            "SELECT f.version_id, v.label, f.idx, f.body_changed, f.match_method, f.match_score"
            " FROM functions f JOIN versions v ON v.id = f.version_id"
            " WHERE f.stable_id = ? ORDER BY f.version_id",
            (stable_id,),
        )
    ]


def callees(conn: sqlite3.Connection, version_id: int, index: int) -> list[FunctionName]:
    """Distinct direct callees of a function, in index order, with their names (its call
    edges are the distinct values of its ``facts.calls``: schema 13 keys ``call_edges`` by
    callee)."""
    _function_row(conn, version_id, index)
    row = conn.execute(
        "SELECT calls FROM facts WHERE version_id = ? AND idx = ?", (version_id, index)
    ).fetchone()
    idx = sorted(set(json.loads(row[0]))) if row else []
    names = names_for(conn, version_id, idx)
    return [names[i] for i in idx if i in names]


def callers(conn: sqlite3.Connection, version_id: int, index: int) -> list[FunctionName]:
    """Distinct direct callers of a function, in index order, with their names."""
    _function_row(conn, version_id, index)
    idx = [
        r[0]
        for r in conn.execute(
            "SELECT caller FROM call_edges WHERE version_id = ? AND callee = ? ORDER BY caller",
            (version_id, index),
        )
    ]
    names = names_for(conn, version_id, idx)
    return [names[i] for i in idx if i in names]


def get_function_facts(
    conn: sqlite3.Connection, version_id: int, func_index: int
) -> FunctionFacts | None:
    """The Function facts of docs/interface.md, or None when the function is missing or imported.

    Beyond those fields: ``callees`` (defined callees with names), ``strings``
    alias-free extras such as ``globals_used``, ``mem_ops``, ``loops``, ``atomic_sites``,
    ``body_size``, ``instr_count``, ``export_names``.
    """
    version_row(conn, version_id)
    row = conn.execute(
        "SELECT f.*, x.calls, x.call_indirect, x.consts, x.strings, x.globals_used, x.mem_ops,"
        " x.atomic_sites, x.loops, x.ops FROM functions f JOIN facts x"
        " ON x.version_id = f.version_id AND x.idx = f.idx"
        " WHERE f.version_id = ? AND f.idx = ?",
        (version_id, func_index),
    ).fetchone()
    if row is None or row["imported"]:
        return None

    calls = json.loads(row["calls"])
    distinct = list(dict.fromkeys(calls))
    names = names_for(conn, version_id, distinct)
    targets = [names[c]["import"] for c in distinct if c in names and names[c]["imported"]]
    targets += ["<indirect>"] * row["call_indirect"]
    ops = array("H")
    ops.frombytes(row["ops"])
    mnemonics = opcode_names()
    mem_ops: list[MemoryAccess] = [
        {"op": mnemonics[op], "offset": off, "width": width}
        for op, off, width in json.loads(row["mem_ops"])
    ]
    return {
        "func_index": row["idx"],
        "stable_id": row["stable_id"],
        "type_signature": row["type_sig"],
        "call_targets": targets,
        "referenced_strings": json.loads(row["strings"]),
        "raw_name": row["raw_name"],
        "instruction_mnemonics": [mnemonics[o] for o in ops],
        "is_exported": bool(row["is_exported"]),
        "export_names": json.loads(row["export_names"] or "[]"),
        "callees": [names[c] for c in distinct if c in names and not names[c]["imported"]],
        "indirect_call_sites": row["call_indirect"],
        "constants": json.loads(row["consts"]),
        "globals_used": json.loads(row["globals_used"]),
        "memory_accesses": mem_ops,
        "atomic_sites": row["atomic_sites"],
        "loops": row["loops"],
        "body_size": row["body_size"],
        "instr_count": row["instr_count"],
    }


def function_names(conn: sqlite3.Connection, version_id: int) -> dict[int, str]:
    """index -> the best name the KB has for each function of a version: the annotation,
    else the import field, else the name-section hint.

    The choice is SQLite's (``name or (field if imported else None) or raw``, an empty text
    no name), so only the functions that have a name come back: ffmpeg's 22k rows, 85 of them
    named, 15 -> 4 ms (a later ingest's data model asks it after the matcher)."""
    return {
        idx: best
        for idx, best in conn.execute(
            "SELECT idx, best FROM (SELECT f.idx AS idx, COALESCE(NULLIF(s.name, ''),"
            " CASE WHEN f.imported THEN NULLIF(f.import_field, '') END, NULLIF(f.raw_name, ''))"
            " AS best FROM functions f LEFT JOIN symbols s ON s.stable_id = f.stable_id"
            " WHERE f.version_id = ?) WHERE best IS NOT NULL",
            (version_id,),
        )
    }


def function_list_window(
    conn: sqlite3.Connection,
    version_id: int,
    include_imports: bool,
    offset: int,
    count: int,
    unnamed_only: bool = False,
) -> tuple[int, list[FunctionEntry]]:
    """``(total, rows)``: how many function list entries match, and ``count`` of them from
    ``offset`` in index order (the same rows as :func:`list_functions`, filtered to unnamed
    ones when asked). A page of a 50,000-function version without reading all of it."""
    version_row(conn, version_id)
    where = " WHERE f.version_id = ?" + ("" if include_imports else " AND f.imported = 0")
    join = " FROM functions f LEFT JOIN symbols s ON s.stable_id = f.stable_id"
    if unnamed_only:
        where += " AND s.name IS NULL"
    total = conn.execute("SELECT COUNT(*)" + join + where, (version_id,)).fetchone()[0]
    rows = [
        {"index": i, "stable_id": sid, "type": t, "name": n, "provenance": p, "confidence": c}
        for i, sid, t, n, p, c in conn.execute(
            "SELECT f.idx, f.stable_id, f.type_sig, s.name, s.provenance, s.confidence"
            + join
            + where
            + " ORDER BY f.idx LIMIT ? OFFSET ?",
            (version_id, max(0, count), max(0, offset)),
        )
    ]
    return total, rows
