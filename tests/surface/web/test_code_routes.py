"""The studio's code routes through the pure router: ``/api/disasm/{v}/{i}``, ``/api/callgraph/{v}``."""

from __future__ import annotations

import json

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.web.router import route
from tests.support.codefixtures import (  # noqa: F401  (fixtures)
    HOSTILE_NAME,
    code_kb_fixture,
    code_kb_no_bytes_fixture,
)


def get(db, path: str) -> tuple[int, object]:
    status, ctype, body = route(str(db), path, {})
    assert ctype == "application/json"
    return status, json.loads(body)


def test_disasm_is_the_disassembly_object(code_kb):
    status, d = get(code_kb, "/api/disasm/1/4")
    assert status == 200
    assert "call $greet" in d["mnemonics"] and "int32_t main_4(int32_t p0)" in d["lifted_c"]
    conn = open_ro(code_kb)
    try:
        assert d["stable_id"] == queries.get_function(conn, 1, 4)["stable_id"]
    finally:
        conn.close()
    assert d["func_index"] == 4 and d["version_id"] == 1 and d["name"] == "main"


def test_untrusted_text_stays_literal_in_json(code_kb):
    _, body_bytes = route(str(code_kb), "/api/disasm/1/1", {})[1:]
    assert b"\x1b" not in body_bytes and b"\x07" not in body_bytes
    d = json.loads(body_bytes)
    assert '"</script><b>x</b>[bold red]markup[/] \\x1b[31mRED' in d["mnemonics"]  # escaped
    _, main_ = get(code_kb, "/api/disasm/1/4")
    assert HOSTILE_NAME.replace("\x1b", "\\x1b") in main_["mnemonics"]


def test_callgraph(code_kb):
    status, g = get(code_kb, "/api/callgraph/2")
    assert status == 200
    assert [n["index"] for n in g["nodes"]] == [0, 1, 2, 3, 4, 5]
    assert {"index", "stable_id", "name", "status"} <= set(g["nodes"][0])
    assert {(e["caller"], e["callee"]) for e in g["edges"]} == {(4, 3), (4, 1), (1, 0)}
    assert all({"caller", "callee", "kind"} <= set(e) for e in g["edges"])


@pytest.mark.parametrize(
    "path, status, message",
    [
        ("/api/disasm/1/0", 404, "is an import (env.log)"),
        ("/api/disasm/1/6", 404, "version 1 has no function 6"),
        ("/api/disasm/1/99999999999", 404, "has no function"),
        ("/api/disasm/7/1", 404, "unknown version id 7"),
        ("/api/callgraph/7", 404, "unknown version id 7"),
        ("/api/disasm/x/1", 400, "malformed version id"),
        ("/api/disasm/1/-1", 400, "malformed function index"),
        ("/api/disasm/1/1e3", 400, "malformed function index"),
        ("/api/disasm/1/99999999999999999999", 400, "malformed function index"),
        ("/api/callgraph/1.5", 400, "malformed version id"),
    ],
)
def test_bad_input(code_kb, path, status, message):
    got, body = get(code_kb, path)
    assert got == status and set(body) == {"error"} and message in body["error"]


def test_bytes_missing_is_404(code_kb_no_bytes):
    for path in ("/api/disasm/2/1", "/api/callgraph/2"):
        status, body = get(code_kb_no_bytes, path)
        assert status == 404 and "module bytes of version 2 are not in the KB" in body["error"]
    assert get(code_kb_no_bytes, "/api/disasm/1/1")[0] == 200


def test_routes_are_read_only(code_kb):
    status, _, _ = route(str(code_kb), "/api/disasm/1/1", {}, method="POST")
    assert status == 405
