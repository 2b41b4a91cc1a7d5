"""A huge function's whole ``GET /api/disasm`` (the Disassembly object) from its disassembly
and C kept on disk (kbtool.services.code_kept_c, issue 30): a fresh server answers it
without preparing the version and without decoding or lifting the function, and the answer
is the prepared server's, byte for byte; a KB changed since (a rename of the function), a
damaged kept file or other rendering code is a miss, answered as before. Windows of its
disassembly past the first screen are slices of the kept one (fresh or prepared), the same
windows as the decode-only pass gives."""

from __future__ import annotations

import marshal
import zlib

import pytest
from starlette.testclient import TestClient

from kbtool.kb import gate, queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.services import code, code_first, code_function, code_kept_c, code_prepared, disk_cap
from kbtool.web import app as webapp


@pytest.fixture
def store(tmp_path, monkeypatch):
    d = tmp_path / "store"
    monkeypatch.setenv("KBTOOL_CODE_CACHE_DIR", str(d))
    # the demo's bodies are small: every one counts as huge (its 16 largest are kept)
    monkeypatch.setattr(code_kept_c, "MIN_BODY", 1)
    code.clear_cache()
    yield d
    code_prepared.flush_store()
    code.clear_cache()


def _keep(db) -> list[int]:
    """Version 1 kept as ``python -m kbtool.services.code_store`` keeps it (its preparation,
    its largest functions' C and whole disassembly); their indices, largest first."""
    conn = open_ro(db)
    try:
        assert code_prepared.keep_prepared(conn, 1) == "built"
        code.clear_cache()
        code_kept_c.keep_version(conn, 1)
        huge = code_kept_c.largest(code_prepared.code_module(conn, 1))
    finally:
        conn.close()
    code.clear_cache()  # a fresh process from here on
    return huge


def _client(db) -> TestClient:
    return TestClient(webapp.create_app(str(db)), base_url="http://127.0.0.1")


def _whole(client: TestClient, index: int) -> bytes:
    r = client.get(f"/api/disasm/1/{index}")
    assert r.status_code == 200, r.text
    return r.content


def _prepared(db) -> bool:
    conn = open_ro(db)
    try:
        return code_prepared.is_cached(conn, 1)
    finally:
        conn.close()


def _truth(db, indices: list[int], monkeypatch) -> dict[int, bytes]:
    """The prepared server's answers, made by decoding and lifting (nothing kept)."""
    with monkeypatch.context() as m:
        m.setenv("KBTOOL_CODE_CACHE_DIR", "off")
        code.clear_cache()
        client = _client(db)
        conn = open_ro(db)
        try:
            code_prepared.code_module(conn, 1)
        finally:
            conn.close()
        out = {i: _whole(client, i) for i in indices}
    code.clear_cache()
    return out


def _no_decode(*args, **kwargs):
    raise AssertionError("decoded")


def test_fresh_servers_whole_disasm_is_the_prepared_servers(demo_kb, store, monkeypatch):
    huge = _keep(demo_kb)
    assert len(huge) == code_kept_c.PER_VERSION
    kept = sorted(store.glob(f"*{code_kept_c.LISTING_SUFFIX}"))
    assert len(kept) == len(huge)
    c_key = _c_key(demo_kb)
    for i in huge:  # kept compressed: the file is much smaller than the text it gives back
        path = code_kept_c._file(c_key[0], i, code_kept_c.LISTING_SUFFIX)
        assert path in kept and path.read_bytes().startswith(code_kept_c.LISTING_MAGIC)
        text, calls = code_kept_c.load_listing(c_key, i)
        assert text == _listing_text(demo_kb, i)
        assert calls == code_function.listing_calls(_listing(demo_kb, i))
        assert path.stat().st_size * 3 < len(text.encode())
    picks = huge[:4]
    truth = _truth(demo_kb, picks, monkeypatch)
    client = _client(demo_kb)
    with monkeypatch.context() as m:  # read back: never decoded, never lifted
        m.setattr(code_function, "_records", _no_decode)
        m.setattr(code_function, "_lift", _no_decode)
        fresh = {i: _whole(client, i) for i in picks}
        assert not _prepared(demo_kb)  # not even the version's preparation
        # the prepared version reads them too (the same bytes)
        conn = open_ro(demo_kb)
        try:
            code_prepared.code_module(conn, 1)
        finally:
            conn.close()
        prepared = {i: _whole(client, i) for i in picks}
    assert fresh == truth == prepared
    answer = client.get(f"/api/disasm/1/{picks[0]}").json()
    assert answer["mnemonics"] and answer["lifted_c"] and answer["stable_id"]
    assert answer["call_lines"] == code_function.listing_calls(_listing(demo_kb, picks[0]))
    assert any(a for a in (client.get(f"/api/disasm/1/{i}").json()["call_lines"] for i in huge))


