"""Writes and reads of a version's data model (tables ``data_globals``, ``data_items``,
``data_models`` and the references' packed tables of :mod:`kbtool.kb.datarefs`; built by
:mod:`kbtool.services.data`).

Reads return plain dicts; every list is bounded by the caller's ``limit``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any, TypedDict

import orjson

from kbtool.kb import datarefs
from kbtool.kb.db import now
from kbtool.kb.store import indexes_built_after, insert_rows_batched

_TABLES = ("data_globals", "data_items", "data_ref_chunks", "data_ref_targets", "data_models")
_REF_TABLES = ("data_ref_chunks", "data_ref_targets")


class DataItemRow(TypedDict):
    address: int
    size: int
    kind: str
    segment: int
    text: str | None
    label: str
    data_id: str
    refs: int
    targets: list[int]


class GlobalRow(TypedDict):
    index: int
    type: str
    mutable: bool
    initial: int | float | None
    imported: bool
    import_name: str | None
    exports: list[str]
    role: str | None
    name: str | None
    confidence: float
    reads: int
    writes: int


class RefRow(TypedDict):
    func_index: int
    offset: int
    kind: str
    target_kind: str
    target: int
    width: int


# --------------------------------------------------------------------------- writes


def replace_data_model(
    conn: sqlite3.Connection,
    version_id: int,
    *,
    globals_: Iterable[dict[str, Any]],
    items: Iterable[dict[str, Any]] = (),
    refs: Iterable[tuple[int, int, str, str, int, int]],
    data_start: int,
    data_end: int,
    truncated: bool,
    item_rows: list[tuple] | None = None,
    ref_columns: datarefs.Columns | None = None,
    refs_written: bool = False,
) -> None:
    """Store the data model of ``version_id`` (replacing an older one), in the caller's
    transaction. ``refs`` are ``(func_index, offset, kind, target_kind, target, width)``;
    the items are dicts (``items``) or ready rows (``item_rows``: ``(address, size, kind,
    segment, text, label, data_id, refs, targets JSON)``, the ingest's compiled pass);
    ``ref_columns``: the compiled pass packing the references (:func:`datarefs.pack`);
    ``refs_written``: the references are stored already (:func:`datarefs.write` in this
    transaction: a later ingest writes them while its matcher runs)."""
    for table in _TABLES:
        if refs_written and table in _REF_TABLES:
            continue
        conn.execute(f"DELETE FROM {table} WHERE version_id = ?", (version_id,))  # noqa: S608
    conn.executemany(
        "INSERT INTO data_globals(version_id, idx, type, mutable, initial, imported, import_name,"
        " exports, role, name, confidence, reads, writes) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        [
            (
                version_id,
                g["index"],
                g["type"],
                int(g["mutable"]),
                None if g["initial"] is None else orjson.dumps(g["initial"]).decode(),
                int(g["imported"]),
                g["import_name"],
                orjson.dumps(g["exports"]).decode(),
                g["role"],
                g["name"],
                g["confidence"],
                g["reads"],
                g["writes"],
            )
            for g in globals_
        ],
    )
    vid = int(version_id)  # (in the statements: the rows go in as the caller made them)
    if item_rows is None:
        item_rows = [_item_row(i) for i in items]
    with indexes_built_after(conn, "data_items", len(item_rows)):
        insert_rows_batched(
            conn,
            "INSERT INTO data_items(version_id, address, size, kind, segment, text, label,"
            " data_id, refs, targets)",
            f"({vid:d},?,?,?,?,?,?,?,?,?)",
            item_rows,
            constants=True,  # (the tables' empty targets lists: SQL literals, not binds)
        )
    if not refs_written:
        # packed (kbtool/kb/datarefs.py; a list as it is: the writer leaves it unchanged)
        datarefs.write(conn, vid, refs if type(refs) is list else list(refs), ref_columns)
    conn.execute(
        "INSERT INTO data_models(version_id, data_start, data_end, truncated, built_at)"
        " VALUES (?,?,?,?,?)",
        (version_id, data_start, data_end, int(truncated), now()),
    )


def drop_data_model(conn: sqlite3.Connection, version_id: int) -> bool:
    """Remove the data model of ``version_id`` (as a version ingested before ingest built
    one); in the caller's transaction. Whether there was one."""
    had = conn.execute("SELECT 1 FROM data_models WHERE version_id = ?", (version_id,)).fetchone()
    for table in _TABLES:
        conn.execute(f"DELETE FROM {table} WHERE version_id = ?", (version_id,))  # noqa: S608
    return had is not None


def _item_row(i: dict[str, Any]) -> tuple:
    return (
        i["address"],
        i["size"],
        i["kind"],
        i["segment"],
        i["text"],
        i["label"],
        i["data_id"],
        i["refs"],
        orjson.dumps(i["targets"]).decode() if i["targets"] else "[]",
    )


# --------------------------------------------------------------------------- reads


def model_row(conn: sqlite3.Connection, version_id: int) -> dict[str, Any] | None:
    """``{data_start, data_end, truncated, built_at}`` or None when the version has no data
    model yet (no counting: what every read checks first)."""
    row = conn.execute(
        "SELECT data_start, data_end, truncated, built_at FROM data_models WHERE version_id = ?",
        (version_id,),
    ).fetchone()
    if row is None:
        return None
    return {"data_start": row[0], "data_end": row[1], "truncated": bool(row[2]), "built_at": row[3]}


def model_info(conn: sqlite3.Connection, version_id: int) -> dict[str, Any] | None:
    """``{data_start, data_end, truncated, built_at, items, globals, refs}`` or None when the
    version has no data model yet."""
    row = conn.execute(
        "SELECT data_start, data_end, truncated, built_at FROM data_models WHERE version_id = ?",
        (version_id,),
    ).fetchone()
    if row is None:
        return None
    count = {
        t: conn.execute(f"SELECT count(*) FROM {t} WHERE version_id = ?", (version_id,)).fetchone()[
            0
        ]  # noqa: S608
        for t in ("data_items", "data_globals")
    }
    return {
        "data_start": row[0],
        "data_end": row[1],
        "truncated": bool(row[2]),
        "built_at": row[3],
        "items": count["data_items"],
        "globals": count["data_globals"],
        "refs": datarefs.count(conn, version_id),
    }


_ITEM_COLS = "address, size, kind, segment, text, label, data_id, refs, targets"


def _item(row: tuple) -> DataItemRow:
    return {
        "address": row[0],
        "size": row[1],
        "kind": row[2],
        "segment": row[3],
        "text": row[4],
        "label": row[5],
        "data_id": row[6],
        "refs": row[7],
        "targets": orjson.loads(row[8]),
    }


def list_items(
    conn: sqlite3.Connection,
    version_id: int,
    *,
    kinds: tuple[str, ...] | None = None,
    search: str | None = None,
    offset: int = 0,
    limit: int = 100,
) -> tuple[list[DataItemRow], int]:
    """A page of items by address, and the total that matched. ``search`` is a
    case-insensitive substring of the text or the label."""
    where, args = ["version_id = ?"], [version_id]
    if kinds:
        where.append(f"kind IN ({','.join('?' * len(kinds))})")
        args += list(kinds)
    if search:
        where.append(
            "(instr(lower(coalesce(text, '')), lower(?)) > 0 OR instr(lower(label), lower(?)) > 0)"
        )
        args += [search, search]
    cond = " AND ".join(where)
    total = conn.execute(f"SELECT count(*) FROM data_items WHERE {cond}", args).fetchone()[0]  # noqa: S608
    rows = conn.execute(
        f"SELECT {_ITEM_COLS} FROM data_items WHERE {cond} ORDER BY address LIMIT ? OFFSET ?",  # noqa: S608
        [*args, limit, offset],
    ).fetchall()
    return [_item(r) for r in rows], int(total)


def item_at(conn: sqlite3.Connection, version_id: int, address: int) -> DataItemRow | None:
    """The item holding ``address`` (None outside every item)."""
    row = conn.execute(
        f"SELECT {_ITEM_COLS} FROM data_items WHERE version_id = ? AND address <= ?"  # noqa: S608
        " ORDER BY address DESC LIMIT 1",
        (version_id, address),
    ).fetchone()
    if row is None:
        return None
    it = _item(row)
    return it if it["address"] <= address < it["address"] + max(it["size"], 1) else None


def item_by_label(conn: sqlite3.Connection, version_id: int, label: str) -> DataItemRow | None:
    # SQLite (3.40) picks the primary key's version_id prefix over (version_id, label) here:
    # a scan of the version's items (65k on ffmpeg, ~10-19 ms per xref lookup) instead of one
    # probe; both are made by the same schema block, so the index is always there
    row = conn.execute(
        f"SELECT {_ITEM_COLS} FROM data_items INDEXED BY data_items_label"  # noqa: S608
        " WHERE version_id = ? AND label = ?",
        (version_id, label),
    ).fetchone()
    return None if row is None else _item(row)


def items_by_text(
    conn: sqlite3.Connection, version_id: int, text: str, limit: int = 50
) -> list[DataItemRow]:
    """String items whose text equals ``text``, else contains it (case-sensitive first)."""
    rows = conn.execute(
        f"SELECT {_ITEM_COLS} FROM data_items WHERE version_id = ? AND text = ? ORDER BY address LIMIT ?",  # noqa: S608
        (version_id, text, limit),
    ).fetchall()
    if not rows:
        rows = conn.execute(
            f"SELECT {_ITEM_COLS} FROM data_items WHERE version_id = ? AND instr(text, ?) > 0"  # noqa: S608
            " ORDER BY address LIMIT ?",
            (version_id, text, limit),
        ).fetchall()
    return [_item(r) for r in rows]


def globals_of(conn: sqlite3.Connection, version_id: int) -> list[GlobalRow]:
    rows = conn.execute(
        "SELECT idx, type, mutable, initial, imported, import_name, exports, role, name,"
        " confidence, reads, writes FROM data_globals WHERE version_id = ? ORDER BY idx",
        (version_id,),
    ).fetchall()
    return [
        {
            "index": r[0],
            "type": r[1],
            "mutable": bool(r[2]),
            "initial": None if r[3] is None else orjson.loads(r[3]),
            "imported": bool(r[4]),
            "import_name": r[5],
            "exports": orjson.loads(r[6]),
            "role": r[7],
            "name": r[8],
            "confidence": r[9],
            "reads": r[10],
            "writes": r[11],
        }
        for r in rows
    ]


def _ref(r: tuple) -> RefRow:
    return {
        "func_index": r[0],
        "offset": r[1],
        "kind": r[2],
        "target_kind": r[3],
        "target": r[4],
        "width": r[5],
    }


def refs_to(
    conn: sqlite3.Connection,
    version_id: int,
    target_kind: str,
    lo: int,
    hi: int | None = None,
    *,
    limit: int = 500,
    offset: int = 0,
) -> tuple[list[RefRow], int]:
    """References to ``target`` (``hi`` None) or to any target in ``[lo, hi)``, by function
    and offset; and their total."""
    found = datarefs.positions_to(conn, version_id, target_kind, lo, hi)
    start = max(offset, 0)  # (as SQL's LIMIT/OFFSET: a negative limit is none)
    page = found[start:] if limit < 0 else found[start : start + limit]
    return [_ref(r) for r in datarefs.rows_at(conn, version_id, page)], len(found)


def refs_from(
    conn: sqlite3.Connection, version_id: int, func_index: int, *, limit: int = 2000
) -> list[RefRow]:
    """What one function references (data and globals), by offset."""
    most = limit if limit >= 0 else 1 << 62  # (as SQL's LIMIT: a negative limit is none)
    return [_ref(r) for r in datarefs.from_function(conn, version_id, func_index, most)]


def function_names_for(
    conn: sqlite3.Connection, version_id: int, indices: Iterable[int]
) -> dict[int, str]:
    """index -> the best name of each of ``indices`` (annotation, import field, name-section
    hint), like :func:`kbtool.kb.queries.function_names` but reading only those rows."""
    idx = sorted({int(i) for i in indices if i >= 0})
    out: dict[int, str] = {}
    for k in range(0, len(idx), 500):
        chunk = idx[k : k + 500]
        for i, imported, fld, raw, name in conn.execute(
            "SELECT f.idx, f.imported, f.import_field, f.raw_name, s.name FROM functions f"
            " LEFT JOIN symbols s ON s.stable_id = f.stable_id"
            f" WHERE f.version_id = ? AND f.idx IN ({','.join('?' * len(chunk))})",  # noqa: S608
            [version_id, *chunk],
        ):
            best = name or (fld if imported else None) or raw
            if best:
                out[i] = best
    return out


def function_by_name(conn: sqlite3.Connection, version_id: int, name: str) -> int | None:
    """The lowest index whose best name (as :func:`function_names_for`) is ``name``."""
    row = conn.execute(
        "SELECT min(f.idx) FROM functions f LEFT JOIN symbols s ON s.stable_id = f.stable_id"
        " WHERE f.version_id = ? AND coalesce(nullif(s.name, ''), CASE WHEN f.imported THEN nullif(f.import_field, '') END,"
        " nullif(f.raw_name, '')) = ?",
        (version_id, name),
    ).fetchone()
    return None if row is None or row[0] is None else int(row[0])
