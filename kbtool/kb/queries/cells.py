"""The heatmap's cells of a version in columns: what the dashboard draws first, before the
function list with names and stable ids (issue 30 point 1)."""

from __future__ import annotations

import sqlite3
from typing import NamedTuple

from kbtool.kb.queries._base import version_row


class Cells(NamedTuple):
    """One entry per defined function in index order (as :func:`list_functions` gives
    them): its index, its annotation's provenance (None when unnamed: no name) and its
    annotation's confidence (None when there is none)."""

    index: list[int]
    provenance: list[str | None]
    confidence: list[float | None]


def heatmap_cells(conn: sqlite3.Connection, version_id: int) -> Cells:
    """The defined functions of ``version_id`` as :class:`Cells`; unknown version: an error."""
    version_row(conn, version_id)
    rows = conn.execute(
        "SELECT f.idx, CASE WHEN s.name IS NULL THEN NULL ELSE s.provenance END, s.confidence"
        " FROM functions f LEFT JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE f.version_id = ? AND f.imported = 0 ORDER BY f.idx",
        (version_id,),
    ).fetchall()
    if not rows:
        return Cells([], [], [])
    index, prov, conf = map(list, zip(*rows, strict=True))
    return Cells(index, prov, conf)


def latest_version_id(conn: sqlite3.Connection) -> int | None:
    """The newest version's id (the highest: what the dashboard opens by default), or None."""
    row = conn.execute("SELECT max(id) FROM versions").fetchone()
    return None if row is None or row[0] is None else int(row[0])
