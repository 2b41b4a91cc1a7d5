"""Answers that fit a context window (paging inputs), tool annotations, the cross-reference
tools and batch proposals, through a real ``kbtool mcp`` subprocess and the SDK's client.

The contract's calls (no optional input) must stay byte-for-byte what the query layer says.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("mcp.client.stdio")

from kbtool.kb import queries  # noqa: E402
from kbtool.kb.db import open_ro  # noqa: E402
from kbtool.mcp.paging import MAX_ANSWER_BYTES, cut_lists, page_rows  # noqa: E402
from kbtool.mcp.server import MAX_BATCH, TOOL_NAMES, as_json  # noqa: E402
from kbtool.mcp.tools_xrefs import segment_kind  # noqa: E402
from kbtool.services import names_io  # noqa: E402
from kbtool.services.diff.report import get_diff  # noqa: E402
from tests.support.mcp import call, call_error, dump, mcp_session, run, text_of  # noqa: E402

PAGE_KEYS = {"items", "total", "offset", "next_offset", "truncated", "note"}
READS = {
    "list_versions",
    "coverage",
    "list_functions",
    "get_function_facts",
    "get_symbol",
    "search_symbols",
    "get_diff",
    "export_kb_text",
    "agent_backends",
    "get_disassembly",
    "get_lifted_c",
    "get_callers",
    "get_callees",
    "list_strings",
    "get_string_xrefs",
    "find_functions",
    "list_globals",
    "list_memory_regions",
    "list_suggestions",
    "get_xrefs_to",
    "list_data",
    "read_memory",
    "get_comments",
    "get_prototype",
    "list_types",
}


def query(db, fn, *args, **kwargs):
    conn = open_ro(db)
    try:
        return fn(conn, *args, **kwargs)
    finally:
        conn.close()


async def raw(session, tool: str, **args) -> str:
    return text_of(await session.call_tool(tool, args))


async def walk(session, tool: str, **args) -> list:
    """Every row of a paged tool, following next_offset; each answer within the bound."""
    rows, offset, pages = [], 0, 0
    while offset is not None:
        text = await raw(session, tool, offset=offset, **args)
        assert len(text.encode("utf-8")) <= MAX_ANSWER_BYTES
        page = json.loads(text)
        assert PAGE_KEYS <= set(page), page
        assert page["offset"] == offset and page["truncated"] == (page["next_offset"] is not None)
        if page["truncated"]:
            assert f"offset={page['next_offset']}" in page["note"], page["note"]
        rows += page["items"]
        offset = page["next_offset"]
        pages += 1
    return rows, pages


# ---------------------------------------------------------------- contract kept


def test_contract_calls_are_byte_for_byte_the_query_layer(demo_kb_master):
    db = demo_kb_master
    vids = [v["id"] for v in query(db, queries.list_versions)]
    a, b = vids[0], vids[-1]
    fn = max(query(db, queries.list_functions, b), key=lambda e: e["index"] % 7)["index"]

    async def main():
        async with mcp_session(db) as s:
            assert await raw(s, "list_functions", version_id=b) == as_json(
                query(db, queries.list_functions, b)
            )
            assert await raw(s, "list_functions", version_id=b, include_imports=True) == as_json(
                query(db, queries.list_functions, b, True)
            )
            assert await raw(s, "get_function_facts", version_id=b, func_index=fn) == as_json(
                query(db, queries.get_function_facts, b, fn)
            )
            assert await raw(s, "get_diff", from_version_id=a, to_version_id=b) == as_json(
                query(db, get_diff, a, b)
            )
            assert await raw(s, "export_kb_text", version_id=b) == query(
                db, names_io.export_text, b
            )

    run(main())


# ---------------------------------------------------------------- paging


def test_list_functions_pages_and_filters(demo_kb_master):
    db = demo_kb_master
    vid = query(db, queries.latest_version_id)
    every = query(db, queries.list_functions, vid)
    unnamed = [e for e in every if e["name"] is None]
    named = next(e["name"] for e in every if e["name"])

    async def main():
        async with mcp_session(db) as s:
            rows, pages = await walk(s, "list_functions", version_id=vid, limit=100)
            assert rows == every and pages == -(-len(every) // 100)
            rows, _ = await walk(s, "list_functions", version_id=vid, unnamed_only=True, limit=64)
            assert rows == unnamed
            slim = await call(
                s,
                "list_functions",
                version_id=vid,
                fields=["index", "stable_id"],
                limit=5,
                offset=3,
            )
            assert slim["items"] == [
                {"index": e["index"], "stable_id": e["stable_id"]} for e in every[3:8]
            ]
            assert slim["total"] == len(every) and slim["next_offset"] == 8
            hits = await call(s, "list_functions", version_id=vid, name_contains=named.upper())
            assert hits["items"] and all(named.lower() in h["name"].lower() for h in hits["items"])
            past = await call(s, "list_functions", version_id=vid, offset=10**6)
            assert past["items"] == [] and "past the end" in past["note"]
            await call_error(s, "list_functions", version_id=vid, limit=0)
            await call_error(s, "list_functions", version_id=vid, offset="3")
            await call_error(s, "list_functions", version_id=vid, fields=["nope"])
            await call_error(s, "list_functions", version_id=999, limit=5)

    run(main())


def test_function_list_window_is_a_slice_of_the_list(demo_kb_master):
    """The paged list reads one window in SQL: the same rows as slicing the whole list."""
    conn = open_ro(demo_kb_master)
    try:
        vid = queries.latest_version_id(conn)
        for imports in (False, True):
            every = queries.list_functions(conn, vid, imports)
            unnamed = [e for e in every if e["name"] is None]
            for rows, only in ((every, False), (unnamed, True)):
                for offset, count in ((0, 7), (5, 100), (len(rows) - 3, 50), (len(rows) + 9, 5)):
                    total, window = queries.function_list_window(
                        conn, vid, imports, offset, count, only
                    )
                    assert total == len(rows)
                    assert window == rows[offset : offset + count]
        with pytest.raises(queries.UnknownVersionError):
            queries.function_list_window(conn, 999, False, 0, 5)
    finally:
        conn.close()


def test_facts_diff_and_export_pages(demo_kb_master):
    db = demo_kb_master
    vids = [v["id"] for v in query(db, queries.list_versions)]
    a, b = vids[0], vids[-1]
    defined = query(db, queries.list_functions, b)
    facts = {e["index"]: query(db, queries.get_function_facts, b, e["index"]) for e in defined}
    biggest = max(facts, key=lambda i: len(facts[i]["instruction_mnemonics"]))
    report = query(db, get_diff, a, b)
    changed = [
        c for c in report["changes"] if c["classification"] in ("modified", "new", "deleted")
    ]
    export = query(db, names_io.export_text, b).splitlines()

    async def main():
        async with mcp_session(db) as s:
            cut = await call(
                s, "get_function_facts", version_id=b, func_index=biggest, max_items=10
            )
            full = facts[biggest]
            assert cut["instruction_mnemonics"] == full["instruction_mnemonics"][:10]
            assert (
                cut["truncated"]["instruction_mnemonics"] == len(full["instruction_mnemonics"]) - 10
            )
            assert "max_items" in cut["note"]
            agg = await call(
                s, "get_function_facts", version_id=b, func_index=biggest, aggregate_calls=True
            )
            conn = open_ro(db)
            row = conn.execute(
                "SELECT calls, call_indirect FROM facts WHERE version_id=? AND idx=?", (b, biggest)
            ).fetchone()
            conn.close()
            assert sum(t["count"] for t in agg["call_targets"]) == len(json.loads(row[0])) + row[1]
            assert [t["target"] for t in agg["call_targets"]].count("<indirect>") <= 1

            got, offset = [], 0
            while offset is not None:
                # pages come in triage order by default; index order pages the full answer
                text = await raw(
                    s,
                    "get_diff",
                    from_version_id=a,
                    to_version_id=b,
                    only=["changed"],
                    limit=97,
                    offset=offset,
                    order="index",
                )
                assert len(text.encode("utf-8")) <= MAX_ANSWER_BYTES
                page = json.loads(text)
                assert page["summary"] == report["summary"] and set(page["page"]) == PAGE_KEYS - {
                    "items"
                }
                got += page["changes"]
                offset = page["page"]["next_offset"]
            assert got == changed

            lines, offset = [], 0
            while True:
                text = await raw(s, "export_kb_text", version_id=b, limit=200, offset=offset)
                body = text.splitlines()
                assert body[:3] == export[:3]
                more = body[-1].startswith("# kbtool: truncated")
                lines += body[3:-1] if more else body[3:]
                if not more:
                    break
                offset = int(body[-1].rsplit("offset=", 1)[1].rstrip(")"))
            assert lines == export[3:]

    run(main())


def test_page_bound_and_cuts_are_pure():
    rows = [{"text": "x" * 1000, "i": i} for i in range(500)]
    page = page_rows(rows, 0, 5000, call="tool(a=1)")
    assert len(as_json(page).encode()) <= MAX_ANSWER_BYTES
    assert page["truncated"] and 0 < page["next_offset"] < 500
    assert f"tool(a=1, offset={page['next_offset']})" in page["note"]
    out = cut_lists({"a": [1, 2, 3], "b": [1]}, 2, ("a", "b"))
    assert out.pop("note").startswith("lists cut to 2 items (a: 1 more)")
    assert out == {"a": [1, 2], "b": [1], "truncated": {"a": 1}}
    assert segment_kind(b"\0" * 64) == "zeros"
    assert segment_kind(b"hello world\0error: %s\0") == "strings"
    assert (
        segment_kind(b"".join((i * 8 + 1024).to_bytes(4, "little") for i in range(16))) == "table"
    )


# ---------------------------------------------------------------- annotations


def test_every_tool_has_a_title_and_annotations(demo_kb_master):
    async def main():
        async with mcp_session(demo_kb_master) as s:
            return {t.name: dump(t) for t in (await s.list_tools()).tools}

    tools = run(main())
    assert set(tools) == set(TOOL_NAMES)
    if not any("annotations" in t for t in tools.values()):
        pytest.skip("this mcp SDK has no tool annotations")
    for name, tool in tools.items():
        ann = tool["annotations"]
        assert ann["readOnlyHint"] is (name in READS), name
        assert ann["destructiveHint"] is False and ann["title"], name
        if name in ("propose_symbol", "propose_symbols"):
            assert ann["idempotentHint"] is True


# ---------------------------------------------------------------- cross-references


def test_xref_tools(demo_kb_master):
    db = demo_kb_master
    vid = query(db, queries.latest_version_id)
    edges = (
        open_ro(db)
        .execute(
            "SELECT callee, COUNT(*) FROM call_edges WHERE version_id=? GROUP BY callee"
            " ORDER BY 2 DESC LIMIT 1",
            (vid,),
        )
        .fetchone()
    )
    callee = edges[0]
    strings = query(db, queries.version_strings, vid)
    text, refs = max(strings.items(), key=lambda kv: len(kv[1]))
    conn = open_ro(db)
    dispatcher = conn.execute(
        "SELECT idx FROM facts WHERE version_id = ? AND call_indirect > 0 ORDER BY idx LIMIT 1",
        (vid,),
    ).fetchone()[0]
    conn.close()

    async def main():
        async with mcp_session(db) as s:
            callers, _ = await walk(s, "get_callers", version_id=vid, func_index=callee, limit=7)
            assert callers == json.loads(as_json(query(db, queries.callers, vid, callee)))
            assert len(callers) == edges[1]
            caller = callers[0]["index"]
            callees = await call(s, "get_callees", version_id=vid, func_index=caller)
            assert callee in [c["index"] for c in callees["items"]]
            assert isinstance(callees["indirect_call_sites"], int)
            assert "indirect_candidates" not in callees
            wide = await call(
                s, "get_callees", version_id=vid, func_index=dispatcher, indirect=True
            )
            assert wide["indirect_call_sites"] > 0 and wide["indirect_candidates"]
            assert wide["indirect_candidates_total"] >= len(wide["indirect_candidates"])
            target = wide["indirect_candidates"][0]["index"]
            back = await call(s, "get_callers", version_id=vid, func_index=target, indirect=True)
            assert dispatcher in [c["index"] for c in back["indirect_candidates"]]

            listed, _ = await walk(s, "list_strings", version_id=vid, limit=40)
            assert {r["text"]: r["functions"] for r in listed} == {
                t: len(r) for t, r in strings.items()
            }
            some = await call(s, "list_strings", version_id=vid, contains=text[:4].upper())
            assert text in [r["text"] for r in some["items"]]
            xrefs = await call(s, "get_string_xrefs", version_id=vid, text=text)
            assert [x["index"] for x in xrefs["items"]] == refs
            found = await call(s, "find_functions", version_id=vid, string=text)
            assert set(refs) <= {f["index"] for f in found["items"]}
            both = await call(s, "find_functions", version_id=vid, string=text, calls=callee)
            assert all(f["index"] in refs for f in both["items"])
            by_call = await call(s, "find_functions", version_id=vid, calls=callee)
            assert [f["index"] for f in by_call["items"]] == [c["index"] for c in callers]
            assert "at least one" in await call_error(s, "find_functions", version_id=vid)

            globs = await call(s, "list_globals", version_id=vid)
            sp = [g for g in globs["items"] if g["role"] == "stack_pointer"]
            assert len(sp) == 1 and sp[0]["type"] == "i32" and sp[0]["mutable"]
            assert sp[0]["used_by_count"] >= len(sp[0]["used_by"]) > 0
            mem = await call(s, "list_memory_regions", version_id=vid)
            assert mem["memories"] and mem["items"] and mem["stack_pointer"] == sp[0]["initial"]
            for seg in mem["items"]:
                assert seg["kind"] in {"strings", "zeros", "table", "data"} and seg["size"] >= 0
            start, end = mem["static_region"]["start"], mem["static_region"]["end"]
            assert start <= min(r["address"] for r in mem["items"]) and end >= start
            assert mem["heap_base"] >= end

            for tool in ("get_callers", "get_callees"):
                assert "unknown version" in await call_error(s, tool, version_id=999, func_index=1)
                assert "no function" in await call_error(s, tool, version_id=vid, func_index=10**6)
                await call_error(s, tool, version_id="1", func_index=1)
            for tool in ("list_strings", "list_globals", "list_memory_regions"):
                assert "unknown version" in await call_error(s, tool, version_id=999)
                await call_error(s, tool, version_id=True)
            await call_error(s, "get_string_xrefs", version_id=vid, text="")
            empty = await call(s, "get_string_xrefs", version_id=vid, text="no such string \x01")
            assert empty["items"] == [] and empty["total"] == 0

    run(main())


# ---------------------------------------------------------------- batch proposals


def test_agent_names_a_whole_module_page_by_page(demo_kb):
    """list_functions(unnamed_only) + propose_symbols until nothing is left; every answer
    within the bound; each decision through the gate as agent:mcp."""
    vid = query(demo_kb, queries.latest_version_id)
    unnamed = [
        e["stable_id"] for e in query(demo_kb, queries.list_functions, vid) if e["name"] is None
    ]
    todo = len(unnamed)

    async def main():
        async with mcp_session(demo_kb) as s:
            rounds = 0
            while True:
                text = await raw(
                    s,
                    "list_functions",
                    version_id=vid,
                    unnamed_only=True,
                    fields=["stable_id"],
                    limit=MAX_BATCH,
                )
                page = json.loads(text)
                if not page["items"]:
                    break
                batch = [
                    {
                        "stable_id": r["stable_id"],
                        "name": f"agent_fn_{rounds}_{i}",
                        "summary": "batch",
                        "confidence": 0.3,
                    }
                    for i, r in enumerate(page["items"])
                ]
                decisions = await call(s, "propose_symbols", proposals=batch)
                assert [d["stable_id"] for d in decisions] == [b["stable_id"] for b in batch]
                assert all(d["written"] for d in decisions), decisions
                rounds += 1
                assert rounds <= todo // MAX_BATCH + 1
            cov = await call(s, "coverage", version_id=vid)
            assert cov["named"] == cov["defined"]

            sid = query(demo_kb, queries.list_functions, vid)[0]["stable_id"]
            again = await call(
                s,
                "propose_symbols",
                proposals=[
                    {"stable_id": sid, "name": "lower_conf", "confidence": 0.1},
                    {"stable_id": "nosuchid", "name": "x"},
                ],
            )
            assert again[0]["written"] is False and again[1]["written"] is False
            assert "unknown stable_id" in again[1]["reason"]
            too_many = [{"stable_id": sid, "name": "x"}] * (MAX_BATCH + 1)
            await call_error(s, "propose_symbols", proposals=too_many)
            await call_error(s, "propose_symbols", proposals=[])
            await call_error(
                s,
                "propose_symbols",
                proposals=[{"stable_id": sid, "name": "x", "provenance": "human"}],
            )
            await call_error(
                s, "propose_symbols", proposals=[{"stable_id": sid, "name": "x", "confidence": 2}]
            )
        return rounds

    assert run(main()) == -(-todo // MAX_BATCH)
    events = query(demo_kb, queries.annotation_events, unnamed[-1])
    agent = [e for e in events if e["actor"] == "agent:mcp"]
    assert agent and all(e["provenance"] == "agent" for e in agent)


def test_paging_a_computed_diff_runs_the_matcher_once(demo_kb_master, tmp_path):
    """get_diff pages of a pair with no stored report come from the process's diff cache:
    the matcher runs for the first page only, and every page is a slice of the one report."""
    import shutil

    from kbtool.mcp.server import tool_specs
    from kbtool.services.diff.cache import DIFF_CACHE

    db = tmp_path / "kb.db"
    shutil.copyfile(demo_kb_master, db)
    tools = {t.name: t.fn for t in tool_specs(db, RuntimeError)}
    DIFF_CACHE.clear()
    before = DIFF_CACHE.computed
    pages = [
        json.loads(
            tools["get_diff"](
                from_version_id=2, to_version_id=1, limit=50, offset=off, order="index"
            )
        )
        for off in (0, 50, 100)
    ]
    assert DIFF_CACHE.computed == before + 1  # (2, 1) is not an ingest pair: computed once
    whole = json.loads(tools["get_diff"](from_version_id=2, to_version_id=1))
    assert [c for p in pages for c in p["changes"]] == whole["changes"][:150]
    conn = open_ro(db)
    try:
        assert whole == json.loads(json.dumps(get_diff(conn, 2, 1)))  # the query layer's answer
    finally:
        conn.close()
