"""The stored JSON records have exactly the shapes kbtool.kb.queries.shapes declares.

Real records, written by the real code: the diff reports ingest and ``save_diff`` store (one
with relocations and triage, one across two programs), the lineage records of a first, a
related, a new-program and a ``--base`` ingest, and every kind of thread fact ``analyze``
finds in a threaded module (wat2wasm). Each value is checked against its TypedDict (required
keys present, no undeclared key, value types), and every declared key, optional ones
included, must occur in at least one record: a shape neither lags behind nor runs ahead of
the code that writes it.
"""

from __future__ import annotations

import sqlite3
import typing
from pathlib import Path
from typing import Any, get_type_hints

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.queries import shapes
from kbtool.services.analyze import analyze_version
from kbtool.services.diff.report import compute_diff, save_diff, stored_diff
from kbtool.services.ingest import ingest_bytes
from testkit.wasmbuild import build_wat, have_wabt
from tests.support.shapes import check_shape, declared_keys

# every kind of thread fact: shared memory, atomic sites, a futex lock that waits through a
# callee, a release that notifies through one, a __wasm_init_tls-shaped initialiser, a
# wasi-threads entry and the functions only it reaches
THREADS_WAT = """
(module
  (memory 1 1 shared)
  (global $tls (mut i32) (i32.const 0))
  (data $seg "tls!")
  (func $wait (param i32)
    local.get 0 i32.const 0 i64.const -1 memory.atomic.wait32 drop)
  (func $wake (param i32)
    local.get 0 i32.const 1 memory.atomic.notify drop)
  (func $lock (param i32)
    (loop $again
      local.get 0 i32.const 0 i32.const 1 i32.atomic.rmw.cmpxchg
      if local.get 0 call $wait br $again end))
  (func $unlock (param i32)
    local.get 0 i32.const 0 i32.atomic.rmw.xchg drop
    local.get 0 call $wake)
  (func $init_tls (param i32)
    local.get 0 global.set $tls
    local.get 0 i32.const 0 i32.const 4 memory.init $seg)
  (func $job (param i32) (result i32)
    local.get 0 call $lock
    local.get 0 i32.load offset={off}
    local.get 0 call $unlock)
  (func $start (param i32 i32) local.get 0 call $init_tls local.get 1 call $job drop)
  (func $main (export "_start") i32.const 0 i32.atomic.load offset=4 drop)
  (export "wasi_thread_start" (func $start)))
"""


def _threads_wasm(tmp_path: Path, off: int) -> bytes:
    if not have_wabt():
        pytest.skip("wat2wasm not installed")
    return build_wat(THREADS_WAT.format(off=off), tmp_path, name=f"mt{off}").read_bytes()


@pytest.fixture
def kb(demo_kb: Path, tmp_path: Path) -> typing.Iterator[tuple[sqlite3.Connection, dict[str, int]]]:
    """The demo KB (zstd 1.0 -> 1.1: stored report, relocations, triage) plus a threaded
    program: a first release (a new program) and a second one ingested with ``--base``, its
    thread facts analysed, and a cross-program report saved (its ``warning``)."""
    conn = open_rw(demo_kb)
    try:
        mt1 = ingest_bytes(conn, _threads_wasm(tmp_path, 8), label="mt-1").version_id
        mt2 = ingest_bytes(conn, _threads_wasm(tmp_path, 12), label="mt-2", base=mt1).version_id
        analyze_version(conn, mt1)
        save_diff(conn, compute_diff(conn, 2, mt1))
    finally:
        conn.close()
    ro = open_ro(demo_kb)
    try:
        yield ro, {"mt1": mt1, "mt2": mt2}
    finally:
        ro.close()


def _unseen(keys: dict[str, set[str]], *tps: Any) -> dict[str, set[str]]:
    """Declared keys of each TypedDict that no checked record held."""
    out = {tp.__name__: declared_keys(tp) - keys.get(tp.__name__, set()) for tp in tps}
    return {k: v for k, v in out.items() if v}


