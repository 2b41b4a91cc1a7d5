"""The shared read-query layer: every surface (CLI, TUI, web, MCP, terminal views) reads here.

Functions take an open connection (read-only or not) and return plain dicts/lists shaped
like the contract's resources (Version, Function list entry, Coverage, Annotation record,
Search result, Function facts, History). Unknown ids raise the KB errors of
:mod:`kbtool.kb.errors`, each with a message that says how to find valid ids.
"""

from __future__ import annotations

import json
import sqlite3
from array import array
from typing import Any, TypedDict

import orjson

from kbtool.kb.errors import (
    UnknownFunctionError,
    UnknownStableIdError,
    UnknownVersionError,
)


def _mnemonics() -> list[str]:
    """The opcode table, imported on first use: importing ``kbtool.wasm`` loads the decoders,
    which a read that never shows an instruction (``kbtool mcp`` start-up) does not need."""
    from kbtool.wasm.opcodes import MNEMONICS

    return MNEMONICS


SEARCH_CAP = 200          # hard cap of any search, whatever the caller asks
LEGACY_PROGRAM = "legacy"  # the program of versions ingested before schema v2 (program_id NULL)


class Version(TypedDict, total=False):
    id: int
    label: str
    toolchain_version: str | None
    functions: int
    shared_memory: bool
    coverage_pct: float
    program: str               # extra fields beyond the contract's
    parent_version_id: int | None


class FunctionEntry(TypedDict):
    index: int
    stable_id: str
    type: str | None
    name: str | None
    provenance: str | None
    confidence: float | None


class Coverage(TypedDict):
    defined: int
    named: int
    coverage_pct: float
    oracle_named: int
    human_named: int
    agent_named: int
    export_named: int
    diff_carry_named: int


# ---------------------------------------------------------------- versions

def _version_row(conn: sqlite3.Connection, version_id: int) -> sqlite3.Row:
    row = conn.execute(_VERSION_SELECT + " WHERE v.id = ?", (version_id,)).fetchone()
    if row is None:
        raise UnknownVersionError(f"unknown version id {version_id}; {_known_versions(conn)}")
    return row


def _known_versions(conn: sqlite3.Connection) -> str:
    ids = [r[0] for r in conn.execute("SELECT id FROM versions ORDER BY id")]
    if not ids:
        return "the KB has no versions yet (run `kbtool ingest FILE --label L`)"
    shown = ", ".join(str(i) for i in ids[:20]) + (", ..." if len(ids) > 20 else "")
    return f"known version ids: {shown} (see `kbtool versions`)"


def version_exists(conn: sqlite3.Connection, version_id: int) -> bool:
    return conn.execute("SELECT 1 FROM versions WHERE id = ?", (version_id,)).fetchone() is not None


def _version(row: sqlite3.Row) -> Version:
    return {
        "id": row["id"],
        "label": row["label"],
        "toolchain_version": row["toolchain_version"],
        "functions": row["imported_functions"] + row["defined_functions"],
        "shared_memory": bool(row["shared_memory"]),
        "program": row["program"] or LEGACY_PROGRAM,
        "parent_version_id": row["parent_version_id"],
    }


_VERSION_SELECT = (
    "SELECT v.*, p.name AS program FROM versions v LEFT JOIN programs p ON p.id = v.program_id"
)


def list_versions(conn: sqlite3.Connection, *, with_coverage: bool = False) -> list[Version]:
    """Every version, oldest first; ``coverage_pct`` added for the HTTP surface."""
    rows = conn.execute(_VERSION_SELECT + " ORDER BY v.id").fetchall()
    out = [_version(r) for r in rows]
    if with_coverage:
        pct = _coverage_pcts(conn)
        for v in out:
            v["coverage_pct"] = pct.get(v["id"], 0.0)
    return out


def get_version(conn: sqlite3.Connection, version_id: int) -> Version:
    return _version(_version_row(conn, version_id))


def version_info(conn: sqlite3.Connection, version_id: int) -> dict[str, Any]:
    """Everything known about one version (Version fields plus counts, hashes, producers)."""
    row = _version_row(conn, version_id)
    info: dict[str, Any] = dict(_version(row))
    info.update(
        imported_functions=row["imported_functions"],
        defined_functions=row["defined_functions"],
        exported_functions=row["exported_functions"],
        instructions=row["instructions"],
        sha256=row["sha256"],
        size=row["size"],
        module_name=row["module_name"],
        producers=json.loads(row["producers"] or "{}"),
        target_features=json.loads(row["target_features"] or "[]"),
        source_path=row["source_path"],
        parent_version_id=row["parent_version_id"],
        carried=row["carried"],
        ingested_at=row["ingested_at"],
        lineage=json.loads(row["lineage"]) if row["lineage"] else None,
    )
    return info


# ---------------------------------------------------------------- lineages

