"""The MCP server through the SDK's own stdio client against a real ``kbtool mcp`` process.

Runs under every supported SDK (CI: the current release and mcp 1.2.1). Each answer must
be exactly one text block: the JSON of the contract's shape (``null`` included), or the
plain-text export. Expected values come from the query layer on the same KB file.
"""

from __future__ import annotations

import asyncio
import random
import sys

import pytest

pytest.importorskip("mcp.client.stdio")

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from kbtool.kb import queries  # noqa: E402
from kbtool.kb.db import open_ro, open_rw  # noqa: E402
from kbtool.kb.errors import UnknownVersionError
from kbtool.kb.gate import upsert_symbol  # noqa: E402
from kbtool.mcp import compat
from kbtool.mcp.errors import as_tool as _as_tool
from kbtool.mcp.registry import as_json
from kbtool.services import names_io  # noqa: E402
from kbtool.services.diff.report import get_diff
from tests.support.mcp import (  # noqa: E402
    call,
    call_error,
    dump,
    expected,
    mcp_session,
    run,
    server_env,
    text_of,
    unnamed_ids,
)

TOOLS = {
    # name: (required params, {optional param: default}, {param: JSON type})
    "list_versions": ((), {}, {}),
    "coverage": (("version_id",), {}, {"version_id": "integer"}),
    "list_functions": (
        ("version_id",),
        {
            "include_imports": False,
            "offset": None,
            "limit": None,
            "unnamed_only": None,
            "name_contains": None,
            "fields": None,
        },
        {
            "version_id": "integer",
            "include_imports": "boolean",
            "offset": "integer?",
            "limit": "integer?",
            "unnamed_only": "boolean?",
            "name_contains": "string?",
            "fields": "array?",
        },
    ),
    "get_function_facts": (
        ("version_id", "func_index"),
        {"max_items": None, "aggregate_calls": None},
        {
            "version_id": "integer",
            "func_index": "integer",
            "max_items": "integer?",
            "aggregate_calls": "boolean?",
        },
    ),
    "get_symbol": (("stable_id",), {}, {"stable_id": "string"}),
    "search_symbols": (("query",), {"limit": 50}, {"query": "string", "limit": "integer"}),
    "get_diff": (
        ("from_version_id", "to_version_id"),
        {"only": None, "limit": None, "offset": None, "order": None},
        {
            "from_version_id": "integer",
            "to_version_id": "integer",
            "only": "array?",
            "limit": "integer?",
            "offset": "integer?",
            "order": "string?",
        },
    ),
    "export_kb_text": (
        ("version_id",),
        {"offset": None, "limit": None, "knowledge": True},
        {
            "version_id": "integer",
            "offset": "integer?",
            "limit": "integer?",
            "knowledge": "boolean",
        },
    ),
    "propose_symbols": (("proposals",), {}, {"proposals": "array"}),
    "get_callers": (
        ("version_id", "func_index"),
        {"offset": 0, "limit": 500, "indirect": False},
        {
            "version_id": "integer",
            "func_index": "integer",
            "offset": "integer",
            "limit": "integer",
            "indirect": "boolean",
        },
    ),
    "get_callees": (
        ("version_id", "func_index"),
        {"offset": 0, "limit": 500, "indirect": False},
        {
            "version_id": "integer",
            "func_index": "integer",
            "offset": "integer",
            "limit": "integer",
            "indirect": "boolean",
        },
    ),
    "list_strings": (
        ("version_id",),
        {"contains": "", "offset": 0, "limit": 500},
        {"version_id": "integer", "contains": "string", "offset": "integer", "limit": "integer"},
    ),
    "get_string_xrefs": (
        ("version_id", "text"),
        {"offset": 0, "limit": 500},
        {"version_id": "integer", "text": "string", "offset": "integer", "limit": "integer"},
    ),
    "find_functions": (
        ("version_id",),
        {"string": None, "constant": None, "calls": None, "offset": 0, "limit": 500},
        {
            "version_id": "integer",
            "string": "string?",
            "constant": "integer?",
            "calls": "integer?",
            "offset": "integer",
            "limit": "integer",
        },
    ),
    "list_globals": (
        ("version_id",),
        {"offset": 0, "limit": 500},
        {"version_id": "integer", "offset": "integer", "limit": "integer"},
    ),
    "list_memory_regions": (
        ("version_id",),
        {"offset": 0, "limit": 500},
        {"version_id": "integer", "offset": "integer", "limit": "integer"},
    ),
    "propose_symbol": (
        ("stable_id", "name"),
        {"summary": "", "confidence": 0.5},
        {"stable_id": "string", "name": "string", "summary": "string", "confidence": "number"},
    ),
    "agent_backends": ((), {}, {}),
    "run_agent_pass": (
        ("version_id",),
        {
            "backend": "auto",
            "only_unconfident": True,
            "rounds": 1,
            "max_functions": None,
            "opinions": None,
        },
        {
            "version_id": "integer",
            "backend": "string",
            "only_unconfident": "boolean",
            "rounds": "integer",
            "max_functions": "integer?",
            "opinions": "integer?",
        },
    ),
    "list_suggestions": (
        ("version_id",),
        {"offset": 0, "limit": 100, "min_confidence": None},
        {
            "version_id": "integer",
            "offset": "integer",
            "limit": "integer",
            "min_confidence": "number?",
        },
    ),
    "analyze_version": (("version_id",), {}, {"version_id": "integer"}),
    "get_disassembly": (
        ("version_id", "func_index"),
        {"offset": 0, "limit": 2000},
        {"version_id": "integer", "func_index": "integer", "offset": "integer", "limit": "integer"},
    ),
    "get_lifted_c": (
        ("version_id", "func_index"),
        {"offset": 0, "limit": 2000},
        {"version_id": "integer", "func_index": "integer", "offset": "integer", "limit": "integer"},
    ),
    "get_xrefs_to": (
        ("version_id", "target"),
        {"offset": 0, "limit": 200},
        {"version_id": "integer", "target": "string", "offset": "integer", "limit": "integer"},
    ),
    "list_data": (
        ("version_id",),
        {"kind": None, "offset": 0, "limit": 100, "search": None},
        {
            "version_id": "integer",
            "kind": "string?",
            "offset": "integer",
            "limit": "integer",
            "search": "string?",
        },
    ),
    "read_memory": (
        ("version_id", "address"),
        {"length": 64},
        {"version_id": "integer", "address": "integer", "length": "integer"},
    ),
    # knowledge beyond names (issue 27): kbtool/mcp/tools_knowledge.py
    "set_comment": (
        ("function", "text"),
        {"line": None, "confidence": 0.5},
        {"function": "string", "text": "string", "line": "integer?", "confidence": "number"},
    ),
    "set_prototype": (
        ("function", "prototype"),
        {"confidence": 0.5},
        {"function": "string", "prototype": "string", "confidence": "number"},
    ),
    "rename_local": (
        ("function", "local", "name"),
        {"confidence": 0.5},
        {"function": "string", "local": "string", "name": "string", "confidence": "number"},
    ),
    "name_data": (
        ("version_id", "target", "name"),
        {"confidence": 0.5},
        {"version_id": "integer", "target": "string", "name": "string", "confidence": "number"},
    ),
    "get_comments": (("function",), {}, {"function": "string"}),
    "get_prototype": (("function",), {}, {"function": "string"}),
    # C types (issue 27): kbtool/mcp/tools_types.py
    "declare_type": (
        ("c_declaration",),
        {"confidence": 0.5},
        {"c_declaration": "string", "confidence": "number"},
    ),
    "apply_type": (
        ("version_id", "target", "type_name"),
        {"confidence": 0.5},
        {
            "version_id": "integer",
            "target": "string",
            "type_name": "string",
            "confidence": "number",
        },
    ),
    "list_types": ((), {"offset": 0, "limit": 50}, {"offset": "integer", "limit": "integer"}),
}
VERSION_KEYS = {"id", "label", "toolchain_version", "functions", "shared_memory"}
ENTRY_KEYS = {"index", "stable_id", "type", "name", "provenance", "confidence"}
COVERAGE_KEYS = {"defined", "named", "coverage_pct", "oracle_named", "human_named", "agent_named"}
SYMBOL_KEYS = {
    "stable_id",
    "name",
    "summary",
    "type_signature",
    "provenance",
    "confidence",
    "locked",
    "evidence",
}
FACTS_KEYS = {
    "func_index",
    "stable_id",
    "type_signature",
    "call_targets",
    "referenced_strings",
    "raw_name",
    "instruction_mnemonics",
    "is_exported",
}
SEARCH_KEYS = {"stable_id", "name", "provenance", "confidence"}


