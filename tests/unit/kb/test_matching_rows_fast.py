"""``queries.matching_rows`` (one comprehension, orjson called directly) gives the rows
``matching_row`` makes of each stored row, also when a text sends it to ``json.loads``; and
``records_from_rows`` (fields in order) gives the records the keyword build gave."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from kbtool.identity.names import module_is_minified
from kbtool.identity.records import FuncRecord, carried_names, records_from_rows
from kbtool.kb.db import open_ro
from kbtool.kb.queries.diffs import MATCHING_SELECT, matching_row, matching_rows


def _reference_rows(conn: sqlite3.Connection, vid: int) -> list[dict]:
    sql = MATCHING_SELECT + " WHERE f.version_id = ? ORDER BY f.idx"
    return [matching_row(tuple(r)) for r in conn.execute(sql, (vid,))]


def _reference_records(rows: list[dict]) -> list[FuncRecord]:
    """The keyword build of session 33 (the fields by name)."""
    minified = module_is_minified(n for r in rows for n in r["export_names"])
    return [
        FuncRecord(
            index=row["index"],
            stable_id=row["stable_id"],
            imported=row["imported"],
            import_name=row["import_name"],
            type_sig=row["type_sig"],
            body_hash=None if row["imported"] else row["body_hash"],
            shape_hash=None if row["imported"] else row["shape_hash"],
            names=carried_names(row["export_names"], row["raw_name"], minified),
            calls=tuple(dict.fromkeys(row["calls"])),
            strings=tuple(row["strings"]),
            consts=tuple(row["consts"]),
            ops=row["ops"],
            instr_count=row["instr_count"],
            body_size=row["body_size"],
            loops=row["loops"],
            call_indirect=row["call_indirect"],
            table_slots=tuple(row.get("table_slots") or ()),
        )
        for row in rows
    ]


def test_rows_and_records_as_before(demo_kb_master: Path) -> None:
    conn = open_ro(demo_kb_master)
    try:
        vids = [r[0] for r in conn.execute("SELECT id FROM versions ORDER BY id")]
        assert len(vids) >= 2
        for vid in vids:
            rows = matching_rows(conn, vid)
            ref = _reference_rows(conn, vid)
            assert rows == ref
            assert [list(r) for r in rows] == [list(r) for r in ref]  # (key order too)
            assert records_from_rows(rows) == _reference_records(ref)
    finally:
        conn.close()


def test_lone_surrogate_falls_back(demo_kb: Path) -> None:
    conn = sqlite3.connect(demo_kb)
    try:
        vid, idx = conn.execute(
            "SELECT version_id, idx FROM facts ORDER BY version_id, idx LIMIT 1 OFFSET 5"
        ).fetchone()
        conn.execute(
            "UPDATE facts SET strings = ? WHERE version_id = ? AND idx = ?",
            ('["a\\ud800b"]', vid, idx),
        )
        conn.commit()
        rows = matching_rows(conn, vid)
        assert rows == _reference_rows(conn, vid)
        assert [r["strings"] for r in rows if r["index"] == idx] == [["a\ud800b"]]
        assert records_from_rows(rows) == _reference_records(rows)
    finally:
        conn.close()
