"""Writes and reads of a version's stored call graph structure (table ``callgraphs``,
schema 9; built at ``kbtool analyze`` by :mod:`kbtool.services.callgraph_store`).

One row per version: the digest of the module bytes it was built from, the builder's
format number and the structure as an opaque blob; the service decides what is current.
"""

from __future__ import annotations

import sqlite3
from typing import NamedTuple


class StoredCallgraph(NamedTuple):
    """A stored call graph row: what it was built from and its encoded structure."""

    module_digest: str
    format: int
    graph: bytes


def replace_callgraph(
    conn: sqlite3.Connection, version_id: int, module_digest: str, fmt: int, graph: bytes
) -> None:
    """Store ``version_id``'s call graph structure (replacing an older one), in the caller's
    transaction."""
    conn.execute(
        "INSERT OR REPLACE INTO callgraphs(version_id, module_digest, format, graph)"
        " VALUES (?, ?, ?, ?)",
        (version_id, module_digest, fmt, graph),
    )


def stored_callgraph(conn: sqlite3.Connection, version_id: int) -> StoredCallgraph | None:
    """The stored call graph row of ``version_id``, or None (never built, or a KB file
    without the table)."""
    try:
        row = conn.execute(
            "SELECT module_digest, format, graph FROM callgraphs WHERE version_id = ?",
            (version_id,),
        ).fetchone()
    except sqlite3.OperationalError:  # no such table: nothing stored
        return None
    return StoredCallgraph(row[0], int(row[1]), bytes(row[2])) if row else None
