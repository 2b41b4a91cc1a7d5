"""Search and navigation: names, strings, constants, cross-references."""

from __future__ import annotations

import json
import sqlite3
from typing import Any, cast

from kbtool.kb.queries._base import SEARCH_CAP, names_for, version_row
from kbtool.kb.queries.shapes import (
    CallTargetCount,
    FunctionName,
    JumpTarget,
    NavRow,
    NavStringRow,
    SearchResult,
)


def search_symbols(conn: sqlite3.Connection, query: str, limit: int = 50) -> list[SearchResult]:
    """Named symbols whose name contains ``query`` (case-insensitive), sorted by name, capped."""
    if not query:
        return []
    limit = max(0, min(int(limit), SEARCH_CAP))
    rows = conn.execute(
        "SELECT stable_id, name, provenance, confidence FROM symbols"
        " WHERE name IS NOT NULL AND instr(lower(name), lower(?)) > 0"
        " ORDER BY name COLLATE NOCASE, name, stable_id LIMIT ?",
        (query, limit),
    ).fetchall()
    return [{"stable_id": s, "name": n, "provenance": p, "confidence": c} for s, n, p, c in rows]


def find_functions(conn: sqlite3.Connection, text: str, limit: int = 20) -> list[JumpTarget]:
    """Jump targets for a palette: by stable_id prefix or name substring; latest version of each."""
    if not text:
        return []
    rows = conn.execute(
        "SELECT f.stable_id, MAX(f.version_id), s.name, s.provenance FROM functions f"
        " LEFT JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE f.stable_id LIKE ? || '%' OR (s.name IS NOT NULL AND instr(lower(s.name), lower(?)) > 0)"
        " GROUP BY f.stable_id ORDER BY s.name IS NULL, s.name COLLATE NOCASE, f.stable_id LIMIT ?",
        (text.replace("%", "").replace("_", ""), text, max(1, min(limit, SEARCH_CAP))),
    ).fetchall()
    out: list[JumpTarget] = []
    for sid, vid, name, prov in rows:
        idx = conn.execute(
            "SELECT idx FROM functions WHERE stable_id = ? AND version_id = ?", (sid, vid)
        ).fetchone()[0]
        out.append(
            {"stable_id": sid, "version_id": vid, "index": idx, "name": name, "provenance": prov}
        )
    return out


def call_target_counts(
    conn: sqlite3.Connection, version_id: int, func_index: int
) -> list[CallTargetCount]:
    """Call sites of a defined function grouped by target, most called first:
    [{target, index, count}] (import ``module.field``, a defined callee's name or
    ``func[N]``, and ``<indirect>`` with index null); [] for a missing function."""
    version_row(conn, version_id)
    row = conn.execute(
        "SELECT calls, call_indirect FROM facts WHERE version_id = ? AND idx = ?",
        (version_id, func_index),
    ).fetchone()
    if row is None:
        return []
    counts: dict[int, int] = {}
    for callee in json.loads(row[0]):
        counts[callee] = counts.get(callee, 0) + 1
    names = names_for(conn, version_id, list(counts))
    out: list[CallTargetCount] = []
    for callee, n in counts.items():
        entry: dict[str, Any] = dict(names.get(callee, {}))
        target = entry.get("import") or entry.get("name") or f"func[{callee}]"
        out.append({"target": target, "index": callee, "count": n})
    if row[1]:
        out.append({"target": "<indirect>", "index": None, "count": row[1]})
    out.sort(key=lambda e: (-e["count"], e["target"]))
    return out


def version_strings(conn: sqlite3.Connection, version_id: int) -> dict[str, list[int]]:
    """Every string a function of the version references -> the referencing function
    indices (index order), strings in first-reference order."""
    version_row(conn, version_id)
    out: dict[str, list[int]] = {}
    for idx, strings in conn.execute(
        "SELECT idx, strings FROM facts WHERE version_id = ? AND strings != '[]' ORDER BY idx",
        (version_id,),
    ):
        for text in json.loads(strings):
            refs = out.setdefault(text, [])
            if not refs or refs[-1] != idx:
                refs.append(idx)
    return out


def functions_matching_facts(
    conn: sqlite3.Connection,
    version_id: int,
    *,
    string: str | None = None,
    constant: int | None = None,
    calls: int | None = None,
) -> list[int]:
    """Indices of the defined functions whose facts reference a string containing ``string``
    (case-insensitive), use the constant ``constant`` and call function ``calls``
    directly (all the given criteria hold), in index order."""
    version_row(conn, version_id)
    needle = string.lower() if string is not None else None
    out: list[int] = []
    for idx, strings, consts, called in conn.execute(
        "SELECT idx, strings, consts, calls FROM facts WHERE version_id = ? ORDER BY idx",
        (version_id,),
    ):
        if needle is not None and not any(needle in s.lower() for s in json.loads(strings)):
            continue
        if constant is not None and constant not in json.loads(consts):
            continue
        if calls is not None and calls not in json.loads(called):
            continue
        out.append(idx)
    return out