def test_stored_diff_reports_match_their_shape(kb) -> None:
    conn, v = kb
    keys: dict[str, set[str]] = {}
    ret = get_type_hints(queries.stored_diff_report, localns=vars(shapes))["return"]
    reports = {
        pair: queries.stored_diff_report(conn, *pair)
        for pair in ((1, 2), (v["mt1"], v["mt2"]), (2, v["mt1"]))
    }
    # ingest stores a later release's report untriaged (the warm job or the first reader
    # triages it); the triaged read is the shape every surface serves
    assert all("explain" not in c for c in reports[(1, 2)]["changes"])
    reports["triaged"] = stored_diff(conn, 1, 2)
    for pair, report in reports.items():
        assert report is not None, pair
        check_shape(report, ret, f"report{pair}", [], scalars=True, keys=keys)
    # the demo's report: modified functions explained and triaged, relocations flagged
    changes = reports["triaged"]["changes"]
    modified = [c for c in changes if c["classification"] == "modified"]
    assert modified and all("explain" in c and "triage_kind" in c for c in modified)
    assert not any("explain" in c for c in changes if c["classification"] != "modified")
    assert any(c.get("relocated") for c in changes)
    assert "warning" in reports[(2, v["mt1"])] and "warning" not in reports[(1, 2)]
    assert _unseen(keys, shapes.StoredDiffReport, shapes.DiffChange, shapes.DiffSummary) == {}


def test_an_undeclared_key_in_a_stored_report_is_caught(kb) -> None:
    conn, _v = kb
    report = queries.stored_diff_report(conn, 1, 2)
    ret = get_type_hints(queries.stored_diff_report, localns=vars(shapes))["return"]
    report["changes"][0]["patched"] = True
    with pytest.raises(AssertionError, match=r"DiffChange has undeclared keys \['patched'\]"):
        check_shape(report, ret, "report", [])
    del report["changes"][0]["patched"]
    report["changes"][0]["classification"] = "renamed"
    with pytest.raises(AssertionError, match="'renamed' is none of"):
        check_shape(report, ret, "report", [])


def test_lineage_records_match_their_shape(kb) -> None:
    conn, v = kb
    keys: dict[str, set[str]] = {}
    records = queries.lineage_records(conn)
    check_shape(
        records,
        get_type_hints(queries.lineage_records, localns=vars(shapes))["return"],
        "lineage",
        [],
        scalars=True,
    )
    for vid, rec in records.items():
        check_shape(rec, shapes.LineageRecord, f"lineage[{vid}]", [], scalars=True, keys=keys)
    methods = {vid: rec["method"] for vid, rec in records.items() if rec is not None}
    assert methods == {1: "first", 2: "related", v["mt1"]: "new-program", v["mt2"]: "base"}
    # a --base candidate names no program; the weighed candidates of a choice do
    assert "program" not in records[v["mt2"]]["candidates"][0]
    assert all("program" in c for c in records[v["mt1"]]["candidates"])
    assert _unseen(keys, shapes.LineageRecord, shapes.LineageCandidate) == {}
    # version_info hands the same record back
    assert queries.version_info(conn, v["mt2"])["lineage"] == records[v["mt2"]]


def test_thread_facts_match_their_shape(kb) -> None:
    conn, v = kb
    keys: dict[str, set[str]] = {}
    facts = queries.thread_facts(conn, v["mt1"])
    check_shape(
        facts,
        get_type_hints(queries.thread_facts, localns=vars(shapes))["return"],
        "facts",
        [],
        scalars=True,
        keys=keys,
    )
    arms = typing.get_args(shapes.ThreadFact)
    kinds = {get_type_hints(a)["kind"].__args__[0] for a in arms}
    assert {f["kind"] for f in facts} == kinds  # every kind occurs
    assert _unseen(keys, *arms, shapes.LockEvidence) == {}
    # one function's facts, and the analysis result, have the same shapes
    lock = next(f for f in facts if f["kind"] == "lock")
    one = queries.thread_facts(conn, v["mt1"], lock["func_index"])
    assert lock in one
    result = queries.analysis_result(conn, v["mt1"])
    check_shape(result, shapes.AnalysisResult, "result", [], scalars=True)
    assert result["thread_facts"] == facts