# ---------------------------------------------------------------- fixtures and helpers

# ---------------------------------------------------------------- tools and schemas


def _json_type(prop: dict) -> str:
    """A property's JSON type; ``T?`` for an optional ``T | null`` (the paging inputs)."""
    if "type" in prop:
        return prop["type"]
    types = [t.get("type") for t in prop.get("anyOf", [])]
    assert "null" in types, prop
    return next(t for t in types if t != "null") + "?"


def test_tools_and_schemas(demo_kb_master):
    async def main():
        async with mcp_session(demo_kb_master) as s:
            assert s.init_result["serverInfo"]["name"] == "kbtool"
            tools = {t.name: dump(t) for t in (await s.list_tools()).tools}
        assert set(tools) == set(TOOLS)
        for name, (required, defaults, types) in TOOLS.items():
            schema = tools[name]["inputSchema"]
            props = schema.get("properties", {})
            assert set(props) == set(types), name
            assert sorted(schema.get("required", [])) == sorted(required), name
            for param, typ in types.items():
                assert _json_type(props[param]) == typ, (name, param)
            for param, default in defaults.items():
                assert props[param].get("default") == default, (name, param)
            for param in required:
                assert "default" not in props[param], (name, param)
            assert len(tools[name]["description"]) > 80, f"{name}: tell an agent when to use it"
        assert tools["propose_symbol"]["inputSchema"]["properties"]["confidence"]["maximum"] == 1.0

    run(main())


