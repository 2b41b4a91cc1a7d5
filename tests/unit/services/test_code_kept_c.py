"""The lifted C of a version's huge functions kept on disk (issue 30 points 1-2): a fresh
process serves it without lifting, byte-identical to a lift; any write to the KB (a rename
of a callee through the gate), another lifter or a damaged file is a miss (lifted again)."""

from __future__ import annotations

import pytest

from kbtool.kb import gate, queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.services import code as code_service
from kbtool.services import code_function, code_kept_c, code_prepared, code_store


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


def _largest(db) -> int:
    conn = open_ro(db)
    try:
        return code_kept_c.largest(code_prepared.code_module(conn, 1))[0]
    finally:
        conn.close()


def _c(db, index: int, *, lift: bool = True) -> tuple:
    """A fresh process's C of ``index`` (caches cleared); ``lift=False``: lifting fails."""
    code_service.clear_cache()
    conn = open_ro(db)
    try:
        if lift:
            return code_service.lifted_c(conn, 1, index)
        with pytest.MonkeyPatch.context() as m:
            m.setattr(code_function, "_lift", _no_lift)
            return code_service.lifted_c(conn, 1, index)
    finally:
        conn.close()
        code_prepared.flush_store()


def _no_lift(cm, index):
    raise AssertionError(f"function {index} lifted")


def _truth(db, index: int, monkeypatch) -> tuple:
    with monkeypatch.context() as m:
        m.setenv("KBTOOL_CODE_CACHE_DIR", "off")
        return _c(db, index)


def test_huge_function_c_is_served_without_a_lift(demo_kb, store, monkeypatch):
    big = _largest(demo_kb)
    truth = _truth(demo_kb, big, monkeypatch)
    assert _c(demo_kb, big) == truth  # lifted, then kept
    assert len(list(store.glob(f"*{code_kept_c.SUFFIX}"))) == 1
    assert _c(demo_kb, big, lift=False) == truth  # read back, not lifted
    # every surface's path (the Disassembly object, a window of C lines) gets it too
    code_service.clear_cache()
    conn = open_ro(demo_kb)
    try:
        with monkeypatch.context() as m:
            m.setattr(code_function, "_lift", _no_lift)
            assert code_service.disassembly(conn, 1, big)["lifted_c"] == truth[0]
            code_service.clear_cache()
            win = code_service.code_window(conn, 1, big, kind="c", offset=0, limit=5)
            assert win["lines"] == truth[0].splitlines()[:5]
    finally:
        conn.close()
    # a small function is never kept
    cm = _cm(demo_kb)
    small = next(
        i
        for i in range(cm.lm.module.num_func_imports, cm.num_functions)
        if code_kept_c.body_size(cm.lm, i) < code_kept_c.MIN_BODY
    )
    _c(demo_kb, small)
    assert len(list(store.glob(f"*{code_kept_c.SUFFIX}"))) == 1


def _cm(db):
    conn = open_ro(db)
    try:
        return code_prepared.code_module(conn, 1)
    finally:
        conn.close()


def test_rename_of_a_callee_shows_at_once(demo_kb, store, monkeypatch):
    conn = open_rw(demo_kb)
    try:
        graph = code_service.callgraph(conn, 1)
        big, callee = next(
            (i, e["callee"])
            for i in code_kept_c.largest(code_prepared.code_module(conn, 1))
            for e in graph["edges"]
            if e["caller"] == i
        )
        before = _c(demo_kb, big)  # lifted and kept
        assert _c(demo_kb, big, lift=False) == before  # served as kept
        sid = queries.get_function(conn, 1, callee)["stable_id"]
        gate.human_rename(conn, sid, "callee_renamed_after_keep", actor="test")
        conn.commit()
    finally:
        conn.close()
    with pytest.raises(AssertionError, match="lifted"):
        _c(demo_kb, big, lift=False)  # the kept C is not served after the write
    c = _c(demo_kb, big)
    assert "callee_renamed_after_keep" in c[0]
    assert c == _truth(demo_kb, big, monkeypatch)
    assert _c(demo_kb, big, lift=False) == c  # kept again at the new token


@pytest.mark.parametrize("change", ["damaged", "lifter", "truncated"])
def test_damaged_file_or_other_lifter_is_a_miss(demo_kb, store, monkeypatch, change):
    big = _largest(demo_kb)
    truth = _c(demo_kb, big)
    (path,) = store.glob(f"*{code_kept_c.SUFFIX}")
    if change == "damaged":
        blob = bytearray(path.read_bytes())
        blob[-10] ^= 0xFF
        path.write_bytes(bytes(blob))
    elif change == "truncated":
        path.write_bytes(path.read_bytes()[:100])
    else:
        monkeypatch.setattr(code_kept_c, "_SOURCE_DIGEST", ["another lifter"])
    with pytest.raises(AssertionError, match="lifted"):
        _c(demo_kb, big, lift=False)
    assert _c(demo_kb, big) == truth


def test_store_command_keeps_the_largest_functions_c(demo_kb, store, capsys):
    assert code_store.main(["--db", str(demo_kb), "--version", "1"]) == 0
    assert "the C of 4 huge functions kept" in capsys.readouterr().out
    assert len(list(store.glob(f"*{code_kept_c.SUFFIX}"))) == 4
    cm = _cm(demo_kb)
    for i in code_kept_c.largest(cm):
        assert code_kept_c.load(cm.c_key, i) is not None
    assert code_store.main(["--db", str(demo_kb), "--version", "1"]) == 0
    assert "the C of 0 huge functions kept" in capsys.readouterr().out