def _listing_text(db, index: int) -> str:
    """The function's whole disassembly rendered from its decoded listing (nothing kept)."""
    return code_function.render_listing(_listing(db, index))


def _listing(db, index: int):
    conn = open_ro(db)
    try:
        return code.listing(conn, 1, index)
    finally:
        conn.close()


def test_a_rename_after_keeping_is_shown(demo_kb, store, monkeypatch):
    huge = _keep(demo_kb)
    big = huge[0]
    client = _client(demo_kb)  # a server that answered it (and holds the answer) before
    before = _whole(client, big)
    assert _whole(client, big) == before and not _prepared(demo_kb)
    rw = open_rw(demo_kb)
    try:
        sid = queries.get_function(rw, 1, big)["stable_id"]
        gate.human_rename(rw, sid, "renamed_after_keeping", actor="test")
        rw.commit()
    finally:
        rw.close()
    conn = open_ro(demo_kb)
    try:
        assert code_first.whole_function(conn, 1, big) is None  # the kept ones are stale
    finally:
        conn.close()
    got = _whole(client, big)
    assert b"renamed_after_keeping" in got and b"renamed_after_keeping" not in before
    assert got == _truth(demo_kb, [big], monkeypatch)[big]


@pytest.mark.parametrize(
    "change", ["damaged", "truncated", "renderer", "uncompressed", "not deflate", "not marshal"]
)
def test_a_damaged_file_or_other_renderer_is_a_miss(demo_kb, store, monkeypatch, change):
    big = _keep(demo_kb)[0]
    c_key = _c_key(demo_kb)
    path = code_kept_c._file(c_key[0], big, code_kept_c.LISTING_SUFFIX)
    assert path is not None and path.exists()
    text, calls = code_kept_c.load_listing(c_key, big)
    code.clear_cache()

    def frame(value, magic=code_kept_c.LISTING_MAGIC) -> bool:
        return disk_cap.write_framed(path, magic, value, "x")

    if change == "damaged":
        blob = bytearray(path.read_bytes())
        blob[-10] ^= 0xFF
        path.write_bytes(bytes(blob))
    elif change == "truncated":
        path.write_bytes(path.read_bytes()[:100])
    elif change == "renderer":
        monkeypatch.setattr(code_kept_c, "_LISTING_DIGEST", ["another renderer"])
    elif change == "uncompressed":  # the same listing as kept before it was compressed
        value = [code_kept_c._listing_header(c_key, big), [text, [list(c) for c in calls]]]
        assert frame(value, code_kept_c.MAGIC)
    elif change == "not deflate":  # framed and digested, but not a zlib stream
        assert frame(marshal.dumps([code_kept_c._listing_header(c_key, big), [text, calls]]))
    else:  # a zlib stream of something marshal cannot read
        assert frame(zlib.compress(b"\xff" + text.encode()))
    conn = open_ro(demo_kb)
    try:
        assert code_first.whole_function(conn, 1, big) is None
    finally:
        conn.close()
    got = _whole(_client(demo_kb), big)  # decoded as before, and kept again
    assert got == _truth(demo_kb, [big], monkeypatch)[big]
    code.clear_cache()
    conn = open_ro(demo_kb)
    try:
        with monkeypatch.context() as m:
            m.setattr(code_function, "_records", _no_decode)
            assert code_first.whole_function(conn, 1, big) is not None
    finally:
        conn.close()


