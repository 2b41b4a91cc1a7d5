"""The matcher's rows and bodies of a SET of functions (a diff's changelog rebuilt for a few
functions after a rename: :mod:`kbtool.services.diff.relabel`), instead of a whole version."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from kbtool.kb.queries.diffs import MATCHING_SELECT, matching_row
from kbtool.kb.queries.shapes import MatchingRow

__all__ = ["matching_rows_for", "function_bodies", "import_indices"]

CHUNK = 500  # indices per statement (SQLite's variable limit)

_SELECT = MATCHING_SELECT + " WHERE f.version_id = ? AND f.idx IN "


def _chunks(indices: Iterable[int]) -> Iterable[list[int]]:
    todo = sorted(set(indices))
    for k in range(0, len(todo), CHUNK):
        yield todo[k : k + CHUNK]


def matching_rows_for(
    conn: sqlite3.Connection, version_id: int, indices: Iterable[int]
) -> dict[int, MatchingRow]:
    """index -> the row :func:`kbtool.kb.queries.diffs.matching_rows` gives, for the given
    indices of a version (an index the version lacks is left out)."""
    out: dict[int, MatchingRow] = {}
    for chunk in _chunks(indices):
        marks = ",".join("?" * len(chunk))
        for r in conn.execute(_SELECT + f"({marks})", (version_id, *chunk)):
            out[r[0]] = matching_row(r)
    return out


def function_bodies(
    conn: sqlite3.Connection, version_id: int, indices: Iterable[int]
) -> dict[int, bytes] | None:
    """index -> the code-section bytes of each defined function asked for (locals and
    instructions, as ``body_offset``/``body_size`` place them in the stored module), read
    without loading the module; None when the KB holds no bytes for the version or a body
    lies outside them (the caller then parses the module)."""
    where: list[tuple[int, int, int]] = []
    for chunk in _chunks(indices):
        marks = ",".join("?" * len(chunk))
        where += conn.execute(
            "SELECT idx, body_offset, body_size FROM functions"
            f" WHERE version_id = ? AND imported = 0 AND idx IN ({marks})",
            (version_id, *chunk),
        ).fetchall()
    try:
        blob = conn.blobopen("modules", "data", version_id, readonly=True)
    except sqlite3.Error:  # no module row
        return None
    out: dict[int, bytes] = {}
    with blob:
        size = len(blob)
        for idx, off, n in where:
            if off <= 0 or off + n > size:
                return None  # a KB written before body offsets were kept
            blob.seek(off)
            out[idx] = blob.read(n)
    return out


def import_indices(conn: sqlite3.Connection, version_id: int) -> dict[str, int]:
    """``module.field`` -> index of a version's function imports (the last of a repeated
    name, as a dict built over the rows in index order)."""
    return {
        f"{m}.{f}": idx
        for idx, m, f in conn.execute(
            "SELECT idx, import_module, import_field FROM functions"
            " WHERE version_id = ? AND imported = 1 ORDER BY idx",
            (version_id,),
        )
    }
