"""``store.save_diff_report`` writes the statement sqlite-utils' ``upsert`` ran (ingest of a
later release no longer imports sqlite-utils for it): a new pair is inserted, a stored pair's
report and time are replaced in place (same row), other pairs are untouched; the rows equal
what ``upsert`` leaves on a copy of the same KB."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import sqlite_utils

from kbtool.kb import store
from kbtool.kb.db import open_rw, transaction


def _rows(conn: sqlite3.Connection) -> list[tuple]:
    return [
        tuple(r)
        for r in conn.execute(
            "SELECT rowid, from_version_id, to_version_id, report FROM diffs ORDER BY rowid"
        )
    ]


def _upsert(conn: sqlite3.Connection, a: int, b: int, report: dict) -> None:
    sqlite_utils.Database(conn)["diffs"].upsert(
        {
            "from_version_id": a,
            "to_version_id": b,
            "report": store.dumps(report),
            "created_at": "t",
        },
        pk=("from_version_id", "to_version_id"),
    )


def test_save_replaces_in_place_as_upsert_did(demo_kb: Path, tmp_path: Path) -> None:
    other = tmp_path / "upsert.db"
    shutil.copy(demo_kb, other)
    ours, theirs = open_rw(demo_kb), open_rw(other)
    before = _rows(ours)
    assert before == _rows(theirs)
    steps = [(2, 1, {"n": 1}), (1, 2, {"n": 2, "s": "<é>"}), (2, 1, {"n": 3}), (1, 1, {})]
    for a, b, report in steps:
        with transaction(ours):
            store.save_diff_report(ours, a, b, report)
        with transaction(theirs):
            _upsert(theirs, a, b, report)
        assert _rows(ours) == _rows(theirs)
    after = {(r[1], r[2]): r for r in _rows(ours)}
    assert after[(2, 1)][3] == '{"n":3}' and after[(1, 1)][3] == "{}"
    assert after[(1, 2)][3] == store.dumps({"n": 2, "s": "<é>"})
    # a replaced pair keeps its row; the pairs not saved here are as they were
    kept = {(r[1], r[2]): r for r in before}
    for key, row in kept.items():
        if key not in {(a, b) for a, b, _ in steps}:
            assert after[key] == row
    if (1, 2) in kept:
        assert after[(1, 2)][0] == kept[(1, 2)][0]
    stamp = ours.execute(
        "SELECT created_at FROM diffs WHERE from_version_id = 2 AND to_version_id = 1"
    ).fetchone()[0]
    assert stamp and stamp != "t"
    ours.close()
    theirs.close()