def program_names(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM programs")}


def lineage_versions(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """``id``, ``label``, ``program`` (name; ``legacy`` when unset) and ``program_id`` of every version."""
    return [
        {"id": i, "label": lab, "program": name or LEGACY_PROGRAM, "program_id": pid}
        for i, lab, name, pid in conn.execute(
            "SELECT v.id, v.label, p.name, v.program_id FROM versions v"
            " LEFT JOIN programs p ON p.id = v.program_id ORDER BY v.id"
        )
    ]


def has_versions_without_program(conn: sqlite3.Connection) -> bool:
    return conn.execute(
        "SELECT 1 FROM versions WHERE program_id IS NULL LIMIT 1"
    ).fetchone() is not None


def hash_rows(conn: sqlite3.Connection, version_id: int) -> list[tuple[str | None, str | None, int]]:
    """``(body_hash, shape_hash, instr_count)`` of a version's defined functions."""
    return conn.execute(
        "SELECT body_hash, shape_hash, instr_count FROM functions"
        " WHERE version_id = ? AND imported = 0",
        (version_id,),
    ).fetchall()


def versions_with_sha256(conn: sqlite3.Connection, sha256: str) -> list[dict[str, Any]]:
    """Versions whose module bytes have this sha256 (``id``, ``label``), oldest first."""
    return [{"id": i, "label": lab} for i, lab in conn.execute(
        "SELECT id, label FROM versions WHERE sha256 = ? ORDER BY id", (sha256,))]


def label_exists(conn: sqlite3.Connection, label: str) -> bool:
    return conn.execute("SELECT 1 FROM versions WHERE label = ?", (label,)).fetchone() is not None


def oracle_label_exists(conn: sqlite3.Connection, label: str) -> bool:
    return conn.execute("SELECT 1 FROM oracle_modules WHERE label = ?", (label,)).fetchone() is not None


def list_oracles(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Reference modules (without their bytes), oldest first."""
    return [
        {"id": i, "label": lab, "sha256": sha, "size": size, "source_path": src, "created_at": at}
        for i, lab, sha, size, src, at in conn.execute(
            "SELECT id, label, sha256, size, source_path, created_at FROM oracle_modules ORDER BY id")
    ]


def oracle_modules(conn: sqlite3.Connection) -> list[tuple[int, str, bytes]]:
    """``(id, label, bytes)`` of every reference module, oldest first."""
    return [(i, lab, bytes(data)) for i, lab, data in
            conn.execute("SELECT id, label, data FROM oracle_modules ORDER BY id")]


def taken_stable_ids(conn: sqlite3.Connection) -> set[str]:
    """Every stable_id any version of the KB uses."""
    return {r[0] for r in conn.execute("SELECT DISTINCT stable_id FROM functions")}


def latest_version_id(conn: sqlite3.Connection) -> int | None:
    return conn.execute("SELECT MAX(id) FROM versions").fetchone()[0]


# ---------------------------------------------------------------- functions

def list_functions(
    conn: sqlite3.Connection, version_id: int, include_imports: bool = False
) -> list[FunctionEntry]:
    """Function list entries of a version in index order (imports only when asked)."""
    _version_row(conn, version_id)
    sql = (
        "SELECT f.idx, f.stable_id, f.type_sig, s.name, s.provenance, s.confidence"
        " FROM functions f LEFT JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE f.version_id = ?" + ("" if include_imports else " AND f.imported = 0") +
        " ORDER BY f.idx"
    )
    return [
        {"index": i, "stable_id": sid, "type": t, "name": n, "provenance": p, "confidence": c}
        for i, sid, t, n, p, c in conn.execute(sql, (version_id,))
    ]


def heatmap_rows(conn: sqlite3.Connection, version_id: int) -> list[tuple]:
    """Compact rows for heatmaps: (index, stable_id, name, provenance, confidence, body_size)."""
    _version_row(conn, version_id)
    return conn.execute(
        "SELECT f.idx, f.stable_id, s.name, s.provenance, s.confidence, f.body_size"
        " FROM functions f LEFT JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE f.version_id = ? AND f.imported = 0 ORDER BY f.idx",
        (version_id,),
    ).fetchall()


def _function_row(conn: sqlite3.Connection, version_id: int, index: int) -> sqlite3.Row:
    _version_row(conn, version_id)
    row = conn.execute(
        "SELECT * FROM functions WHERE version_id = ? AND idx = ?", (version_id, index)
    ).fetchone()
    if row is None:
        raise UnknownFunctionError(f"version {version_id} has no function {index}")
    return row


def get_function(conn: sqlite3.Connection, version_id: int, index: int) -> dict[str, Any]:
    """One function of a version with its identity, binary names and annotation."""
    row = _function_row(conn, version_id, index)
    return _function_dict(conn, row)


def _function_dict(conn: sqlite3.Connection, row: sqlite3.Row) -> dict[str, Any]:
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


def functions_by_stable_id(conn: sqlite3.Connection, stable_id: str) -> list[dict[str, Any]]:
    """Where a logical function appears: one row per version, oldest first."""
    return [
        {"version_id": v, "label": lab, "index": i, "body_changed": bool(bc),
         "match_method": mm, "match_score": ms}
        for v, lab, i, bc, mm, ms in conn.execute(
            "SELECT f.version_id, v.label, f.idx, f.body_changed, f.match_method, f.match_score"
            " FROM functions f JOIN versions v ON v.id = f.version_id"
            " WHERE f.stable_id = ? ORDER BY f.version_id",
            (stable_id,),
        )
    ]


def _names_for(conn: sqlite3.Connection, version_id: int, indices: list[int]) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    if not indices:
        return out
    for chunk_start in range(0, len(indices), 500):
        chunk = indices[chunk_start:chunk_start + 500]
        marks = ",".join("?" * len(chunk))
        for i, sid, imp, mod, fld, name, prov in conn.execute(
            "SELECT f.idx, f.stable_id, f.imported, f.import_module, f.import_field, s.name, s.provenance"
            " FROM functions f LEFT JOIN symbols s ON s.stable_id = f.stable_id"
            f" WHERE f.version_id = ? AND f.idx IN ({marks})",
            (version_id, *chunk),
        ):
            out[i] = {"index": i, "stable_id": sid, "imported": bool(imp),
                      "import": f"{mod}.{fld}" if imp else None, "name": name, "provenance": prov}
    return out


def callees(conn: sqlite3.Connection, version_id: int, index: int) -> list[dict[str, Any]]:
    """Distinct direct callees of a function, in index order, with their names."""
    _function_row(conn, version_id, index)
    idx = [r[0] for r in conn.execute(
        "SELECT callee FROM call_edges WHERE version_id = ? AND caller = ? ORDER BY callee",
        (version_id, index))]
    names = _names_for(conn, version_id, idx)
    return [names[i] for i in idx if i in names]


def callers(conn: sqlite3.Connection, version_id: int, index: int) -> list[dict[str, Any]]:
    """Distinct direct callers of a function, in index order, with their names."""
    _function_row(conn, version_id, index)
    idx = [r[0] for r in conn.execute(
        "SELECT caller FROM call_edges WHERE version_id = ? AND callee = ? ORDER BY caller",
        (version_id, index))]
    names = _names_for(conn, version_id, idx)
    return [names[i] for i in idx if i in names]


def get_function_facts(conn: sqlite3.Connection, version_id: int, func_index: int) -> dict[str, Any] | None:
    """The contract's Function facts, or None when the function is missing or imported.

    Beyond the contract's fields: ``callees`` (defined callees with names), ``strings``
    alias-free extras such as ``globals_used``, ``mem_ops``, ``loops``, ``atomic_sites``,
    ``body_size``, ``instr_count``, ``export_names``.
    """
    _version_row(conn, version_id)
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
    names = _names_for(conn, version_id, distinct)
    targets = [names[c]["import"] for c in distinct if c in names and names[c]["imported"]]
    targets += ["<indirect>"] * row["call_indirect"]
    ops = array("H")
    ops.frombytes(row["ops"])
    mnemonics = _mnemonics()
    mem_ops = [
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


# ---------------------------------------------------------------- coverage

def coverage(conn: sqlite3.Connection, version_id: int) -> Coverage:
    """Named share of a version's defined functions, split by provenance (sums to ``named``)."""
    _version_row(conn, version_id)
    # one scan: unnamed functions group under provenance NULL
    split = dict(conn.execute(
        "SELECT CASE WHEN s.name IS NULL THEN NULL ELSE s.provenance END, COUNT(*)"
        " FROM functions f LEFT JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE f.version_id = ? AND f.imported = 0 GROUP BY 1",
        (version_id,),
    ).fetchall())
    defined = sum(split.values())
    named = defined - split.pop(None, 0)
    return {
        "defined": defined,
        "named": named,
        "coverage_pct": round(named / defined * 100, 2) if defined else 0.0,
        "oracle_named": split.get("oracle", 0),
        "human_named": split.get("human", 0),
        "agent_named": split.get("agent", 0),
        "export_named": split.get("export", 0),
        "diff_carry_named": split.get("diff-carry", 0),
    }


def _coverage_pcts(conn: sqlite3.Connection) -> dict[int, float]:
    out: dict[int, float] = {}
    for vid, defined, named in conn.execute(
        "SELECT f.version_id, COUNT(*), COUNT(s.name) FROM functions f"
        " LEFT JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE f.imported = 0 GROUP BY f.version_id"
    ):
        out[vid] = round(named / defined * 100, 2) if defined else 0.0
    return out


# ---------------------------------------------------------------- symbols

def _symbol(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "stable_id": row["stable_id"],
        "name": row["name"],
        "summary": row["summary"],
        "type_signature": row["type_signature"],
        "provenance": row["provenance"],
        "confidence": row["confidence"],
        "locked": bool(row["locked"]),
        "evidence": json.loads(row["evidence"] or "[]"),
        "version_id": row["version_id"],
        "updated_at": row["updated_at"],
    }


def get_symbol(conn: sqlite3.Connection, stable_id: str) -> dict[str, Any] | None:
    """The annotation record of a logical function, or None when it has none."""
    row = conn.execute("SELECT * FROM symbols WHERE stable_id = ?", (stable_id,)).fetchone()
    return _symbol(row) if row else None


def stable_id_exists(conn: sqlite3.Connection, stable_id: str) -> bool:
    return conn.execute(
        "SELECT 1 FROM functions WHERE stable_id = ? LIMIT 1", (stable_id,)
    ).fetchone() is not None


def require_stable_id(conn: sqlite3.Connection, stable_id: str) -> None:
    if not stable_id_exists(conn, stable_id):
        raise UnknownStableIdError(
            f"unknown stable_id {stable_id!r} (find ids with `kbtool functions VERSION` or `kbtool search NAME`)"
        )


def search_symbols(conn: sqlite3.Connection, query: str, limit: int = 50) -> list[dict[str, Any]]:
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


def find_functions(conn: sqlite3.Connection, text: str, limit: int = 20) -> list[dict[str, Any]]:
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
    out = []
    for sid, vid, name, prov in rows:
        idx = conn.execute(
            "SELECT idx FROM functions WHERE stable_id = ? AND version_id = ?", (sid, vid)
        ).fetchone()[0]
        out.append({"stable_id": sid, "version_id": vid, "index": idx, "name": name, "provenance": prov})
    return out


# ---------------------------------------------------------------- history

_EVENT_COLUMNS = (
    "id, kind, written, reason, provenance, confidence, actor, old_name, new_name, old, new,"
    " evidence, version_id, created_at, repeats, last_at"
)


def _event(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "id": row["id"],
        "kind": row["kind"],
        "written": bool(row["written"]),
        "reason": row["reason"],
        "provenance": row["provenance"],
        "confidence": row["confidence"],
        "actor": row["actor"],
        "old_name": row["old_name"],
        "new_name": row["new_name"],
        "old": json.loads(row["old"]) if row["old"] else None,
        "new": json.loads(row["new"]) if row["new"] else None,
        "evidence": json.loads(row["evidence"]) if row["evidence"] else None,
        "version_id": row["version_id"],
        "created_at": row["created_at"],
        "repeats": row["repeats"],  # identical refusals counted on one row (schema 4)
        "last_at": row["last_at"] or row["created_at"],
    }


def annotation_events(conn: sqlite3.Connection, stable_id: str) -> list[dict[str, Any]]:
    return [_event(r) for r in conn.execute(
        f"SELECT {_EVENT_COLUMNS} FROM annotation_events WHERE stable_id = ? ORDER BY id",
        (stable_id,),
    )]


def history(conn: sqlite3.Connection, stable_id: str) -> dict[str, Any]:
    """First seen, every version the function appears in (with body_changed), and its events."""
    versions = functions_by_stable_id(conn, stable_id)
    if not versions:
        raise UnknownStableIdError(
            f"unknown stable_id {stable_id!r} (find ids with `kbtool functions VERSION` or `kbtool search NAME`)"
        )
    first = versions[0]
    seen_at = conn.execute("SELECT ingested_at FROM versions WHERE id = ?", (first["version_id"],)).fetchone()[0]
    events = annotation_events(conn, stable_id)
    labels = {v["id"]: v["label"] for v in list_versions(conn)}
    for e in events:
        e["version_label"] = labels.get(e["version_id"])
    return {
        "stable_id": stable_id,
        "first_seen": {"version_id": first["version_id"], "label": first["label"],
                       "index": first["index"], "ingested_at": seen_at},
        "versions": versions,
        "events": events,
        "symbol": get_symbol(conn, stable_id),
        "names_by_version": _names_by_version(versions, events),
    }


def _names_by_version(versions: list[dict[str, Any]], events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Time travel: the name the function had when each later version was current."""
    out = []
    name = None
    written = [e for e in events if e["written"] and e["new"] is not None]
    pos = 0
    for i, v in enumerate(versions):
        nxt = versions[i + 1]["version_id"] if i + 1 < len(versions) else None
        while pos < len(written) and (
            nxt is None or (written[pos]["version_id"] or 0) < nxt
        ):
            name = written[pos]["new"].get("name")
            pos += 1
        out.append({"version_id": v["version_id"], "label": v["label"], "name": name})
    return out


def renames(conn: sqlite3.Connection, stable_id: str) -> list[dict[str, Any]]:
    """The reversible rename trail: written changes, newest first, with the steps to revert each."""
    require_stable_id(conn, stable_id)
    rows = conn.execute(
        f"SELECT {_EVENT_COLUMNS} FROM annotation_events WHERE stable_id = ? AND written = 1"
        " AND kind NOT IN ('lock', 'unlock') ORDER BY id DESC",
        (stable_id,),
    ).fetchall()
    out = []
    for step, r in enumerate(rows, start=1):
        e = _event(r)
        out.append({
            "event_id": e["id"], "kind": e["kind"], "from": e["old_name"], "to": e["new_name"],
            "provenance": e["provenance"], "confidence": e["confidence"], "actor": e["actor"],
            "version_id": e["version_id"], "at": e["created_at"], "revert_steps": step,
        })
    return out


def change_token(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """Changes whenever a version is ingested, an annotation decision is recorded or an
    analysis run (analyze, agent, deep: structs, facts) is stored."""
    v = conn.execute("SELECT COALESCE(MAX(id), 0) FROM versions").fetchone()[0]
    e = conn.execute("SELECT COALESCE(MAX(id), 0) FROM annotation_events").fetchone()[0]
    try:
        r = conn.execute("SELECT COALESCE(MAX(id), 0) FROM analysis_runs").fetchone()[0]
    except sqlite3.OperationalError:  # a KB from before analysis runs were recorded
        r = 0
    return v, e, r


# ---------------------------------------------------------------- export

def export_rows(conn: sqlite3.Connection, version_id: int) -> list[dict[str, Any]]:
    """Every function of a version in index order with its annotation and the hashes a name
    needs to find its function in another KB (text format: kbtool.services.names_io)."""
    _version_row(conn, version_id)
    return [
        {"index": idx, "stable_id": sid, "type": typ, "name": name, "provenance": prov,
         "confidence": conf, "summary": summary, "body_hash": bh, "shape_hash": sh,
         "instr_count": n, "imported": bool(imp)}
        for idx, sid, typ, name, prov, conf, summary, bh, sh, n, imp in conn.execute(
            "SELECT f.idx, f.stable_id, f.type_sig, s.name, s.provenance, s.confidence, s.summary,"
            " f.body_hash, f.shape_hash, f.instr_count, f.imported"
            " FROM functions f LEFT JOIN symbols s ON s.stable_id = f.stable_id"
            " WHERE f.version_id = ? ORDER BY f.idx",
            (version_id,),
        )
    ]


def annotations_by_index(
    conn: sqlite3.Connection, version_id: int, *, defined_only: bool = False,
    with_evidence: bool = False,
) -> dict[int, dict[str, Any]]:
    """index -> {name, summary, provenance, confidence[, evidence]} for a version's named functions."""
    out: dict[int, dict[str, Any]] = {}
    for idx, name, summary, prov, conf, ev in conn.execute(
        "SELECT f.idx, s.name, s.summary, s.provenance, s.confidence, "
        + ("s.evidence" if with_evidence else "NULL") +
        " FROM functions f JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE f.version_id = ? AND s.name IS NOT NULL" + (" AND f.imported = 0" if defined_only else ""),
        (version_id,),
    ):
        rec: dict[str, Any] = {"name": name, "summary": summary, "provenance": prov, "confidence": conf}
        if with_evidence:
            try:
                rec["evidence"] = json.loads(ev or "[]")
            except ValueError:
                rec["evidence"] = []
        out[idx] = rec
    return out


def function_identities(conn: sqlite3.Connection, version_id: int) -> list[tuple]:
    """Every function of a version in index order, imports included:
    ``(index, stable_id, imported, import_module, import_field, name, provenance)``."""
    _version_row(conn, version_id)
    return conn.execute(
        "SELECT f.idx, f.stable_id, f.imported, f.import_module, f.import_field, s.name, s.provenance"
        " FROM functions f LEFT JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE f.version_id = ? ORDER BY f.idx",
        (version_id,),
    ).fetchall()


def stored_diff_report(conn: sqlite3.Connection, from_version_id: int, to_version_id: int) -> dict[str, Any] | None:
    """The diff report saved for the pair (``kbtool diff A B --save``), or None."""
    row = conn.execute(
        "SELECT report FROM diffs WHERE from_version_id = ? AND to_version_id = ?",
        (from_version_id, to_version_id),
    ).fetchone()
    return json.loads(row[0]) if row else None


# ---------------------------------------------------------------- matching input

def mem_ops_for(conn: sqlite3.Connection, version_id: int, indices: list[int]) -> dict[int, list]:
    """index -> memory accesses [[op id, offset, width], ...] of some functions of a version."""
    out: dict[int, list] = {}
    for k in range(0, len(indices), 500):
        chunk = indices[k:k + 500]
        for idx, mem in conn.execute(
            f"SELECT idx, mem_ops FROM facts WHERE version_id = ? AND idx IN ({','.join('?' * len(chunk))})",
            (version_id, *chunk),
        ):
            out[idx] = json.loads(mem)
    return out


def matching_rows(conn: sqlite3.Connection, version_id: int) -> list[dict[str, Any]]:
    """Per-function rows the diff matcher needs (identity, hashes, names, facts)."""
    _version_row(conn, version_id)
    out = []
    for r in conn.execute(
        "SELECT f.idx, f.stable_id, f.imported, f.import_module, f.import_field, f.type_sig,"
        " f.body_hash, f.shape_hash, f.raw_name, f.export_names, f.body_size, f.instr_count,"
        " x.calls, x.strings, x.consts, x.ops, x.loops, x.call_indirect, x.table_slots"
        " FROM functions f JOIN facts x ON x.version_id = f.version_id AND x.idx = f.idx"
        " WHERE f.version_id = ? ORDER BY f.idx",
        (version_id,),
    ):
        out.append({
            "index": r[0], "stable_id": r[1], "imported": bool(r[2]),
            "import_name": f"{r[3]}.{r[4]}" if r[2] else None, "type_sig": r[5],
            "body_hash": r[6], "shape_hash": r[7], "raw_name": r[8],
            "export_names": json.loads(r[9] or "[]"), "body_size": r[10], "instr_count": r[11],
            "calls": json.loads(r[12]), "strings": json.loads(r[13]), "consts": json.loads(r[14]),
            "ops": r[15], "loops": r[16], "call_indirect": r[17],
            "table_slots": json.loads(r[18] or "[]"),
        })
    return out


# --------------------------------------------------------------------------- deep analysis, feed

EVENT_PAGE = 200          # most events one feed answer carries
EVENT_DEFAULT_LATEST = 50  # `since` omitted: the latest this many


def get_analysis(conn: sqlite3.Connection, stable_id: str) -> dict[str, Any] | None:
    """The deep-analysis record of a function (contract: raw_c, clean_c, understanding,
    rename_map, status, confidence; plus stable_id, version_id, func_index, backend, model,
    updated_at), or None when ``kbtool deep`` has not run on it."""
    row = conn.execute("SELECT * FROM analyses WHERE stable_id = ?", (stable_id,)).fetchone()
    if row is None:
        return None
    return {
        "stable_id": row["stable_id"], "version_id": row["version_id"],
        "func_index": row["func_index"], "raw_c": row["raw_c"], "clean_c": row["clean_c"],
        "understanding": row["understanding"],
        "rename_map": json.loads(row["rename_map"] or "{}"), "status": row["status"],
        "confidence": row["confidence"], "backend": row["backend"], "model": row["model"],
        "updated_at": row["updated_at"],
    }


def events_since(conn: sqlite3.Connection, since: int | None = None,
                 limit: int = EVENT_PAGE) -> dict[str, Any]:
    """The studio's feed: ``{last_id, events}`` with ids greater than ``since`` (oldest
    first, at most ``limit``, capped at EVENT_PAGE); without ``since``, the latest
    EVENT_DEFAULT_LATEST. ``last_id`` is the id to poll from next (the newest id returned, or
    ``since`` when nothing is new)."""
    limit = max(1, min(int(limit), EVENT_PAGE))
    if since is None:
        rows = conn.execute("SELECT * FROM events ORDER BY id DESC LIMIT ?",
                            (min(limit, EVENT_DEFAULT_LATEST),)).fetchall()[::-1]
    else:
        rows = conn.execute("SELECT * FROM events WHERE id > ? ORDER BY id LIMIT ?",
                            (int(since), limit)).fetchall()
    events = [{"id": r["id"], "kind": r["kind"], "stable_id": r["stable_id"],
               "version_id": r["version_id"], "payload": json.loads(r["payload"] or "{}"),
               "created_at": r["created_at"]} for r in rows]
    if events:
        last = events[-1]["id"]
    elif since is not None:
        last = int(since)
    else:
        last = conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()[0]
    return {"last_id": last, "events": events}


def deep_done(conn: sqlite3.Connection, version_id: int) -> set[int]:
    """Function indices of a version that already have a finished deep record."""
    return {r[0] for r in conn.execute(
        "SELECT func_index FROM analyses WHERE version_id = ? AND status = 'done'", (version_id,))}


def function_names(conn: sqlite3.Connection, version_id: int) -> dict[int, str]:
    """index -> the best name the KB has for each function of a version: the annotation,
    else the import field, else the name-section hint."""
    out: dict[int, str] = {}
    for idx, imported, field, raw, name in conn.execute(
        "SELECT f.idx, f.imported, f.import_field, f.raw_name, s.name FROM functions f"
        " LEFT JOIN symbols s ON s.stable_id = f.stable_id WHERE f.version_id = ?", (version_id,)
    ):
        best = name or (field if imported else None) or raw
        if best:
            out[idx] = best
    return out


# ---------------------------------------------------------------- agent pass input

def agent_rows(conn: sqlite3.Connection, version_id: int) -> list[dict[str, Any]]:
    """Every function of a version (imports included) in index order, with the stored facts an
    agent context needs and the current annotation (``symbol``: name, provenance, confidence,
    locked; None when unnamed)."""

    _version_row(conn, version_id)
    loads = orjson.loads
    out = []
    for r in conn.execute(
        "SELECT f.idx, f.stable_id, f.imported, f.import_module, f.import_field, f.type_sig,"
        " f.export_names, f.instr_count, x.calls, x.call_indirect, x.consts, x.strings,"
        " x.globals_used, x.mem_ops, x.loops, x.ops, s.name, s.provenance, s.confidence, s.locked"
        " FROM functions f JOIN facts x ON x.version_id = f.version_id AND x.idx = f.idx"
        " LEFT JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE f.version_id = ? ORDER BY f.idx",
        (version_id,),
    ):
        out.append({
            "index": r[0], "stable_id": r[1], "imported": bool(r[2]), "import_module": r[3],
            "import_field": r[4], "type_sig": r[5], "export_names": loads(r[6] or "[]"),
            "instr_count": r[7], "calls": loads(r[8]), "call_indirect": r[9],
            "consts": loads(r[10]), "strings": loads(r[11]),
            "globals_used": loads(r[12]), "mem_ops": [tuple(m) for m in loads(r[13])],
            "loops": r[14], "ops": r[15],
            "symbol": None if r[16] is None else {
                "name": r[16], "provenance": r[17], "confidence": r[18], "locked": bool(r[19])},
        })
    return out
# ---------------------------------------------------------------- static analysis (analyze)

def module_bytes(conn: sqlite3.Connection, version_id: int) -> bytes | None:
    """The stored module bytes of a version (None when the KB holds none for it)."""
    _version_row(conn, version_id)
    row = conn.execute("SELECT data FROM modules WHERE version_id = ?", (version_id,)).fetchone()
    return bytes(row[0]) if row is not None else None


def thread_facts(
    conn: sqlite3.Connection, version_id: int, func_index: int | None = None
) -> list[dict[str, Any]]:
    """The stored thread facts of a version (or of one function), in recorded order."""
    _version_row(conn, version_id)
    if func_index is None:
        rows = conn.execute(
            "SELECT payload FROM thread_facts WHERE version_id = ? ORDER BY seq", (version_id,))
    else:
        rows = conn.execute(
            "SELECT payload FROM thread_facts WHERE version_id = ? AND func_index = ?"
            " ORDER BY seq", (version_id, func_index))
    return [json.loads(r[0]) for r in rows]


def _struct(row: sqlite3.Row) -> dict[str, Any]:
    return {"name": row["name"], "source_function": row["source_function"],
            "fields": json.loads(row["fields"]), "members": json.loads(row["members"])}


def structs(conn: sqlite3.Connection, version_id: int) -> list[dict[str, Any]]:
    """The recovered structs of a version: {name, source_function, fields, members},
    ordered by source function then name."""
    _version_row(conn, version_id)
    return [_struct(r) for r in conn.execute(
        "SELECT name, source_function, fields, members FROM structs WHERE version_id = ?"
        " ORDER BY source_function, name", (version_id,))]


def structs_for_function(
    conn: sqlite3.Connection, version_id: int, func_index: int
) -> list[dict[str, Any]]:
    """The structs of a version that one function accesses (it is among their members)."""
    _version_row(conn, version_id)
    needle = f'"func_index":{int(func_index)},'  # compact JSON written by kb.store
    out = []
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
) -> dict[str, Any] | None:
    """The latest run record of ``kind`` for a version: {id, kind, summary, created_at}."""
    row = conn.execute(
        "SELECT id, kind, summary, created_at FROM analysis_runs WHERE version_id = ? AND kind = ?"
        " ORDER BY id DESC LIMIT 1", (version_id, kind)).fetchone()
    if row is None:
        return None
    return {"id": row[0], "kind": row[1], "summary": json.loads(row[2]), "created_at": row[3]}


def analysis_result(conn: sqlite3.Connection, version_id: int) -> dict[str, Any]:
    """The stored Analysis result of a version (the contract's shape: ``thread_facts``,
    ``structs``) plus ``version_id``, ``analyzed`` and the last run's ``summary``."""
    run = last_analysis_run(conn, version_id)
    return {
        "version_id": version_id,
        "analyzed": run is not None,
        "thread_facts": thread_facts(conn, version_id),
        "structs": structs(conn, version_id),
        "summary": run["summary"] if run else None,
    }


def last_annotation_event(conn: sqlite3.Connection, stable_id: str) -> dict[str, Any] | None:
    """The newest gate decision recorded for a function (written or refused), or None."""
    row = conn.execute(
        f"SELECT {_EVENT_COLUMNS} FROM annotation_events WHERE stable_id = ?"
        " ORDER BY id DESC LIMIT 1", (stable_id,)).fetchone()
    return _event(row) if row is not None else None


# ---------------------------------------------------------------- MCP cross-references (mcp2)

def call_target_counts(conn: sqlite3.Connection, version_id: int, func_index: int) -> list[dict[str, Any]]:
    """Call sites of a defined function grouped by target, most called first:
    [{target, index, count}] (import ``module.field``, a defined callee's name or
    ``func[N]``, and ``<indirect>`` with index null); [] for a missing function."""
    _version_row(conn, version_id)
    row = conn.execute(
        "SELECT calls, call_indirect FROM facts WHERE version_id = ? AND idx = ?",
        (version_id, func_index),
    ).fetchone()
    if row is None:
        return []
    counts: dict[int, int] = {}
    for callee in json.loads(row[0]):
        counts[callee] = counts.get(callee, 0) + 1
    names = _names_for(conn, version_id, list(counts))
    out = []
    for callee, n in counts.items():
        entry = names.get(callee, {})
        target = entry.get("import") or entry.get("name") or f"func[{callee}]"
        out.append({"target": target, "index": callee, "count": n})
    if row[1]:
        out.append({"target": "<indirect>", "index": None, "count": row[1]})
    out.sort(key=lambda e: (-e["count"], e["target"]))
    return out


def version_strings(conn: sqlite3.Connection, version_id: int) -> dict[str, list[int]]:
    """Every string a function of the version references -> the referencing function
    indices (index order), strings in first-reference order."""
    _version_row(conn, version_id)
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
    _version_row(conn, version_id)
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


def function_entries(conn: sqlite3.Connection, version_id: int, indices: list[int]) -> list[dict[str, Any]]:
    """``{index, stable_id, name, provenance, imported, import}`` of ``indices`` (input order)."""
    names = _names_for(conn, version_id, list(indices))
    return [names[i] for i in indices if i in names]


def globals_usage(conn: sqlite3.Connection, version_id: int) -> dict[int, list[int]]:
    """Global index -> the defined functions (index order) whose facts use it."""
    _version_row(conn, version_id)
    out: dict[int, list[int]] = {}
    for idx, used in conn.execute(
        "SELECT idx, globals_used FROM facts WHERE version_id = ? AND globals_used != '[]'"
        " ORDER BY idx",
        (version_id,),
    ):
        for g in json.loads(used):
            out.setdefault(g, []).append(idx)
    return out
# ---------------------------------------------------------------- navigation (index, string, const)

_NAV_COLUMNS = (
    "f.version_id, f.idx, f.stable_id, s.name, s.provenance, s.confidence"
)


def _nav_row(row: tuple) -> dict[str, Any]:
    vid, idx, sid, name, prov, conf = row
    return {"stable_id": sid, "name": name, "provenance": prov, "confidence": conf,
            "version_id": vid, "index": idx}


def function_at_index(conn: sqlite3.Connection, version_id: int, index: int) -> dict[str, Any] | None:
    """A Search result (plus ``version_id``, ``index``) for function ``index`` of a version.

    ``name`` is None for an unnamed function; None when the version has no such index."""
    _version_row(conn, version_id)
    row = conn.execute(
        f"SELECT {_NAV_COLUMNS} FROM functions f LEFT JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE f.version_id = ? AND f.idx = ?", (version_id, index)).fetchone()
    return _nav_row(tuple(row)) if row is not None else None


def functions_with_string(
    conn: sqlite3.Connection, version_id: int, text: str, limit: int = 50
) -> list[dict[str, Any]]:
    """Functions of a version referencing a string that contains ``text`` (case-insensitive).

    Each row is a Search result plus ``version_id``, ``index`` and ``strings`` (the matching
    strings of that function), in index order, capped at ``SEARCH_CAP``."""
    _version_row(conn, version_id)
    limit = max(1, min(int(limit), SEARCH_CAP))
    rows = conn.execute(
        f"SELECT {_NAV_COLUMNS}, x.strings FROM facts x"
        " JOIN functions f ON f.version_id = x.version_id AND f.idx = x.idx"
        " LEFT JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE x.version_id = ? AND x.strings != '[]' AND EXISTS ("
        "  SELECT 1 FROM json_each(x.strings) j WHERE instr(lower(j.value), lower(?)) > 0)"
        " ORDER BY f.idx LIMIT ?", (version_id, text, limit)).fetchall()
    needle = text.lower()
    out = []
    for row in rows:
        item = _nav_row(tuple(row)[:6])
        item["strings"] = [s for s in json.loads(row[6]) if needle in str(s).lower()]
        out.append(item)
    return out


def functions_with_const(
    conn: sqlite3.Connection, version_id: int, values: list[int], limit: int = 50
) -> list[dict[str, Any]]:
    """Functions of a version whose constants include any of ``values`` (equal spellings of one
    number, e.g. unsigned and two's complement), in index order, capped at ``SEARCH_CAP``."""
    _version_row(conn, version_id)
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
        " ORDER BY f.idx LIMIT ?", (version_id, *values, limit)).fetchall()
    return [_nav_row(tuple(r)) for r in rows]


def functions_referencing_string(
    conn: sqlite3.Connection, version_id: int, text: str, limit: int = 50
) -> list[dict[str, Any]]:
    """Cross-references: functions of a version that reference exactly the string ``text``."""
    _version_row(conn, version_id)
    limit = max(1, min(int(limit), SEARCH_CAP))
    rows = conn.execute(
        f"SELECT {_NAV_COLUMNS} FROM facts x"
        " JOIN functions f ON f.version_id = x.version_id AND f.idx = x.idx"
        " LEFT JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE x.version_id = ? AND x.strings != '[]' AND EXISTS ("
        "  SELECT 1 FROM json_each(x.strings) j WHERE j.value = ?)"
        " ORDER BY f.idx LIMIT ?", (version_id, text, limit)).fetchall()
    return [_nav_row(tuple(r)) for r in rows]


def database_file(conn: sqlite3.Connection) -> str:
    """The file of the connection's main database ('' for an in-memory one)."""
    for _seq, name, path in conn.execute("PRAGMA database_list"):
        if name == "main":
            return path or ""
    return ""


def stored_diff_stamp(
    conn: sqlite3.Connection, from_version_id: int, to_version_id: int
) -> tuple[str, int] | None:
    """``(created_at, size)`` of the stored report of a pair, or None: changes when a report is
    saved again or deleted (the in-process diff cache keys on it)."""
    row = conn.execute(
        "SELECT created_at, length(report) FROM diffs WHERE from_version_id = ? AND to_version_id = ?",
        (from_version_id, to_version_id),
    ).fetchone()
    return (str(row[0]), int(row[1])) if row else None


# ---------------------------------------------------------------- function list pages

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
    _version_row(conn, version_id)
    where = " WHERE f.version_id = ?" + ("" if include_imports else " AND f.imported = 0")
    join = " FROM functions f LEFT JOIN symbols s ON s.stable_id = f.stable_id"
    if unnamed_only:
        where += " AND s.name IS NULL"
    total = conn.execute("SELECT COUNT(*)" + join + where, (version_id,)).fetchone()[0]
    rows = [
        {"index": i, "stable_id": sid, "type": t, "name": n, "provenance": p, "confidence": c}
        for i, sid, t, n, p, c in conn.execute(
            "SELECT f.idx, f.stable_id, f.type_sig, s.name, s.provenance, s.confidence"
            + join + where + " ORDER BY f.idx LIMIT ? OFFSET ?",
            (version_id, max(0, count), max(0, offset)),
        )
    ]
    return total, rows


# --------------------------------------------------------------------------- suggestions

SUGGESTION_PAGE = 500  # hard cap of one page of suggestions


def _suggestion(r: sqlite3.Row) -> dict[str, Any]:
    return {
        "version_id": r["version_id"], "stable_id": r["stable_id"], "index": r["func_index"],
        "name": r["name"], "confidence": r["confidence"], "backend": r["backend"],
        "model": r["model"], "rule": r["rule"], "source": r["source"],
        "evidence": json.loads(r["evidence"] or "{}"), "status": r["status"],
        "created_at": r["created_at"], "decided_at": r["decided_at"],
        "current": ({"name": r["cur_name"], "provenance": r["cur_prov"],
                     "confidence": r["cur_conf"], "locked": bool(r["cur_locked"])}
                    if r["cur_name"] is not None else None),
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
) -> dict[str, Any]:
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
        "LIMIT ? OFFSET ?", [*args, limit, offset]).fetchall()
    return {"version_id": version_id, "total": total, "offset": offset, "limit": limit,
            "items": [_suggestion(r) for r in rows]}


def open_suggestion(
    conn: sqlite3.Connection, stable_id: str, version_id: int | None = None
) -> dict[str, Any] | None:
    """The open suggestion for ``stable_id`` (in ``version_id``, else in its newest version)."""
    sql = _SUGGESTION_SELECT + "WHERE s.stable_id = ? AND s.status = 'open'"
    args: list[Any] = [stable_id]
    if version_id is not None:
        sql += " AND s.version_id = ?"
        args.append(version_id)
    row = conn.execute(sql + " ORDER BY s.version_id DESC LIMIT 1", args).fetchone()
    return _suggestion(row) if row else None


# ---------------------------------------------------------------- lineage: own-code overlap


def lineage_hash_rows(
    conn: sqlite3.Connection, version_id: int
) -> list[tuple[int, str | None, str | None, int]]:
    """``(idx, body_hash, shape_hash, instr_count)`` of a version's defined functions."""
    return conn.execute(
        "SELECT idx, body_hash, shape_hash, instr_count FROM functions"
        " WHERE version_id = ? AND imported = 0 ORDER BY idx",
        (version_id,),
    ).fetchall()


def lineage_records(conn: sqlite3.Connection) -> dict[int, dict[str, Any] | None]:
    """The stored lineage record (JSON) of every version, by version id."""
    out: dict[int, dict[str, Any] | None] = {}
    for vid, text in conn.execute("SELECT id, lineage FROM versions"):
        try:
            out[vid] = json.loads(text) if text else None
        except ValueError:
            out[vid] = None
    return out


# ---------------------------------------------------------------- agent answers (issue 31)


def agent_answer(
    conn: sqlite3.Connection, backend: str, model: str | None, prompt_hash: str
) -> dict[str, Any] | None:
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


def agent_answer_counts(conn: sqlite3.Connection, version_id: int) -> dict[str, int]:
    """Answers stored for a version's prompts and the provider tokens they cost."""
    n, tin, tout = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(tokens_in), 0), COALESCE(SUM(tokens_out), 0)"
        " FROM agent_answers WHERE version_id = ?",
        (version_id,),
    ).fetchone()
    return {"answers": n, "tokens_in": tin, "tokens_out": tout}
