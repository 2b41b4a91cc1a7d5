"""A fresh server's first screen of disassembly, made before its version is prepared
(kbtool.services.code_first, issue 30 point 1): the very answer the prepared version gives
(same lines, names, data labels, strings, stable id and knowledge) for the largest, a median
and a small function of a real KB, with the version still unprepared after it; a KB changed
since the preparation was kept, or no kept preparation, is answered by preparing as before."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from kbtool.kb import gate, queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.errors import ImportedFunctionError, UnknownFunctionError
from kbtool.services import code, code_first, code_prepared
from kbtool.web import app as webapp

WINDOWS = [(0, 300), (0, 1), (40, 60), (0, 2000)]  # the studio's first window, and others


@pytest.fixture
def store(tmp_path, monkeypatch):
    d = tmp_path / "store"
    monkeypatch.setenv("KBTOOL_CODE_CACHE_DIR", str(d))
    code.clear_cache()
    yield d
    code_prepared.flush_store()
    code.clear_cache()


def _picks(db) -> list[int]:
    """The largest, a median and the smallest defined function of version 1."""
    rows = _sizes(db)
    return [rows[-1][1], rows[len(rows) // 2][1], rows[0][1]]


def _sizes(db) -> list[tuple[int, int]]:
    conn = open_ro(db)
    try:
        return sorted(
            (queries.get_function(conn, 1, f["index"])["instr_count"], f["index"])
            for f in queries.list_functions(conn, 1)
        )
    finally:
        conn.close()


def _keep(db) -> None:
    conn = open_ro(db)
    try:
        assert code_prepared.keep_prepared(conn, 1) == "built"
    finally:
        conn.close()
    code.clear_cache()  # a fresh process from here on


def _get(client: TestClient, vid: int, index: int, offset: int, limit: int) -> dict:
    r = client.get(f"/api/disasm/{vid}/{index}?kind=wasm&offset={offset}&limit={limit}")
    assert r.status_code == 200, r.text
    return r.json()


def _warm(db, picks: list[int], every: list[int] = ()) -> dict:
    """The answers of a server whose version is prepared."""
    code.clear_cache()
    client = TestClient(webapp.create_app(str(db)), base_url="http://127.0.0.1")
    conn = open_ro(db)
    try:
        code_prepared.code_module(conn, 1)
    finally:
        conn.close()
    return _answers(client, picks, every)


def _answers(client: TestClient, picks: list[int], every: list[int] = ()) -> dict:
    """The picks' windows (WINDOWS), and every other function's first window."""
    out = {(i, o, n): _get(client, 1, i, o, n) for i in picks for o, n in WINDOWS}
    out.update({(i, 0, 300): _get(client, 1, i, 0, 300) for i in every})
    return out


def _prepared(db) -> bool:
    conn = open_ro(db)
    try:
        return code_prepared.is_cached(conn, 1)
    finally:
        conn.close()


def test_fresh_first_screens_are_the_prepared_ones(demo_kb, store):
    picks = _picks(demo_kb)
    every = [i for _n, i in _sizes(demo_kb)]
    _keep(demo_kb)
    client = TestClient(webapp.create_app(str(demo_kb)), base_url="http://127.0.0.1")
    fresh = _answers(client, picks, every)
    assert not _prepared(demo_kb)  # every one of them answered without the preparation
    conn = open_ro(demo_kb)
    try:  # the strings of constants were looked up in the data segments' map
        dmap = code_first.light_module(conn, 1).cm.lm.dmap
        assert dmap._map is not None and dmap.hi > dmap.lo
    finally:
        conn.close()
    warm = _warm(demo_kb, picks, every)
    assert fresh == warm
    lines = [line for a in fresh.values() for line in a["lines"]]
    assert any(" call " in line and "<" in line for line in lines)  # callee names
    assert any(";; " in line and '"' not in line for line in lines)  # data labels
    assert any(";; " in line and '"' in line for line in lines)  # strings
    first = fresh[(picks[0], 0, 300)]
    assert first["stable_id"] and "knowledge" in first
    assert first["total"] > 300 or first["next_offset"] is None


def test_fresh_first_screen_then_the_prepared_version(demo_kb, store):
    """A window past the first screen, and the C, prepare the version (as before); the
    first screens after it are the prepared version's."""
    big = _picks(demo_kb)[0]
    _keep(demo_kb)
    conn = open_ro(demo_kb)
    try:
        light, sid = code_first.first_window(conn, 1, big, 0, 300)
        assert not code_prepared.is_cached(conn, 1)
        assert code_first.first_window(conn, 1, big, 0, 2001) is None  # past the first screen
        c = code.code_window(conn, 1, big, kind="c", offset=0, limit=40)
        assert c["lines"] and code_prepared.is_cached(conn, 1)
        assert code_first.first_window(conn, 1, big, 0, 300) is None  # prepared: the usual path
        assert code.code_window(conn, 1, big, kind="wasm", offset=0, limit=300) == light
        assert code_prepared.code_module(conn, 1).check(big).stable_id == sid
    finally:
        conn.close()


