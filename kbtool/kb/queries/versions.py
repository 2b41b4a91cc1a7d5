"""Versions, their coverage, lineages (programs) and the oracle modules."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypedDict, cast

from kbtool.kb.queries._base import (
    LEGACY_PROGRAM,
    VERSION_SELECT,
    Version,
    version_record,
    version_row,
)

if TYPE_CHECKING:
    from kbtool.kb.queries.shapes import (
        LineageRecord,
        LineageVersion,
        OracleBytes,
        OracleModule,
        VersionInfo,
        VersionRef,
    )


class Coverage(TypedDict):
    defined: int
    named: int
    coverage_pct: float
    oracle_named: int
    human_named: int
    agent_named: int
    export_named: int
    diff_carry_named: int


def version_exists(conn: sqlite3.Connection, version_id: int) -> bool:
    return conn.execute("SELECT 1 FROM versions WHERE id = ?", (version_id,)).fetchone() is not None


def list_versions(conn: sqlite3.Connection, *, with_coverage: bool = False) -> list[Version]:
    """Every version, oldest first; ``coverage_pct`` added for the HTTP surface."""
    rows = conn.execute(VERSION_SELECT + " ORDER BY v.id").fetchall()
    out = [version_record(r) for r in rows]
    if with_coverage:
        pct = _coverage_pcts(conn)
        for v in out:
            v["coverage_pct"] = pct.get(v["id"], 0.0)
    return out


def get_version(conn: sqlite3.Connection, version_id: int) -> Version:
    return version_record(version_row(conn, version_id))


def version_info(conn: sqlite3.Connection, version_id: int) -> VersionInfo:
    """Everything known about one version (Version fields plus counts, hashes, producers)."""
    row = version_row(conn, version_id)
    info: dict[str, Any] = dict(version_record(row))
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
    return cast("VersionInfo", info)


def program_names(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM programs")}


def lineage_versions(conn: sqlite3.Connection) -> list[LineageVersion]:
    """``id``, ``label``, ``program`` (name; ``legacy`` when unset) and ``program_id`` of every version."""
    return [
        {"id": i, "label": lab, "program": name or LEGACY_PROGRAM, "program_id": pid}
        for i, lab, name, pid in conn.execute(
            "SELECT v.id, v.label, p.name, v.program_id FROM versions v"
            " LEFT JOIN programs p ON p.id = v.program_id ORDER BY v.id"
        )
    ]


def has_versions_without_program(conn: sqlite3.Connection) -> bool:
    return (
        conn.execute("SELECT 1 FROM versions WHERE program_id IS NULL LIMIT 1").fetchone()
        is not None
    )


def hash_rows(
    conn: sqlite3.Connection, version_id: int
) -> list[tuple[str | None, str | None, int]]:
    """``(body_hash, shape_hash, instr_count)`` of a version's defined functions."""
    return conn.execute(
        "SELECT body_hash, shape_hash, instr_count FROM functions"
        " WHERE version_id = ? AND imported = 0",
        (version_id,),
    ).fetchall()


def versions_with_sha256(conn: sqlite3.Connection, sha256: str) -> list[VersionRef]:
    """Versions whose module bytes have this sha256 (``id``, ``label``), oldest first."""
    return [
        {"id": i, "label": lab}
        for i, lab in conn.execute(
            "SELECT id, label FROM versions WHERE sha256 = ? ORDER BY id", (sha256,)
        )
    ]


def label_exists(conn: sqlite3.Connection, label: str) -> bool:
    return conn.execute("SELECT 1 FROM versions WHERE label = ?", (label,)).fetchone() is not None


def oracle_label_exists(conn: sqlite3.Connection, label: str) -> bool:
    return (
        conn.execute("SELECT 1 FROM oracle_modules WHERE label = ?", (label,)).fetchone()
        is not None
    )


