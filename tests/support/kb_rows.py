"""Every table's rows of a KB, for tests that compare two KBs row by row."""

from __future__ import annotations

import sqlite3


def table_rows(conn: sqlite3.Connection, *, by_rowid: bool = True) -> dict[str, list]:
    """Every table's rows (timestamp columns left out): in rowid order, or sorted when
    ``by_rowid`` is False (or the table has no rowid)."""
    out = {}
    for (t,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
    ).fetchall():
        cols = [r[1] for r in conn.execute(f"PRAGMA table_info('{t}')") if not r[1].endswith("_at")]
        sel = ", ".join(f'"{c}"' for c in cols)
        if by_rowid:
            try:
                out[t] = [tuple(r) for r in conn.execute(f"SELECT {sel} FROM '{t}' ORDER BY rowid")]
                continue
            except sqlite3.OperationalError:  # a table without rowid
                pass
        out[t] = sorted((tuple(r) for r in conn.execute(f"SELECT {sel} FROM '{t}'")), key=repr)
    return out
