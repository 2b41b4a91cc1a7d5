"""Small KBs built directly in SQLite for tests that need identities but no wasm."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from kbtool.kb.db import now, open_rw


def bare_kb(path: Path, stable_ids: list[str], label: str = "v1") -> sqlite3.Connection:
    """A KB with one version whose defined functions carry ``stable_ids`` (index order)."""
    conn = open_rw(path)
    cur = conn.execute(
        "INSERT INTO versions (label, sha256, size, imported_functions, defined_functions,"
        " exported_functions, ingested_at) VALUES (?, 'x', 0, 0, ?, 0, ?)",
        (label, len(stable_ids), now()),
    )
    vid = cur.lastrowid
    conn.executemany(
        "INSERT INTO functions (version_id, idx, stable_id, imported, type_sig) VALUES (?,?,?,0,'() -> ()')",
        [(vid, i, sid) for i, sid in enumerate(stable_ids)],
    )
    conn.executemany(
        "INSERT INTO facts VALUES (?,?,'[]',0,'[]','[]','[]','[]','[]',0,0,x'','[]')",
        [(vid, i) for i in range(len(stable_ids))],
    )
    return conn