def test_errors_are_those_of_the_prepared_version(demo_kb, store):
    _keep(demo_kb)
    conn = open_ro(demo_kb)
    try:
        every = queries.list_functions(conn, 1, include_imports=True)
        defined = {f["index"] for f in queries.list_functions(conn, 1)}
        imports = [f["index"] for f in every if f["index"] not in defined]
        n = len(every)
        with pytest.raises(UnknownFunctionError) as light_err:
            code_first.first_window(conn, 1, n + 5, 0, 300)
        if imports:
            with pytest.raises(ImportedFunctionError):
                code_first.first_window(conn, 1, imports[0], 0, 300)
        assert not code_prepared.is_cached(conn, 1)
        with pytest.raises(UnknownFunctionError) as full_err:
            code.code_window(conn, 1, n + 5, kind="wasm", offset=0, limit=300)
        assert str(light_err.value) == str(full_err.value)
    finally:
        conn.close()
    client = TestClient(webapp.create_app(str(demo_kb)), base_url="http://127.0.0.1")
    r = client.get("/api/disasm/999/0?kind=wasm&offset=0&limit=300")
    assert r.status_code == 404 and "999" in r.json()["error"]


def test_a_changed_kb_or_no_kept_preparation_prepares(demo_kb, store, monkeypatch):
    picks = _picks(demo_kb)
    _keep(demo_kb)
    rw = open_rw(demo_kb)
    try:
        sid = queries.get_function(rw, 1, picks[0])["stable_id"]
        gate.human_rename(rw, sid, "renamed_after_keeping", actor="test")
        rw.commit()
    finally:
        rw.close()
    conn = open_ro(demo_kb)
    try:
        assert code_first.first_window(conn, 1, picks[0], 0, 300) is None  # names changed
    finally:
        conn.close()
    client = TestClient(webapp.create_app(str(demo_kb)), base_url="http://127.0.0.1")
    got = _get(client, 1, picks[0], 0, 300)
    assert "renamed_after_keeping" in got["lines"][0]
    assert got == _warm(demo_kb, picks)[(picks[0], 0, 300)]
    monkeypatch.setenv("KBTOOL_CODE_CACHE_DIR", "off")
    code.clear_cache()
    conn = open_ro(demo_kb)
    try:
        assert code_first.first_window(conn, 1, picks[0], 0, 300) is None  # nothing kept
    finally:
        conn.close()


def test_serve_makes_the_light_modules_as_it_starts(demo_kb, store):
    """`kbtool serve` (prepare_at_start) makes the newest versions' light modules before it
    answers: a page's first screen then reads them; the answers are the prepared ones."""
    picks = _picks(demo_kb)
    _keep(demo_kb)
    conn = open_ro(demo_kb)
    try:
        assert code_prepared.keep_prepared(conn, 2) == "built"
    finally:
        conn.close()
    code.clear_cache()
    app = webapp.create_app(str(demo_kb), prepare_at_start=True)
    assert app.state.adapter.light == 2
    conn = open_ro(demo_kb)
    try:
        assert code_first.has_light(conn, 1) and code_first.has_light(conn, 2)
        dmap = code_first.light_module(conn, 1).cm.lm.dmap
        assert dmap._map is not None  # built at start, not by the first string shown
    finally:
        conn.close()
    client = TestClient(app, base_url="http://127.0.0.1")
    fresh = {(i, 0, 300): _get(client, 1, i, 0, 300) for i in picks}
    assert fresh == {k: v for k, v in _warm(demo_kb, picks).items() if k in fresh}