# ---------------------------------------------------------------- read tools


def test_read_tools_answer_the_contract_shapes(demo_kb_master):
    async def main():
        async with mcp_session(demo_kb_master) as s:
            versions = await call(s, "list_versions")
            assert versions == expected(demo_kb_master, queries.list_versions)
            assert len(versions) >= 2
            for v in versions:
                assert VERSION_KEYS <= set(v)  # extra fields (program, parent_version_id) are fine
                assert isinstance(v["id"], int) and isinstance(v["shared_memory"], bool)
            vid = versions[0]["id"]

            cov = await call(s, "coverage", version_id=vid)
            assert COVERAGE_KEYS <= set(cov)
            assert cov == expected(demo_kb_master, queries.coverage, vid)
            assert 0 < cov["named"] <= cov["defined"]

            defined = await call(s, "list_functions", version_id=vid)
            assert defined == expected(demo_kb_master, queries.list_functions, vid)
            assert len(defined) == cov["defined"]
            assert all(set(e) == ENTRY_KEYS for e in defined)
            everything = await call(s, "list_functions", version_id=vid, include_imports=True)
            assert len(everything) == versions[0]["functions"] > len(defined)
            imported = sorted({e["index"] for e in everything} - {e["index"] for e in defined})
            assert imported, "the demo module imports functions"

            named = next(e for e in defined if e["name"])
            facts = await call(s, "get_function_facts", version_id=vid, func_index=named["index"])
            assert FACTS_KEYS <= set(facts)
            assert facts == expected(
                demo_kb_master, queries.get_function_facts, vid, named["index"]
            )
            assert facts["stable_id"] == named["stable_id"]
            assert (
                isinstance(facts["instruction_mnemonics"], list) and facts["instruction_mnemonics"]
            )
            assert isinstance(facts["call_targets"], list)
            assert isinstance(facts["is_exported"], bool)
            assert (
                await call(s, "get_function_facts", version_id=vid, func_index=imported[0]) is None
            )
            assert await call(s, "get_function_facts", version_id=vid, func_index=10**6) is None

            sym = await call(s, "get_symbol", stable_id=named["stable_id"])
            assert SYMBOL_KEYS <= set(sym) and sym["name"] == named["name"]
            assert sym == expected(demo_kb_master, queries.get_symbol, named["stable_id"])
            unnamed = next(e for e in defined if e["name"] is None)
            assert await call(s, "get_symbol", stable_id=unnamed["stable_id"]) is None

            hits = await call(s, "search_symbols", query=named["name"][:3])
            assert hits == expected(demo_kb_master, queries.search_symbols, named["name"][:3], 50)
            assert hits and all(set(h) == SEARCH_KEYS for h in hits)
            keys = [h["name"].lower() for h in hits]
            assert keys == sorted(keys)
            assert len({h["stable_id"] for h in hits}) == len(hits)
            everyone = await call(s, "search_symbols", query="_")
            assert len(everyone) == 50, "limit defaults to 50"
            assert len(await call(s, "search_symbols", query="_", limit=3)) == 3
            assert await call(s, "search_symbols", query="") == []

            text = text_of(await s.call_tool("export_kb_text", {"version_id": vid}))
            assert text == expected(demo_kb_master, names_io.export_text, vid)
            lines = text.splitlines()
            assert lines[0] == "# kbtool KB export"
            rows = [ln for ln in lines if ln and not ln.startswith("#")]
            assert rows[0].startswith("index\t") and len(rows) - 1 == versions[0]["functions"]
            assert text_of(await s.call_tool("export_kb_text", {"version_id": vid})) == text

    run(main())


