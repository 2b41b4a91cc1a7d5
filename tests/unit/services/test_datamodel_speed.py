"""The data model's ingest cost (issue 30 point 4) without a different model: the fast
scan skips ``const; consumer`` pairs that cannot reach the data and still gives the careful
walk's references; the references are stored as packed columns (kbtool/kb/datarefs.py)."""

from __future__ import annotations

import sqlite3

from kbtool.analysis import datamodel as dmod
from kbtool.analysis import datascan
from kbtool.kb import datamodel as dm_store
from kbtool.kb import datarefs
from kbtool.kb.db import open_rw
from kbtool.services.ingest import ingest_file
from kbtool.wasm import analyze_module
from tests.support.lift_sem import wat
from tests.support.paths import ROOT

DEMO = ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm"

LO, HI, MEM_HI = 2048, 2112, 4096

WAT = """
(module
  (memory 1)
  (data (i32.const 2048) "hello world, this is data at 2048 with some more bytes to pad it")
  (func $g (param i32))
  (func $f (export "f") (param i32) (result i32) (local i32)
    local.get 0
    i32.const 4
    i32.add
    local.set 1
    i32.const -8
    local.set 1
    i64.const -1
    drop
    local.get 0
    i32.const 7
    i32.store offset=16
    i32.const 16
    call $g
    local.get 0
    i32.const 2048
    i32.add
    local.set 1
    i32.const 2050
    call $g
    i32.const 0
    i32.load offset=3000
    local.get 1
    i32.const 2060
    i32.store
    i32.const 12
    i32.const 9
    i32.store offset=2100
    i32.const 5
    i32.shl)
)
"""


def test_const_then_consumer_is_skipped_only_below_the_data():
    skip = datascan.skip_pattern(datascan.lo_bits(LO), False, -1).match
    assert skip(b"\x41\x04\x6a").end() == 3  # i32.const 4; i32.add
    assert skip(b"\x41\x78\x21\x01").end() == 4  # i32.const -8; local.set 1
    assert skip(b"\x42\x7f\x1a").end() == 3  # i64.const -1; drop
    assert skip(b"\x41\x07\x36\x02\x10").end() == 5  # i32.const 7; i32.store offset=16
    assert skip(b"\x41\x80\x10\x6a").end() == 0  # i32.const 2048 (data); i32.add
    assert skip(b"\x41\x00\x28\x02\xb8\x17").end() == 0  # i32.const 0; i32.load offset=3000
    assert skip(b"\x41\x0c\x36\x02\xb4\x10").end() == 0  # a store at offset 2100 (data)


def test_fast_scan_equals_careful_walk_on_skipped_pairs(tmp_path):
    data = wat(tmp_path, WAT)
    a = analyze_module(data)
    f = next(x for x in a.functions if x.export_names == ["f"])
    floor = LO - datascan.max_offset(f.mem_ops)
    assert floor < 0  # offset=3000: every constant may matter (no constant skipped alone)
    careful = list(
        dmod.function_refs_careful(data, f.index, f.body_offset, f.body_size, LO, HI, False, MEM_HI)
    )
    fast = datascan.data_refs(
        data, f.index, f.body_offset, f.body_size, LO, HI, False, MEM_HI, floor
    )
    assert fast == careful
    found = {(r.kind, r.target) for r in fast}
    assert {
        ("addr", 2048),
        ("addr", 2050),
        ("load", 3000),
        ("addr", 2060),
        ("store", 2112),
    } <= found
    assert not [r for r in fast if r.target in (4, 7, 16, 12, 5)]


def _plan(conn: sqlite3.Connection, sql: str) -> str:
    return " ".join(r[-1] for r in conn.execute("EXPLAIN QUERY PLAN " + sql))


def test_refs_of_a_fresh_kb_are_packed_and_a_second_version_leaves_them_as_they_were(tmp_path):
    conn = open_rw(str(tmp_path / "kb.db"), create=True)
    ingest_file(conn, str(DEMO), label="1")
    n = dm_store.model_info(conn, 1)["refs"]
    assert n > 1000
    # a few rows of packed columns, not a row per reference
    chunks = conn.execute("SELECT count(*), sum(n) FROM data_ref_chunks").fetchone()
    assert tuple(chunks) == (-(-n // datarefs.CHUNK), n)
    # the lookups go through the small covering indexes, not a scan of the blobs
    assert "COVERING INDEX data_ref_targets_key" in _plan(
        conn,
        "SELECT chunk FROM data_ref_targets WHERE version_id = 1 AND hi_key >= 1 AND lo_key <= 1",
    )
    assert "COVERING INDEX data_ref_chunks_func" in _plan(
        conn,
        "SELECT chunk FROM data_ref_chunks WHERE version_id = 1 AND hi_func >= 9 AND lo_func <= 9",
    )
    # one target's page comes in (function, offset) order
    refs, total = dm_store.refs_to(conn, 1, "global", 0, limit=100000)
    assert total > 100 and len(refs) == total
    keys = [(r["func_index"], r["offset"]) for r in refs]
    assert keys == sorted(keys)
    assert dm_store.refs_to(conn, 1, "global", 0, limit=10, offset=5)[0] == refs[5:15]
    before = datarefs.all_refs(conn, 1)
    # a second, small version: its own rows; the first's answer the same
    small = tmp_path / "small.wasm"
    small.write_bytes(wat(tmp_path, WAT))
    ingest_file(conn, str(small), label="2")
    assert datarefs.all_refs(conn, 1) == before
    assert dm_store.refs_to(conn, 1, "global", 0, limit=100000) == (refs, total)
    assert 0 < dm_store.model_info(conn, 2)["refs"] < 20
    conn.close()


def test_parallel_scan_with_this_process_scanning_too_gives_the_same_model(monkeypatch):
    from kbtool.analysis.recognize import stack_pointer_global

    data = DEMO.read_bytes()
    a = analyze_module(data)
    sp = stack_pointer_global(a, data)
    one = dmod.build_data_model(a, data, stack_pointer=sp)
    monkeypatch.setattr(datascan, "PARALLEL_MIN_BYTES", 0)
    seen: list[tuple[int, int]] = []
    for workers in (2, 3):
        seen.clear()
        many = dmod.build_data_model(
            a, data, stack_pointer=sp, workers=workers, progress=lambda d, t: seen.append((d, t))
        )
        assert many.to_dict() == one.to_dict()
        assert seen[-1][0] == seen[-1][1] and [d for d, _ in seen] == sorted(d for d, _ in seen)
