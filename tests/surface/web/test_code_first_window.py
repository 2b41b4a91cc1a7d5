"""A fresh server's first screen of disassembly, made before its version is prepared
(kbtool.services.code_first, issue 30 point 1): the very answer the prepared version gives
(same lines, names, data labels, strings, stable id and knowledge) for the largest, a median
and a small function of a real KB, with the version still unprepared after it; a KB changed
since the preparation was kept, or no kept preparation, is answered by preparing as before."""

from __future__ import annotations

import time

import pytest
from starlette.testclient import TestClient

from kbtool.kb import gate, queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.errors import ImportedFunctionError, UnknownFunctionError
from kbtool.services import code, code_first, code_kept_c, code_prepared
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


def _get_c(client: TestClient, vid: int, index: int, offset: int, limit: int) -> dict:
    r = client.get(f"/api/disasm/{vid}/{index}?kind=c&offset={offset}&limit={limit}")
    assert r.status_code == 200, r.text
    return r.json()


def _keep_c(db, monkeypatch) -> tuple[list[int], int]:
    """Version 1's preparation and its huge functions' C kept (every body counts as huge
    here: the demo's are small), as `python -m kbtool.services.code_store` keeps them; (the
    functions whose C is kept, a function whose C is not)."""
    monkeypatch.setattr(code_kept_c, "MIN_BODY", 1)
    _keep(db)
    conn = open_ro(db)
    try:
        assert code_kept_c.keep_version(conn, 1) > 0
        cm = code_prepared.code_module(conn, 1)
        huge = code_kept_c.largest(cm)
        small = next(i for _n, i in _sizes(db) if not code_kept_c.wanted(cm, i))
    finally:
        conn.close()
    code.clear_cache()  # a fresh process from here on
    return huge[:3], small


C_WINDOWS = [(0, 300), (0, 1), (5, 7), (40, 60), (0, 20_000)]


def test_fresh_c_of_a_huge_function_is_the_kept_one(demo_kb, store, monkeypatch):
    """A fresh server's C window of a function whose C is kept (the studio's C view of the
    largest, on a version not prepared yet) is answered from the kept C, without preparing
    the version, and is the prepared version's answer (lines, totals, stable id, knowledge);
    a function without kept C, or kept C made by other code, is lifted as before."""
    huge, small = _keep_c(demo_kb, monkeypatch)
    client = TestClient(webapp.create_app(str(demo_kb)), base_url="http://127.0.0.1")
    fresh = {(i, o, n): _get_c(client, 1, i, o, n) for i in huge for o, n in C_WINDOWS}
    assert not _prepared(demo_kb)  # every one of them without the version's preparation
    first = fresh[(huge[0], 0, 300)]
    assert first["kind"] == "c" and first["lines"] and first["stable_id"]
    assert "knowledge" in first
    assert any("(" in line for line in first["lines"])
    conn = open_ro(demo_kb)
    try:  # prepared now: the kept C's lines held go to the prepared version's paging
        cm = code_prepared.code_module(conn, 1)
        assert code_first.first_c_window(conn, 1, huge[0], 0, 300) is None
        held = code_prepared._LINES.get((id(cm), huge[-1], "c"))  # the last one shown
        assert held is not None and held[1][:300] == fresh[(huge[-1], 0, 300)]["lines"]
        assert {k: _get_c(client, 1, *k) for k in fresh} == fresh
    finally:
        conn.close()
    code.clear_cache()
    warm_client = TestClient(webapp.create_app(str(demo_kb)), base_url="http://127.0.0.1")
    conn = open_ro(demo_kb)
    try:
        code_prepared.code_module(conn, 1)
        warm = {k: _get_c(warm_client, 1, *k) for k in fresh}
        assert fresh == warm
        code.clear_cache()
        assert code_first.first_c_window(conn, 1, small, 0, 300) is None  # not kept: lifted
        assert not code_prepared.is_cached(conn, 1)
        code.clear_cache()
        monkeypatch.setattr(code_kept_c, "_SOURCE_DIGEST", ["another lifter"])
        assert code_first.first_c_window(conn, 1, huge[0], 0, 300) is None  # not this C
        got = _get_c(TestClient(webapp.create_app(str(demo_kb)), base_url="http://127.0.0.1"),
                     1, huge[0], 0, 300)  # fmt: skip
        assert got == warm[(huge[0], 0, 300)] and code_prepared.is_cached(conn, 1)
        assert code_first.first_c_window(conn, 1, huge[0], 0, 300) is None  # prepared now
    finally:
        conn.close()