def test_get_diff(demo_kb_master):
    conn = open_ro(demo_kb_master)
    try:
        stored = conn.execute("SELECT COUNT(*) FROM diffs").fetchone()[0]
    finally:
        conn.close()

    async def main():
        async with mcp_session(demo_kb_master) as s:
            versions = await call(s, "list_versions")
            a, b = versions[0]["id"], versions[1]["id"]
            report = await call(s, "get_diff", from_version_id=a, to_version_id=b)
        assert report == expected(demo_kb_master, get_diff, a, b)
        assert report["from"] == versions[0]["label"] and report["to"] == versions[1]["label"]
        assert isinstance(report["summary"], dict) and report["changes"]
        assert {c["classification"] for c in report["changes"]} <= {
            "unchanged",
            "moved",
            "modified",
            "new",
            "deleted",
        }
        conn = open_ro(demo_kb_master)
        try:
            assert conn.execute("SELECT COUNT(*) FROM diffs").fetchone()[0] == stored, "a pure read"
        finally:
            conn.close()

    run(main())


# ---------------------------------------------------------------- errors


def test_errors_name_the_way_out(demo_kb_master):
    async def main():
        async with mcp_session(demo_kb_master) as s:
            versions = await call(s, "list_versions")
            known = str(versions[0]["id"])
            for tool, args in [
                ("coverage", {"version_id": 999}),
                ("list_functions", {"version_id": 999}),
                ("get_function_facts", {"version_id": 999, "func_index": 0}),
                ("export_kb_text", {"version_id": 999}),
                ("get_diff", {"from_version_id": 999, "to_version_id": versions[0]["id"]}),
            ]:
                msg = await call_error(s, tool, **args)
                assert "999" in msg and "known version ids" in msg and known in msg, (tool, msg)
                assert "list_versions" in msg
            for tool, args in [
                ("get_symbol", {"stable_id": "nosuchid"}),
                ("propose_symbol", {"stable_id": "nosuchid", "name": "foo"}),
            ]:
                msg = await call_error(s, tool, **args)
                assert "nosuchid" in msg and "search_symbols" in msg, (tool, msg)
            # wrong types and missing parameters are rejected by the schema
            await call_error(s, "coverage", version_id="abc")
            await call_error(s, "coverage")
            await call_error(s, "list_functions", version_id=1.5)
            await call_error(s, "search_symbols", query=["a"])
            await call_error(s, "propose_symbol", stable_id="x", name="y", confidence=1.5)
            await call_error(s, "propose_symbol", stable_id="x", name="y", confidence="high")
            # the server is still healthy afterwards
            assert await call(s, "list_versions") == versions

    run(main())


