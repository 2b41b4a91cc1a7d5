"""A program's first version is ingested without the matcher's records (nothing to match):
its table slots are stored all the same, and a later version still builds and matches them."""

from __future__ import annotations

import pytest

import kbtool.services.ingest as ingest_mod
from kbtool.kb.db import open_rw
from kbtool.services.ingest import ingest_file
from testkit.wasmbuild import build_wat, have_wabt

pytestmark = pytest.mark.skipif(not have_wabt(), reason="wat2wasm not installed")

WAT = """(module
  (type $t (func (param i32) (result i32)))
  (table 4 funcref)
  (func $a (type $t) local.get 0 i32.const {k} i32.add)
  (func $b (type $t) local.get 0 i32.const 2 i32.mul)
  (func $c (type $t) local.get 0 call $a call $b)
  (elem (i32.const 0) $b $a $b)
  (export "c" (func $c)))"""


def _slots(conn) -> dict[int, str]:
    return dict(
        conn.execute(
            "SELECT idx, table_slots FROM facts WHERE version_id ="
            " (SELECT max(id) FROM versions) ORDER BY idx"
        ).fetchall()
    )


def test_first_version_skips_records_and_keeps_table_slots(tmp_path, monkeypatch):
    calls: list[int] = []
    real = ingest_mod.records_from_analysis

    def counted(analysis, *a, **k):
        calls.append(len(analysis.functions))
        return real(analysis, *a, **k)

    monkeypatch.setattr(ingest_mod, "records_from_analysis", counted)
    v1 = build_wat(WAT.format(k=1), tmp_path, name="v1")
    v2 = build_wat(WAT.format(k=7), tmp_path, name="v2")
    conn = open_rw(str(tmp_path / "kb.db"))
    try:
        r1 = ingest_file(conn, v1, label="1", program="p")
        assert calls == []  # nothing to match: no matcher records
        assert _slots(conn) == {0: "[1]", 1: "[0,2]", 2: "[]"}
        r2 = ingest_file(conn, v2, label="2", program="p")
        assert calls == [3]  # a parent: the matcher's records, once
        assert r2.parent_version_id == r1.version_id and r2.carried == 3
        assert _slots(conn) == {0: "[1]", 1: "[0,2]", 2: "[]"}
        ids = conn.execute(
            "SELECT version_id, idx, stable_id FROM functions ORDER BY idx, version_id"
        ).fetchall()
        assert [r[2] for r in ids[0::2]] == [r[2] for r in ids[1::2]]  # carried ids
    finally:
        conn.close()
