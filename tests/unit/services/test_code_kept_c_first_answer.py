"""A huge function's first screen comes with its C when the C is kept on disk (issue 30
points 1-2): ``function_code(lift=False)`` reads the kept C (never lifts) instead of
answering ``c_pending``; after any write to the KB (a rename through the gate) it answers
``c_pending`` again, never the old C."""

from __future__ import annotations

import pytest

from kbtool.kb import gate, queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.services import code as code_service
from kbtool.services import code_function, code_kept_c, code_prepared


@pytest.fixture
def store(tmp_path, monkeypatch):
    d = tmp_path / "store"
    monkeypatch.setenv("KBTOOL_CODE_CACHE_DIR", str(d))
    # the demo's bodies are under 32 KB: its four largest (14-19 KB) count as huge
    monkeypatch.setattr(code_kept_c, "MIN_BODY", 14_000)
    code_service.clear_cache()
    yield d
    code_prepared.flush_store()
    code_service.clear_cache()


def _no_lift(cm, index):
    raise AssertionError(f"function {index} lifted")


def _first_screen(db, index: int, monkeypatch) -> dict:
    """A fresh process's first screen of ``index`` (caches cleared; lifting fails)."""
    code_service.clear_cache()
    conn = open_ro(db)
    try:
        with monkeypatch.context() as m:
            m.setattr(code_function, "_lift", _no_lift)
            d, _records = code_service.function_code(conn, 1, index, max_lines=50, lift=False)
            d = dict(d)
            if not d.get("c_pending"):  # held: the whole answer after it does not lift
                assert code_service.lifted_c(conn, 1, index)[0] == d["lifted_c"]
            return d
    finally:
        conn.close()
        code_prepared.flush_store()


def _lifted(db, index: int) -> tuple:
    code_service.clear_cache()
    conn = open_ro(db)
    try:
        return code_service.lifted_c(conn, 1, index)
    finally:
        conn.close()
        code_prepared.flush_store()


def test_first_screen_has_the_kept_c(demo_kb, store, monkeypatch):
    conn = open_ro(demo_kb)
    try:
        big = code_kept_c.largest(code_prepared.code_module(conn, 1))[0]
    finally:
        conn.close()
    first = _first_screen(demo_kb, big, monkeypatch)
    assert first["partial"] and first["c_pending"] and first["lifted_c"] == ""  # none kept
    c, truncated, reason = _lifted(demo_kb, big)  # lifted, then kept on disk
    first = _first_screen(demo_kb, big, monkeypatch)
    assert first["partial"] and "c_pending" not in first
    assert (first["lifted_c"], first["truncated"], first["reason"]) == (c, truncated, reason)


def test_first_screen_after_a_rename_is_pending_again(demo_kb, store, monkeypatch):
    conn = open_rw(demo_kb)
    try:
        graph = code_service.callgraph(conn, 1)
        big, callee = next(
            (i, e["callee"])
            for i in code_kept_c.largest(code_prepared.code_module(conn, 1))
            for e in graph["edges"]
            if e["caller"] == i
        )
        before = _lifted(demo_kb, big)[0]
        assert _first_screen(demo_kb, big, monkeypatch)["lifted_c"] == before
        sid = queries.get_function(conn, 1, callee)["stable_id"]
        gate.human_rename(conn, sid, "callee_renamed_first_screen", actor="test")
        conn.commit()
    finally:
        conn.close()
    first = _first_screen(demo_kb, big, monkeypatch)
    assert first["c_pending"] and first["lifted_c"] == ""  # not the C kept before the rename
    after = _lifted(demo_kb, big)[0]
    assert "callee_renamed_first_screen" in after
    assert _first_screen(demo_kb, big, monkeypatch)["lifted_c"] == after