def test_unexpected_failures_become_generic_tool_errors(caplog):
    """A bug in a tool reaches the client as one generic line; the traceback goes to the log."""

    class ToolError(Exception):
        pass

    def broken(version_id: int) -> dict:
        """doc"""
        return {"x": 1 / version_id}

    tool = _as_tool(broken, as_json, ToolError)
    assert tool.__name__ == "broken" and tool.__doc__ == "doc"
    assert tool(version_id=2) == '{"x":0.5}'
    with pytest.raises(ToolError) as info:
        tool(version_id=0)
    assert str(info.value) == "internal error in broken; the server's log (stderr) has the details"
    assert "ZeroDivisionError" in caplog.text

    def unknown(version_id: int) -> dict:
        raise UnknownVersionError("unknown version id 5; known version ids: 1, 2")

    with pytest.raises(ToolError, match="known version ids: 1, 2; over MCP, list_versions"):
        _as_tool(unknown, as_json, ToolError)(version_id=5)


# ---------------------------------------------------------------- propose_symbol


def test_propose_symbol_goes_through_the_gate(demo_kb):
    sid, locked_sid, oracle_sid = unnamed_ids(demo_kb, 3)
    conn = open_rw(demo_kb)
    upsert_symbol(
        conn, locked_sid, "human_pick", provenance="human", confidence=1.0, actor="human:t"
    )
    upsert_symbol(
        conn, oracle_sid, "oracle_pick", provenance="oracle", confidence=0.8, actor="oracle:t"
    )
    conn.close()

    async def main():
        async with mcp_session(demo_kb) as s:
            first = await call(
                s,
                "propose_symbol",
                stable_id=sid,
                name="read_header",
                summary="Parses the frame header.",
            )
            assert first == {"written": True, "reason": first["reason"]} and first["reason"]
            sym = await call(s, "get_symbol", stable_id=sid)
            assert sym["name"] == "read_header" and sym["summary"] == "Parses the frame header."
            assert sym["provenance"] == "agent" and sym["confidence"] == 0.5 and not sym["locked"]
            assert sym["evidence"][0]["actor"] == "agent:mcp"

            # not strictly higher: refused; strictly higher: written; "" keeps the summary
            assert (await call(s, "propose_symbol", stable_id=sid, name="other", confidence=0.5))[
                "written"
            ] is False
            assert (await call(s, "propose_symbol", stable_id=sid, name="better", confidence=0.9))[
                "written"
            ] is True
            sym = await call(s, "get_symbol", stable_id=sid)
            assert sym["name"] == "better" and sym["summary"] == "Parses the frame header."

            # the caller cannot pose as a human or pick the actor
            forged = await s.call_tool(
                "propose_symbol",
                {
                    "stable_id": sid,
                    "name": "forged",
                    "confidence": 0.95,
                    "provenance": "human",
                    "actor": "human:root",
                    "lock": True,
                },
            )
            sym = await call(s, "get_symbol", stable_id=sid)
            assert sym["provenance"] == "agent" and not sym["locked"]
            if not dump(forged).get("isError"):
                assert sym["name"] == "forged" and sym["evidence"][0]["actor"] == "agent:mcp"

            # a locked human name is always refused, whatever the confidence
            refused = await call(
                s, "propose_symbol", stable_id=locked_sid, name="parse_frame", confidence=1.0
            )
            assert refused["written"] is False and "locked" in refused["reason"]
            assert (await call(s, "get_symbol", stable_id=locked_sid))["name"] == "human_pick"

            # over an oracle name only with a higher confidence
            low = await call(
                s, "propose_symbol", stable_id=oracle_sid, name="guess", confidence=0.8
            )
            assert low["written"] is False
            high = await call(
                s, "propose_symbol", stable_id=oracle_sid, name="guess", confidence=0.85
            )
            assert high["written"] is True

            bad = await call(s, "propose_symbol", stable_id=sid, name="not a name!", confidence=1.0)
            assert bad["written"] is False and "invalid name" in bad["reason"]

            cov = await call(s, "coverage", version_id=(await call(s, "list_versions"))[-1]["id"])
            assert cov["agent_named"] >= 2

    run(main())
    conn = open_ro(demo_kb)
    evs = queries.annotation_events(conn, sid)
    conn.close()
    mcp_evs = [e for e in evs if e["actor"] == "agent:mcp"]
    assert all(e["provenance"] == "agent" for e in mcp_evs)
    assert not any(e["actor"] == "human:root" for e in evs)


