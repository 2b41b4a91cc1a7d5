"""The call graph stored at ``kbtool analyze`` (issue 30): read back by the code views with
the same answer as the one computed from the module, names from today's KB, ignored when it
was built from other bytes or by another builder format."""

from __future__ import annotations

import shutil
import zlib

import pytest

from kbtool.kb import callgraphs, queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.gate import upsert_symbol
from kbtool.services import callgraph_store
from kbtool.services import code as code_service
from kbtool.services.analyze import analyze_version
from kbtool.services.ingest import ingest_bytes
from testkit.wasmbuild import build_wat, have_wabt
from tests.support.paths import corpus_file

# a table, call_indirect sites of two types (one with few candidates: concrete edges; one
# with more than the expansion limit: a summary), ref.func, direct calls
REFS_WAT = """
(module
  (type $v (func (result i32)))
  (type $u (func (param i32) (result i32)))
  (table 16 funcref)
  (elem (i32.const 0) $a $b $c $d $e $f $g $h $i $one)
  (elem declare func $main)
  (func $a (result i32) i32.const 1)
  (func $b (result i32) i32.const 2)
  (func $c (result i32) i32.const 3)
  (func $d (result i32) i32.const 4)
  (func $e (result i32) i32.const 5)
  (func $f (result i32) i32.const 6)
  (func $g (result i32) i32.const 7)
  (func $h (result i32) i32.const 8)
  (func $i (result i32) i32.const 9)
  (func $one (param i32) (result i32) local.get 0)
  (func $main (export "main") (param i32) (result i32)
    ref.func $main drop
    local.get 0 call_indirect (type $v)
    i32.const 9 call_indirect (type $u)
    call $a i32.add call $a i32.add))
"""


def _kb(tmp_path, data: bytes):
    db = tmp_path / "kb.db"
    conn = open_rw(db)
    vid = ingest_bytes(conn, data, label="v1").version_id
    analyze_version(conn, vid)
    return db, conn, vid


def _fresh_graph(db, vid: int) -> tuple[dict, bool]:
    """The call graph as a new process would answer it, and whether the module was decoded."""
    code_service.clear_cache()
    ro = open_ro(db)
    try:
        graph = code_service.callgraph(ro, vid)
        decoded = code_service.code_module(ro, vid).parsed.analysis is not None
        return graph, decoded
    finally:
        ro.close()
        code_service.clear_cache()


def _forget(db, vid: int) -> None:
    rw = open_rw(db)
    rw.execute("DELETE FROM callgraphs WHERE version_id = ?", (vid,))
    rw.commit()
    rw.close()


def _same_stored_and_computed(tmp_path, data: bytes) -> dict:
    db, conn, vid = _kb(tmp_path, data)
    conn.close()
    row = callgraphs.stored_callgraph(open_ro(db), vid)
    assert row is not None and row.format == callgraph_store.FORMAT
    assert row.module_digest == callgraph_store.module_digest(data)
    stored, decoded = _fresh_graph(db, vid)
    assert not decoded  # read back: no body decoded for it
    _forget(db, vid)
    computed, decoded = _fresh_graph(db, vid)
    assert decoded
    assert stored == computed
    return stored


def test_stored_graph_is_the_computed_one_on_a_real_module(tmp_path):
    data = corpus_file("release/sql.js-1.12.0.sql-wasm.wasm").read_bytes()
    graph = _same_stored_and_computed(tmp_path, data)
    kinds = {e["kind"] for e in graph["edges"]}
    assert {"direct", "indirect"} <= kinds and graph["indirect"] and graph["candidates"]
    assert any(n["status"] == "named" and n["provenance"] for n in graph["nodes"])


@pytest.mark.skipif(not have_wabt(), reason="wat2wasm not installed")
def test_stored_graph_keeps_ref_and_indirect_edges(tmp_path):
    data = build_wat(REFS_WAT, tmp_path, name="refs").read_bytes()
    graph = _same_stored_and_computed(tmp_path, data)
    main = 10
    edges = {(e["caller"], e["callee"], e["kind"]) for e in graph["edges"]}
    assert {(main, main, "ref"), (main, 0, "direct"), (main, 9, "indirect")} <= edges
    assert [(s["caller"], s["type"], s["candidates"]) for s in graph["indirect"]] == [
        (main, "() -> i32", 9)
    ]


def test_names_follow_the_kb_and_stale_rows_are_ignored(tmp_path):
    data = corpus_file("release/sql.js-1.12.0.sql-wasm.wasm").read_bytes()
    db, conn, vid = _kb(tmp_path, data)
    computed_before = None
    try:
        node = next(n for n in _fresh_graph(db, vid)[0]["nodes"] if n["status"] == "unnamed")
        sid = queries.get_function(conn, vid, node["index"])["stable_id"]
        upsert_symbol(
            conn, sid, "renamed_here", provenance="human", confidence=1.0, actor="human:t"
        )
        graph, decoded = _fresh_graph(db, vid)
        assert not decoded
        after = graph["nodes"][node["index"]]
        assert (after["name"], after["status"], after["provenance"]) == (
            "renamed_here",
            "named",
            "human",
        )
        # a row built from other bytes, or by another builder format: not used
        good = callgraphs.stored_callgraph(conn, vid)
        assert good is not None
        _forget(db, vid)
        computed_before, _ = _fresh_graph(db, vid)
        for digest, fmt in (("0" * 32, good.format), (good.module_digest, good.format + 1)):
            callgraphs.replace_callgraph(conn, vid, digest, fmt, good.graph)
            conn.commit()
            graph, decoded = _fresh_graph(db, vid)
            assert decoded and graph == computed_before
        for damaged in (b"not zlib", zlib.compress(b"[1, 2]"), zlib.compress(b'{"edges": []}')):
            callgraphs.replace_callgraph(conn, vid, good.module_digest, good.format, damaged)
            conn.commit()
            graph, decoded = _fresh_graph(db, vid)
            assert decoded and graph == computed_before
        # re-analysis stores it again
        analyze_version(conn, vid)
        graph, decoded = _fresh_graph(db, vid)
        assert not decoded and graph == computed_before
    finally:
        conn.close()


def test_a_schema_8_kb_migrates_and_answers_without_a_stored_graph(tmp_path):
    data = corpus_file("release/sql.js-1.12.0.sql-wasm.wasm").read_bytes()
    db, conn, vid = _kb(tmp_path, data)
    conn.execute("DROP TABLE callgraphs")
    conn.execute("UPDATE meta SET value = '8' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    old = tmp_path / "old.db"
    shutil.copy(db, old)
    with pytest.raises(Exception, match="schema 8"):
        open_ro(old)
    open_rw(old).close()  # migrates
    graph, decoded = _fresh_graph(old, vid)
    assert decoded and graph["edges"]
