"""The data model's items as the code views label them: one lean read of plain rows (no
per-item dict, no reference list decoded), for :mod:`kbtool.services.code_prepared`."""

from __future__ import annotations

import sqlite3

# (address, size, label, text, data_id, kind, refs)
LabelRow = tuple[int, int, str, "str | None", str, str, int]


def label_rows(conn: sqlite3.Connection, version_id: int, limit: int) -> list[LabelRow]:
    """The first ``limit`` data items of ``version_id`` by address (as
    :func:`kbtool.kb.datamodel.list_items` pages them), each ``(address, size, label, text,
    data_id, kind, refs)``."""
    return conn.execute(
        "SELECT address, size, label, text, data_id, kind, refs FROM data_items"
        " WHERE version_id = ? ORDER BY address LIMIT ?",
        (version_id, limit),
    ).fetchall()