def test_fresh_c_errors_and_a_changed_kb(demo_kb, store, monkeypatch):
    huge, _small = _keep_c(demo_kb, monkeypatch)
    conn = open_ro(demo_kb)
    try:
        n = len(queries.list_functions(conn, 1, include_imports=True))
        with pytest.raises(UnknownFunctionError):
            code_first.first_c_window(conn, 1, n + 5, 0, 300)
        assert code_first.first_c_window(conn, 1, huge[0], 0, 300) is not None
    finally:
        conn.close()
    rw = open_rw(demo_kb)
    try:
        sid = queries.get_function(rw, 1, huge[0])["stable_id"]
        gate.human_rename(rw, sid, "renamed_after_keeping_c", actor="test")
        rw.commit()
    finally:
        rw.close()
    code.clear_cache()
    conn = open_ro(demo_kb)
    try:
        assert code_first.first_c_window(conn, 1, huge[0], 0, 300) is None  # names changed
    finally:
        conn.close()
    client = TestClient(webapp.create_app(str(demo_kb)), base_url="http://127.0.0.1")
    got = _get_c(client, 1, huge[0], 0, 20_000)
    assert any("renamed_after_keeping_c" in line for line in got["lines"])


def test_deep_link_answers_before_the_version_is_prepared(demo_kb, store, monkeypatch):
    """`kbtool serve` (prepare_ahead): a deep link's requests (function list, history, first
    lines, cross-references) are answered as without preparing ahead, and the version is
    prepared only once the requests have gone quiet (webapp.AHEAD_QUIET), then for good."""
    picks = _picks(demo_kb)
    _keep(demo_kb)
    conn = open_ro(demo_kb)
    try:
        sid = queries.get_function(conn, 1, picks[0])["stable_id"]
    finally:
        conn.close()
    paths = [
        "/api/versions/1/functions",
        f"/api/history/{sid}?version=1",
        f"/api/disasm/1/{picks[0]}?kind=wasm&offset=0&limit=300",
        f"/api/xrefs/1?target=%23{picks[0]}&limit=500",
    ]
    plain = TestClient(webapp.create_app(str(demo_kb)), base_url="http://127.0.0.1")
    expected = [plain.get(p).json() for p in paths]
    code.clear_cache()
    monkeypatch.setattr(webapp, "AHEAD_QUIET", 3600.0)  # not quiet before the test says so
    monkeypatch.setattr(webapp, "AHEAD_QUIET_MAX", 3600.0)
    app = webapp.create_app(str(demo_kb), prepare_ahead=True)
    adapter = app.state.adapter
    client = TestClient(app, base_url="http://127.0.0.1")
    before = time.monotonic()
    assert client.get("/").status_code == 200  # the page itself counts as a request:
    assert code_prepared._QUIET_SINCE[0] >= before  # background preparations wait for it
    got = []
    for p in paths:
        r = client.get(p)
        assert r.status_code == 200, r.text
        got.append(r.json())
    if adapter.panel_prepared is not None:
        adapter.panel_prepared.join(timeout=60)
    assert got == expected
    pending = adapter.prepared
    assert pending is not None and not pending.done() and not _prepared(demo_kb)
    assert client.get(paths[2]).status_code == 200
    assert adapter.prepared is pending  # one waiter for the version
    adapter.last_request = float("-inf")  # quiet now
    pending.result(timeout=60)
    assert _prepared(demo_kb)
    assert [client.get(p).json() for p in paths] == expected