def test_concurrent_proposals_follow_the_gate(demo_kb):
    """32 concurrent propose_symbol calls: the gate's final state, one event per call."""
    free_a, free_b, locked_sid, oracle_sid = unnamed_ids(demo_kb, 4)
    conn = open_rw(demo_kb)
    upsert_symbol(
        conn, locked_sid, "human_pick", provenance="human", confidence=1.0, actor="human:t"
    )
    upsert_symbol(
        conn, oracle_sid, "oracle_pick", provenance="oracle", confidence=0.7, actor="oracle:t"
    )
    conn.close()

    rng = random.Random(7)
    confs = rng.sample(range(1, 100), 32)  # distinct: no ties, no "no change" no-ops
    targets = [free_a] * 16 + [free_b] * 6 + [locked_sid] * 5 + [oracle_sid] * 5
    plan = [(sid, f"guess_{i}", confs[i] / 100) for i, sid in enumerate(targets)]
    rng.shuffle(plan)

    async def main():
        async with mcp_session(demo_kb) as s:
            results = await asyncio.gather(
                *(
                    call(s, "propose_symbol", stable_id=sid, name=name, confidence=c)
                    for sid, name, c in plan
                )
            )
        assert all(set(r) == {"written", "reason"} for r in results)
        return results

    results = run(main())
    conn = open_ro(demo_kb)
    try:
        for sid in (free_a, free_b, locked_sid, oracle_sid):
            mine = [p for p in plan if p[0] == sid]
            evs = [e for e in queries.annotation_events(conn, sid) if e["actor"] == "agent:mcp"]
            assert len(evs) == len(mine), "one event per proposal"
            sym = queries.get_symbol(conn, sid)
            if sid == locked_sid:
                assert sym["name"] == "human_pick" and not any(e["written"] for e in evs)
                continue
            best = max(mine, key=lambda p: p[2])
            if sid == oracle_sid and best[2] <= 0.7:
                assert sym["name"] == "oracle_pick"
            else:
                assert (sym["name"], sym["confidence"]) == (best[1], best[2])
                assert sym["provenance"] == "agent"
    finally:
        conn.close()
    written = sum(r["written"] for r in results)
    assert written >= 2  # at least the first write on each free symbol


def test_kbtool_db_environment_variable(demo_kb_master, tmp_path):
    """Without --db the command uses $KBTOOL_DB (else ./kbtool.db)."""

    async def main():
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "kbtool.cli", "mcp"],
            env=server_env(KBTOOL_DB=str(demo_kb_master)),
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                return await call(s, "list_versions")

    assert run(main()) == expected(demo_kb_master, queries.list_versions)


def test_sdk_loading_failures_carry_an_install_hint(monkeypatch):
    def missing():
        raise ModuleNotFoundError("No module named 'mcp'", name="mcp")

    monkeypatch.setattr(compat, "_import_server", missing)
    with pytest.raises(RuntimeError, match=r"not installed.*pip install 'mcp>=1\.2'"):
        compat.load()

    def broken():
        raise ImportError("cannot import name 'eval_type_backport'", name="pydantic._internal")

    monkeypatch.setattr(compat, "_import_server", broken)
    with pytest.raises(
        RuntimeError, match=r"fails to import \(cannot import name 'eval_type_backport'"
    ):
        compat.load()


def test_sdk_is_found():
    sdk = compat.load()
    assert sdk.server_class.__name__ in ("MCPServer", "FastMCP")
    assert issubclass(sdk.tool_error, Exception)
