"""What the code views read of a version, as lean reads of plain rows (no per-row dict or
named row, no reference list decoded), for :mod:`kbtool.services.code_prepared`: the data
model's items as the code labels them, and every function's identity and name."""

from __future__ import annotations

import sqlite3

from kbtool.kb.queries._base import version_row
from kbtool.kb.queries.events import file_and_change_token

# (address, size, label, text, data_id, kind, refs)
LabelRow = tuple[int, int, str, "str | None", str, str, int]
# (address, size, label, text)
ShownRow = tuple[int, int, str, "str | None"]
# (index, stable_id, imported, import module, import field, name, provenance)
IdentityRow = tuple[int, str, int, "str | None", "str | None", "str | None", "str | None"]


def identity_rows(conn: sqlite3.Connection, version_id: int) -> list[IdentityRow]:
    """Every function of ``version_id`` in index order, imports included, with its name
    (the rows of :func:`kbtool.kb.queries.function_identities`, as plain tuples; an unknown
    version has none)."""
    cur = conn.cursor()
    cur.row_factory = None
    return cur.execute(
        "SELECT f.idx, f.stable_id, f.imported, f.import_module, f.import_field, s.name,"
        " s.provenance FROM functions f LEFT JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE f.version_id = ? ORDER BY f.idx",
        (version_id,),
    ).fetchall()


def code_key(conn: sqlite3.Connection) -> tuple[str, tuple[int, int, int]]:
    """What a prepared version is kept under: the database file and the change token
    (:func:`kbtool.kb.queries.events.file_and_change_token`)."""
    return file_and_change_token(conn)


def require_version(conn: sqlite3.Connection, version_id: int) -> None:
    """:class:`~kbtool.kb.errors.UnknownVersionError` (the usual message) for an unknown id."""
    version_row(conn, version_id)


def has_data_model(conn: sqlite3.Connection, version_id: int) -> bool:
    """Whether ``kbtool analyze`` stored a data model for ``version_id`` (no counting)."""
    row = conn.execute("SELECT 1 FROM data_models WHERE version_id = ?", (version_id,))
    return row.fetchone() is not None


def label_rows(conn: sqlite3.Connection, version_id: int, limit: int) -> list[LabelRow]:
    """The first ``limit`` data items of ``version_id`` by address (as
    :func:`kbtool.kb.datamodel.list_items` pages them), each ``(address, size, label, text,
    data_id, kind, refs)``."""
    return conn.execute(
        "SELECT address, size, label, text, data_id, kind, refs FROM data_items"
        " WHERE version_id = ? ORDER BY address LIMIT ?",
        (version_id, limit),
    ).fetchall()


def shown_label_rows(conn: sqlite3.Connection, version_id: int, limit: int) -> list[ShownRow]:
    """Of :func:`label_rows`, the items the code labels when no data item has a given name:
    all but zero-filled items nothing refers to, each ``(address, size, label, text)``
    (filtered and cut in SQL: only the columns shown are read)."""
    if limit == 0:
        return []
    last = None  # a negative limit is none, as in SQL
    if limit > 0:
        last = conn.execute(
            "SELECT address FROM data_items WHERE version_id = ? ORDER BY address LIMIT 1 OFFSET ?",
            (version_id, limit - 1),
        ).fetchone()
    bound = "" if last is None else " AND address <= ?"
    args = (version_id,) if last is None else (version_id, last[0])
    cur = conn.cursor()
    cur.row_factory = None  # plain tuples, whatever the connection's row factory
    return cur.execute(
        "SELECT address, size, label, text FROM data_items"
        " WHERE version_id = ? AND (kind != 'zero' OR refs != 0)" + bound + " ORDER BY address",
        args,
    ).fetchall()


def store_identity(conn: sqlite3.Connection, version_id: int) -> tuple[str, str, str | None]:
    """What a stored preparation of ``version_id`` is kept under besides the KB file: the
    module's SHA-256, when the version was ingested and when its data model was built
    (None: no data model). An unknown version: ``("", "", None)``."""
    cur = conn.cursor()
    cur.row_factory = None
    row = cur.execute(
        "SELECT v.sha256, v.ingested_at, d.built_at FROM versions v"
        " LEFT JOIN data_models d ON d.version_id = v.id WHERE v.id = ?",
        (version_id,),
    ).fetchone()
    return ("", "", None) if row is None else (row[0], row[1], row[2])


def annotation_subjects_since(conn: sqlite3.Connection, event_id: int) -> list[str]:
    """The distinct ``stable_id`` of the written annotation decisions after ``event_id``
    (a function's stable id, or ``k:<kind>:...`` for other knowledge)."""
    cur = conn.cursor()
    cur.row_factory = None
    return [
        r[0]
        for r in cur.execute(
            "SELECT DISTINCT stable_id FROM annotation_events WHERE id > ? AND written = 1",
            (event_id,),
        )
    ]


def module_size(conn: sqlite3.Connection, version_id: int) -> int:
    """The size in bytes of ``version_id``'s module (0: unknown version)."""
    row = conn.execute("SELECT size FROM versions WHERE id = ?", (version_id,)).fetchone()
    return int(row[0]) if row is not None else 0


def module_bytes_unlocked(conn: sqlite3.Connection, version_id: int) -> bytes | None:
    """The stored module bytes of ``version_id`` (as :func:`kbtool.kb.queries.module_bytes`)
    read through SQLite's incremental blob I/O, which lets go of the GIL while it copies
    (a plain query assembles a 32 MB blob holding it: ~25 ms other threads wait). None when
    the version has no module bytes."""
    try:
        blob = conn.blobopen("modules", "data", version_id, readonly=True)
    except sqlite3.OperationalError:  # no such row (or no such column)
        return None
    with blob:
        return blob.read()


def event_stamp(conn: sqlite3.Connection, event_id: int) -> str:
    """What the annotation decision ``event_id`` recorded (its subject, kind, names, time and
    new value) as one string ('' for none): a KB whose history diverged after that decision
    (a copy restored over the file, then other decisions) tells itself apart."""
    cur = conn.cursor()
    cur.row_factory = None
    row = cur.execute(
        "SELECT stable_id, kind, written, old_name, new_name, new, created_at"
        " FROM annotation_events WHERE id = ?",
        (event_id,),
    ).fetchone()
    return "" if row is None else repr(tuple(row))
