"""The data-model MCP tools (issue 26): get_xrefs_to, list_data, read_memory and list_globals
with the model's names, through the MCP SDK's stdio client against a `kbtool mcp` process."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp.client.stdio")

from kbtool.kb.db import open_rw  # noqa: E402
from kbtool.services.analyze import analyze_version  # noqa: E402
from kbtool.services.ingest import ingest_file  # noqa: E402
from testkit.wasmbuild import build_wat, have_wabt  # noqa: E402
from tests.support.mcp import call, call_error, mcp_session, run  # noqa: E402

pytestmark = pytest.mark.skipif(not have_wabt(), reason="wat2wasm not installed")


def _kb(d, analyze: bool):
    wasm = build_wat("datamodel", d)
    db = d / "kb.db"
    conn = open_rw(str(db), create=True)
    try:
        ingest_file(conn, str(wasm), label="1.0")
        if analyze:
            analyze_version(conn, 1)
    finally:
        conn.close()
    return db


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    return _kb(tmp_path_factory.mktemp("mcpdata"), analyze=True)


def test_xrefs_data_memory_over_mcp(kb):
    async def main():
        async with mcp_session(kb) as s:
            g = await call(s, "get_xrefs_to", version_id=1, target="g:__stack_pointer")
            assert g["target"]["kind"] == "global" and g["target"]["role"] == "stack_pointer"
            assert sorted(r["kind"] for r in g["refs"]) == ["read", "write", "write"]
            assert g["page"]["total"] == 3 and g["page"]["next_offset"] is None
            assert {r["func_index"] for r in g["refs"]} == {1}

            # paging: one row at a time, with a note saying how to go on
            p1 = await call(s, "get_xrefs_to", version_id=1, target="g:0", limit=1)
            assert (
                len(p1["refs"]) == 1 and p1["page"]["next_offset"] == 1 and p1["page"]["truncated"]
            )
            assert "offset=1" in p1["page"]["note"]
            p2 = await call(s, "get_xrefs_to", version_id=1, target="g:0", limit=1, offset=1)
            assert p2["refs"][0]["offset"] > p1["refs"][0]["offset"]

            st = await call(s, "get_xrefs_to", version_id=1, target='"create table')
            assert st["target"]["label"] == "s_create_table_s"
            assert st["refs"][0]["func_index"] == 1 and st["refs"][0]["kind"] == "addr"
            addr = await call(s, "get_xrefs_to", version_id=1, target="0x420")
            assert addr["refs"][0]["kind"] == "load"
            fn = await call(s, "get_xrefs_to", version_id=1, target="#1")
            assert fn["target"]["kind"] == "function"
            assert "s_create_table_s" in {u.get("label") for u in fn["uses"]["data"]}
            assert [c["index"] for c in fn["uses"]["calls"]] == [0]

            strings = await call(s, "list_data", version_id=1, kind="string")
            assert [i["text"] for i in strings["items"]] == ["create table %s"]
            assert strings["total"] == 1 and strings["next_offset"] is None
            every = await call(s, "list_data", version_id=1, limit=1)
            assert every["total"] > 1 and every["next_offset"] == 1 and "offset=1" in every["note"]
            tables = await call(s, "list_data", version_id=1, kind="funcptr_table")
            assert tables["items"] and tables["items"][0]["address"] == 1072
            found = await call(s, "list_data", version_id=1, search="CREATE")
            assert [i["label"] for i in found["items"]] == ["s_create_table_s"]

            mem = await call(s, "read_memory", version_id=1, address=0x400, length=20)
            assert mem["rows"][0]["ascii"].startswith("create table %s")
            assert mem["rows"][0]["hex"].startswith("63 72 65 61")
            assert mem["item"]["label"] == "s_create_table_s" and len(mem["rows"]) == 2

            globs = await call(s, "list_globals", version_id=1)
            assert globs["data_model"] is True
            byname = {g["name"]: g for g in globs["items"] if g["name"]}
            assert byname["__stack_pointer"]["role"] == "stack_pointer"
            assert byname["__heap_base"]["index"] == 1
            assert byname["__stack_pointer"]["writes"] == 1  # one function writes it

            for tool, args, want in [
                ("get_xrefs_to", {"target": "nosuchthing"}, "matches nothing"),
                ("get_xrefs_to", {"target": "g:99"}, "no global"),
                ("get_xrefs_to", {"target": "0x10"}, "no data item"),
                ("read_memory", {"address": 0x10}, "outside the initialised data"),
                ("list_data", {"kind": "nonsense"}, "unknown kind"),
            ]:
                msg = await call_error(s, tool, version_id=1, **args)
                assert want in msg, (tool, msg)
                assert "internal error" not in msg and "\n" not in msg.strip()
            assert "4096" in await call_error(
                s, "read_memory", version_id=1, address=0x400, length=5000
            )
            assert "unknown version" in await call_error(s, "list_data", version_id=9)
            assert "unknown version" in await call_error(
                s, "get_xrefs_to", version_id=9, target="g:0"
            )

    run(main())


def test_without_a_model(tmp_path):
    from kbtool.kb.datamodel import drop_data_model

    db = _kb(tmp_path, analyze=False)
    conn = open_rw(str(db))
    with conn:  # a version ingested before ingest built the model
        drop_data_model(conn, 1)
    conn.close()

    async def main():
        async with mcp_session(db) as s:
            msg = await call_error(s, "get_xrefs_to", version_id=1, target="g:0")
            assert "analyze" in msg
            globs = await call(s, "list_globals", version_id=1)  # today's answer, no names
            assert globs["data_model"] is False
            assert [g["role"] for g in globs["items"]][0] == "stack_pointer"
            assert all(g["name"] is None for g in globs["items"])

    run(main())
