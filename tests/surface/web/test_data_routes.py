"""The data-model routes (issue 26) on a real `kbtool serve`: strings, globals, xrefs and
memory of an analysed module; 404 for unknown versions, targets and addresses, 400 for
malformed or out-of-bound parameters, JSON errors throughout."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pytest

from kbtool.kb.datamodel import drop_data_model
from kbtool.kb.db import open_rw
from kbtool.services.analyze import analyze_version
from kbtool.services.ingest import ingest_file
from testkit.wasmbuild import FIXTURES, build_wat, have_wabt
from tests.support.web import ServerProcess, request

pytestmark = pytest.mark.skipif(not have_wabt(), reason="wat2wasm not installed")
HOSTILE = "<img src=x onerror=__xss=9>"  # 27 bytes: the fixture's 32-byte string slot


def hostile_wat() -> str:
    """tests/fixtures/datamodel.wat with its string replaced by HOSTILE (same slot)."""
    wat = (FIXTURES / "datamodel.wat").read_text()
    pad = "\\00" * (32 - len(HOSTILE))
    old = '"create table %s' + "\\00" * 16 + '"'
    assert old in wat
    return wat.replace(old, '"' + HOSTILE + pad + '"')


def data_kb(d: Path, *, analyze: bool = True) -> Path:
    wasm = build_wat(hostile_wat(), d, name="hostile")
    db = d / "kb.db"
    conn = open_rw(str(db), create=True)
    try:
        ingest_file(conn, str(wasm), label="1.0")
        if analyze:
            analyze_version(conn, 1)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return db


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    db = data_kb(tmp_path_factory.mktemp("dataweb"))
    with ServerProcess(db) as srv:
        yield srv


def get(srv, path):
    status, headers, body = request(srv.port, path)
    assert headers["content-type"].startswith("application/json"), headers
    return status, json.loads(body)


def test_strings_globals_xrefs_memory(server):
    st, page = get(server, "/api/strings/1")
    assert st == 200 and page["total"] == 1 and page["items"][0]["text"] == HOSTILE
    assert page["items"][0]["refs"] == 1 and page["next_offset"] is None
    st, page = get(server, "/api/strings/1?q=ONERROR&limit=1")
    assert st == 200 and [i["text"] for i in page["items"]] == [HOSTILE]
    st, page = get(server, "/api/strings/1?q=nosuchtext")
    assert st == 200 and page["total"] == 0
    st, page = get(server, "/api/data/1?kind=funcptr_table")
    assert st == 200 and page["items"][0]["address"] == 1072

    st, gl = get(server, "/api/globals/1")
    assert st == 200 and gl[0]["name"] == "__stack_pointer" and gl[0]["role"] == "stack_pointer"
    assert gl[1]["name"] == "__heap_base"

    st, x = get(server, "/api/xrefs/1?target=g:__stack_pointer")
    assert st == 200 and x["total"] == 3 and {r["kind"] for r in x["refs"]} == {"read", "write"}
    st, x = get(server, "/api/xrefs/1?target=" + quote('"onerror'))
    assert st == 200 and x["target"]["text"] == HOSTILE and x["refs"][0]["func_index"] == 1
    st, x = get(server, "/api/xrefs/1?target=0x420")
    assert st == 200 and x["refs"][0]["kind"] == "load"
    st, x = get(server, "/api/xrefs/1?target=" + quote("#1"))
    assert st == 200 and x["target"]["kind"] == "function"
    assert any(u.get("text") == HOSTILE for u in x["uses"]["data"])
    st, x = get(server, "/api/xrefs/1?target=g:0&limit=1&offset=2")
    assert st == 200 and len(x["refs"]) == 1 and x["offset"] == 2

    st, m = get(server, "/api/memory/1?address=0x400&length=16")
    assert st == 200 and m["rows"][0]["ascii"] == HOSTILE[:16] and m["item"]["kind"] == "cstring"
    st, m = get(server, "/api/memory/1?address=1024")
    assert st == 200 and m["length"] == 64


@pytest.mark.parametrize(
    "path,status,words",
    [
        ("/api/strings/9", 404, "unknown version"),
        ("/api/globals/9", 404, "unknown version"),
        ("/api/xrefs/9?target=g:0", 404, "unknown version"),
        ("/api/memory/9?address=0x400", 404, "unknown version"),
        ("/api/strings/x", 400, "malformed"),
        ("/api/strings/1?limit=100000", 400, "out of range"),
        ("/api/strings/1?offset=-1", 400, "malformed"),
        ("/api/xrefs/1", 400, "missing query parameter target"),
        ("/api/xrefs/1?target=nosuchthing", 404, "matches nothing"),
        ("/api/xrefs/1?target=g:99", 404, "no global"),
        ("/api/xrefs/1?target=0x10", 404, "no data item"),
        ("/api/xrefs/1?target=" + quote('"never there'), 404, "no string"),
        ("/api/xrefs/1?target=" + "a" * 600, 400, "longer than"),
        ("/api/memory/1", 400, "missing query parameter address"),
        ("/api/memory/1?address=zz", 400, "malformed address"),
        ("/api/memory/1?address=0x10", 404, "outside the initialised data"),
        ("/api/memory/1?address=0x400&length=5000", 400, "out of range"),
        ("/api/memory/1?address=0x400&length=0", 400, "out of range"),
        ("/api/data/1?kind=nonsense", 400, "unknown kind"),
    ],
)
def test_bad_input(server, path, status, words):
    st, body = get(server, path)
    assert st == status, (path, body)
    assert words in body["error"], (path, body)


def test_no_model_is_a_404_with_the_fix(tmp_path):
    db = data_kb(tmp_path, analyze=False)
    conn = open_rw(str(db))
    with conn:  # a version ingested before ingest built the model
        drop_data_model(conn, 1)
    conn.close()
    with ServerProcess(db) as srv:
        st, body = get(srv, "/api/strings/1")
        assert st == 404 and "kbtool analyze 1" in body["error"]
