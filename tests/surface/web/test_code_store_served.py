"""`kbtool serve` on a version whose code preparation is kept on disk (issue 30 point 1):
the studio's windows of disassembly and C are the very answers of a server that built it
from the KB, and a rename made after it was kept is served with the new name."""

from __future__ import annotations

import pytest

from kbtool.kb import gate, queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.services import code, code_prepared


@pytest.fixture
def store(tmp_path, monkeypatch):
    d = tmp_path / "store"
    monkeypatch.setenv("KBTOOL_CODE_CACHE_DIR", str(d))
    code.clear_cache()
    yield d
    code_prepared.flush_store()
    code.clear_cache()


def _served(db, functions: list[int]) -> tuple[list, str]:
    """A fresh server's (caches cleared) windows of each function, and how its preparation
    came about (kept on disk or built)."""
    from starlette.testclient import TestClient

    from kbtool.web import app as webapp

    code.clear_cache()
    client = TestClient(webapp.create_app(str(db)), base_url="http://127.0.0.1")
    answers = []
    for i in functions:
        for kind in ("wasm", "c"):
            for offset in (0, 40):
                r = client.get(f"/api/disasm/1/{i}?kind={kind}&offset={offset}&limit=40")
                assert r.status_code == 200, r.text
                answers.append(r.json())
    conn = open_ro(db)
    try:
        how = code_prepared.code_module(conn, 1).store
    finally:
        conn.close()
    code_prepared.flush_store()
    return answers, how


def test_served_code_from_a_kept_preparation(demo_kb, store, monkeypatch):
    conn = open_ro(demo_kb)
    try:
        fns = [f["index"] for f in queries.list_functions(conn, 1)]
        fns = sorted(fns, key=lambda i: -queries.get_function(conn, 1, i)["instr_count"])[:6]
    finally:
        conn.close()
    with monkeypatch.context() as m:
        m.setenv("KBTOOL_CODE_CACHE_DIR", "off")
        truth, how = _served(demo_kb, fns)
    assert how == ""
    assert _served(demo_kb, fns) == (truth, "built")
    assert _served(demo_kb, fns) == (truth, "use")

    rw = open_rw(demo_kb)
    try:
        sid = queries.get_function(rw, 1, fns[0])["stable_id"]
        gate.human_rename(rw, sid, "served_after_keeping", actor="test")
        rw.commit()
    finally:
        rw.close()
    renamed, how = _served(demo_kb, fns)
    assert how == "renamed"
    assert renamed != truth
    assert any("served_after_keeping" in "".join(a["lines"]) for a in renamed)
    with monkeypatch.context() as m:
        m.setenv("KBTOOL_CODE_CACHE_DIR", "off")
        assert _served(demo_kb, fns)[0] == renamed