def function_entries(
    conn: sqlite3.Connection, version_id: int, indices: list[int]
) -> list[FunctionName]:
    """``{index, stable_id, name, provenance, imported, import}`` of ``indices`` (input order)."""
    names = names_for(conn, version_id, list(indices))
    return [names[i] for i in indices if i in names]


def globals_usage(conn: sqlite3.Connection, version_id: int) -> dict[int, list[int]]:
    """Global index -> the defined functions (index order) whose facts use it."""
    version_row(conn, version_id)
    out: dict[int, list[int]] = {}
    for idx, used in conn.execute(
        "SELECT idx, globals_used FROM facts WHERE version_id = ? AND globals_used != '[]'"
        " ORDER BY idx",
        (version_id,),
    ):
        for g in json.loads(used):
            out.setdefault(g, []).append(idx)
    return out


_NAV_COLUMNS = "f.version_id, f.idx, f.stable_id, s.name, s.provenance, s.confidence"


def _nav_row(row: tuple) -> NavRow:
    vid, idx, sid, name, prov, conf = row
    return {
        "stable_id": sid,
        "name": name,
        "provenance": prov,
        "confidence": conf,
        "version_id": vid,
        "index": idx,
    }


def function_at_index(conn: sqlite3.Connection, version_id: int, index: int) -> NavRow | None:
    """A Search result (plus ``version_id``, ``index``) for function ``index`` of a version.

    ``name`` is None for an unnamed function; None when the version has no such index."""
    version_row(conn, version_id)
    row = conn.execute(
        f"SELECT {_NAV_COLUMNS} FROM functions f LEFT JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE f.version_id = ? AND f.idx = ?",
        (version_id, index),
    ).fetchone()
    return _nav_row(tuple(row)) if row is not None else None


def functions_with_string(
    conn: sqlite3.Connection, version_id: int, text: str, limit: int = 50
) -> list[NavStringRow]:
    """Functions of a version referencing a string that contains ``text`` (case-insensitive).

    Each row is a Search result plus ``version_id``, ``index`` and ``strings`` (the matching
    strings of that function), in index order, capped at ``SEARCH_CAP``."""
    version_row(conn, version_id)
    limit = max(1, min(int(limit), SEARCH_CAP))
    rows = conn.execute(
        f"SELECT {_NAV_COLUMNS}, x.strings FROM facts x"
        " JOIN functions f ON f.version_id = x.version_id AND f.idx = x.idx"
        " LEFT JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE x.version_id = ? AND x.strings != '[]' AND EXISTS ("
        "  SELECT 1 FROM json_each(x.strings) j WHERE instr(lower(j.value), lower(?)) > 0)"
        " ORDER BY f.idx LIMIT ?",
        (version_id, text, limit),
    ).fetchall()
    needle = text.lower()
    out: list[NavStringRow] = []
    for row in rows:
        item = cast(NavStringRow, _nav_row(tuple(row)[:6]))
        item["strings"] = [s for s in json.loads(row[6]) if needle in str(s).lower()]
        out.append(item)
    return out


def functions_with_const(
    conn: sqlite3.Connection, version_id: int, values: list[int], limit: int = 50
) -> list[NavRow]:
    """Functions of a version whose constants include any of ``values`` (equal spellings of one
    number, e.g. unsigned and two's complement), in index order, capped at ``SEARCH_CAP``."""
    version_row(conn, version_id)
    limit = max(1, min(int(limit), SEARCH_CAP))
    if not values:
        return []
    marks = ",".join("?" * len(values))
    rows = conn.execute(
        f"SELECT {_NAV_COLUMNS} FROM facts x"
        " JOIN functions f ON f.version_id = x.version_id AND f.idx = x.idx"
        " LEFT JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE x.version_id = ? AND EXISTS ("
        f"  SELECT 1 FROM json_each(x.consts) j WHERE j.value IN ({marks}))"
        " ORDER BY f.idx LIMIT ?",
        (version_id, *values, limit),
    ).fetchall()
    return [_nav_row(tuple(r)) for r in rows]


def functions_referencing_string(
    conn: sqlite3.Connection, version_id: int, text: str, limit: int = 50
) -> list[NavRow]:
    """Cross-references: functions of a version that reference exactly the string ``text``."""
    version_row(conn, version_id)
    limit = max(1, min(int(limit), SEARCH_CAP))
    rows = conn.execute(
        f"SELECT {_NAV_COLUMNS} FROM facts x"
        " JOIN functions f ON f.version_id = x.version_id AND f.idx = x.idx"
        " LEFT JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE x.version_id = ? AND x.strings != '[]' AND EXISTS ("
        "  SELECT 1 FROM json_each(x.strings) j WHERE j.value = ?)"
        " ORDER BY f.idx LIMIT ?",
        (version_id, text, limit),
    ).fetchall()
    return [_nav_row(tuple(r)) for r in rows]
