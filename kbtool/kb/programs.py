"""Moving a version between programs (``kbtool set-program``): the reads and writes it needs.

Runs inside the caller's transaction (:func:`kbtool.kb.db.transaction`); names are never
written here (the gate does that), only the version's program, parent and lineage record.
"""

from __future__ import annotations

import json
import sqlite3

__all__ = ["program_id_of", "versions_sharing_identities", "move_version", "drop_if_empty"]


def program_id_of(conn: sqlite3.Connection, name: str) -> int | None:
    """The id of program ``name``, or None when there is none."""
    row = conn.execute("SELECT id FROM programs WHERE name = ?", (name,)).fetchone()
    return None if row is None else int(row[0])


def versions_sharing_identities(conn: sqlite3.Connection, version_id: int) -> list[int]:
    """Other versions holding at least one of this version's stable ids (one logical function,
    hence one annotation, in both), oldest first."""
    rows = conn.execute(
        "SELECT DISTINCT f2.version_id FROM functions f1"
        " JOIN functions f2 ON f2.stable_id = f1.stable_id AND f2.version_id != f1.version_id"
        " WHERE f1.version_id = ? ORDER BY f2.version_id",
        (version_id,),
    ).fetchall()
    return [int(r[0]) for r in rows]


def move_version(
    conn: sqlite3.Connection,
    version_id: int,
    *,
    program_id: int,
    parent_version_id: int | None,
    lineage: dict,
) -> None:
    """Put a version in program ``program_id`` with its new parent and lineage record."""
    conn.execute(
        "UPDATE versions SET program_id = ?, parent_version_id = ?, lineage = ? WHERE id = ?",
        (program_id, parent_version_id, json.dumps(lineage, sort_keys=True), version_id),
    )


def drop_if_empty(conn: sqlite3.Connection, program_id: int) -> bool:
    """Delete program ``program_id`` when no version is left in it (its name is free again:
    the next build that starts a new program is not numbered past it); True when deleted."""
    left = conn.execute(
        "SELECT 1 FROM versions WHERE program_id = ? LIMIT 1", (program_id,)
    ).fetchone()
    if left is not None:
        return False
    conn.execute("DELETE FROM programs WHERE id = ?", (program_id,))
    return True