def list_oracles(conn: sqlite3.Connection) -> list[OracleModule]:
    """Reference modules (without their bytes), oldest first."""
    return [
        {"id": i, "label": lab, "sha256": sha, "size": size, "source_path": src, "created_at": at}
        for i, lab, sha, size, src, at in conn.execute(
            "SELECT id, label, sha256, size, source_path, created_at FROM oracle_modules ORDER BY id"
        )
    ]


def oracle_modules(conn: sqlite3.Connection) -> list[OracleBytes]:
    """Every reference module with its bytes, oldest first."""
    from kbtool.kb.queries.shapes import OracleBytes

    return [
        OracleBytes(i, lab, bytes(data))
        for i, lab, data in conn.execute("SELECT id, label, data FROM oracle_modules ORDER BY id")
    ]


def taken_stable_ids(conn: sqlite3.Connection) -> set[str]:
    """Every stable_id any version of the KB uses."""
    return {r[0] for r in conn.execute("SELECT DISTINCT stable_id FROM functions")}


#: function rows per expected question above which :func:`stable_id_taken` looks each id up
#: (measured: one lookup by the index costs about what reading 5 ids of the whole set does)
LOOKUP_RATIO = 8


def stable_id_taken(conn: sqlite3.Connection, expected: int) -> Callable[[str], bool]:
    """Whether any version of the KB uses a stable id, for about ``expected`` questions
    (the answers of :func:`taken_stable_ids`). A KB holding many more function rows than
    that (a later version: its new functions are asked) is asked id by id through the
    ``functions_stable_id`` index, so the cost does not grow with the KB; else (a first
    version: every function is asked) every id is read once."""
    (stored,) = conn.execute(
        "SELECT COALESCE(SUM(COALESCE(imported_functions, 0) + COALESCE(defined_functions, 0)),"
        " 0) FROM versions"
    ).fetchone()
    if stored <= LOOKUP_RATIO * expected:
        return taken_stable_ids(conn).__contains__

    def taken(stable_id: str) -> bool:
        return (
            conn.execute(
                "SELECT 1 FROM functions WHERE stable_id = ? LIMIT 1", (stable_id,)
            ).fetchone()
            is not None
        )

    return taken


def latest_version_id(conn: sqlite3.Connection) -> int | None:
    return conn.execute("SELECT MAX(id) FROM versions").fetchone()[0]


def coverage(conn: sqlite3.Connection, version_id: int) -> Coverage:
    """Named share of a version's defined functions, split by provenance (sums to ``named``)."""
    version_row(conn, version_id)
    # one scan: unnamed functions group under provenance NULL
    split = dict(
        conn.execute(
            "SELECT CASE WHEN s.name IS NULL THEN NULL ELSE s.provenance END, COUNT(*)"
            " FROM functions f LEFT JOIN symbols s ON s.stable_id = f.stable_id"
            " WHERE f.version_id = ? AND f.imported = 0 GROUP BY 1",
            (version_id,),
        ).fetchall()
    )
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


def database_file(conn: sqlite3.Connection) -> str:
    """The file of the connection's main database ('' for an in-memory one)."""
    for _seq, name, path in conn.execute("PRAGMA database_list"):
        if name == "main":
            return path or ""
    return ""


def lineage_hash_rows(
    conn: sqlite3.Connection, version_id: int
) -> list[tuple[int, str | None, str | None, int]]:
    """``(idx, body_hash, shape_hash, instr_count)`` of a version's defined functions."""
    return conn.execute(
        "SELECT idx, body_hash, shape_hash, instr_count FROM functions"
        " WHERE version_id = ? AND imported = 0 ORDER BY idx",
        (version_id,),
    ).fetchall()


def lineage_records(conn: sqlite3.Connection) -> dict[int, LineageRecord | None]:
    """The stored lineage record (JSON) of every version, by version id (None: not recorded)."""
    out: dict[int, LineageRecord | None] = {}
    for vid, text in conn.execute("SELECT id, lineage FROM versions"):
        try:
            out[vid] = json.loads(text) if text else None
        except ValueError:
            out[vid] = None
    return out