def _c_key(db) -> tuple:
    conn = open_ro(db)
    try:
        return code_prepared.code_module(conn, 1).c_key
    finally:
        conn.close()


def test_errors_are_the_prepared_ones(demo_kb, store, monkeypatch):
    _keep(demo_kb)
    conn = open_ro(demo_kb)
    try:
        every = queries.list_functions(conn, 1, include_imports=True)
        defined = {f["index"] for f in queries.list_functions(conn, 1)}
    finally:
        conn.close()
    imports = [f["index"] for f in every if f["index"] not in defined]
    assert imports
    paths = [f"/api/disasm/1/{len(every) + 5}", "/api/disasm/999/0", "/api/disasm/1/-1"]
    paths += [f"/api/disasm/1/{i}" for i in imports[:1]]

    def answers(client: TestClient) -> list:
        return [(r.status_code, r.json()) for r in map(client.get, paths)]

    fresh = answers(_client(demo_kb))
    assert not _prepared(demo_kb)
    with monkeypatch.context() as m:
        m.setenv("KBTOOL_CODE_CACHE_DIR", "off")
        code.clear_cache()
        assert answers(_client(demo_kb)) == fresh
    assert fresh[0][0] == 404 and str(len(every) + 5) in fresh[0][1]["error"]


WINDOWS = [(0, 2001), (40, 30), (45, 10), (0, 300), (300, 300), (1990, 300), (100, 5000)]


def _window(client: TestClient, index: int, offset: int, limit: int) -> dict:
    r = client.get(f"/api/disasm/1/{index}?kind=wasm&offset={offset}&limit={limit}")
    assert r.status_code == 200, r.text
    return r.json()


def test_windows_past_the_first_screen_are_the_kept_listings(demo_kb, store, monkeypatch):
    # a first screen of 50 lines: the demo's functions have more than that
    monkeypatch.setattr(code_function, "FIRST_SCREEN", 50)
    monkeypatch.setattr(code_first, "FIRST_SCREEN", 50)
    huge = _keep(demo_kb)[:4]
    tails = {i: len(_listing(demo_kb, i).instrs) for i in huge}
    code.clear_cache()
    keys = [(i, o, n) for i in huge for o, n in [*WINDOWS, (tails[i] - 3, 10), (tails[i] + 9, 5)]]
    with monkeypatch.context() as m:
        m.setenv("KBTOOL_CODE_CACHE_DIR", "off")
        code.clear_cache()
        client = _client(demo_kb)
        truth = {k: _window(client, *k) for k in keys}  # the decode-only pass's windows
    assert any(t["next_offset"] for t in truth.values())
    code.clear_cache()
    client = _client(demo_kb)
    with monkeypatch.context() as m:
        m.setattr(code_function, "skim", _no_decode)
        fresh = {k: _window(client, *k) for k in keys}
        assert not _prepared(demo_kb)  # read from the kept listings by the light module
        conn = open_ro(demo_kb)
        try:
            code_prepared.code_module(conn, 1)
        finally:
            conn.close()
        moved = {k: _window(client, *k) for k in keys}  # the held lines, handed over
        code.clear_cache()
        conn = open_ro(demo_kb)
        try:
            code_prepared.code_module(conn, 1)
        finally:
            conn.close()
        prepared = {k: _window(client, *k) for k in keys}  # read by the prepared version
    assert fresh == truth
    assert moved == prepared == truth
