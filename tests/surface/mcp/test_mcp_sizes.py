"""MCP answers that say what they are (issue #23.8): every tool beyond the contract is bounded
by default (a default call stays under 100 KB), the contract's tools keep their full answer
and their descriptions name the paging inputs, and get_diff's `only` words mean what
`kbtool diff --only` means."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from kbtool.mcp.paging import MAX_ANSWER_BYTES
from tests.support.mcp import dump, mcp_session, run

CONTRACT = {
    "agent_backends",
    "list_versions",
    "coverage",
    "list_functions",
    "get_function_facts",
    "get_symbol",
    "search_symbols",
    "get_diff",
    "export_kb_text",
    "analyze_version",
    "run_agent_pass",
    "propose_symbol",
}
ROW = re.compile(r"^(unchanged|moved|modified|new|deleted) +(\d+)?(?: +(\d+))? ", re.M)


def _facts(db):
    conn = open_ro(db)
    try:
        versions = queries.list_versions(conn)
        vid = versions[-1]["id"]
        fns = [f for f in queries.list_functions(conn, vid)]
        big = max(
            fns,
            key=lambda f: len(
                queries.get_function_facts(conn, vid, f["index"])["instruction_mnemonics"]
            ),
        )
        strings = queries.version_strings(conn, vid)
        return versions, vid, big, next(iter(strings))
    finally:
        conn.close()


def test_every_tool_beyond_the_contract_is_bounded_by_default(demo_kb):
    from kbtool.kb.db import open_rw
    from kbtool.services.analyze import analyze_version

    versions, vid, big, text = _facts(demo_kb)
    from kbtool.services import data as data_svc

    conn = open_rw(demo_kb)
    try:
        analyze_version(conn, vid)  # the data model the data tools read
        data_start = data_svc.status(conn, vid)["data_start"]
    finally:
        conn.close()
    values = {
        "version_id": vid,
        "func_index": big["index"],
        "text": text,
        "stable_id": big["stable_id"],
        "proposals": [{"stable_id": big["stable_id"], "name": "decode_sequences"}],
        # the knowledge tools (kbtool/mcp/tools_knowledge.py)
        "function": f"{vid}:{big['index']}",
        "prototype": "int f(void)",
        "local": "0",
        "name": "seq_len",
        "target": "g:0",
        # the type tools (kbtool/mcp/tools_types.py)
        "c_declaration": "struct seq_hdr { int len; char kind; };",
        "type_name": "struct seq_hdr",
        "address": data_start,
    }

    async def main():
        sizes = {}
        async with mcp_session(demo_kb) as s:
            tools = (await s.list_tools()).tools
            names = {t.name for t in tools}
            assert CONTRACT <= names
            for t in tools:
                schema = dump(t)["inputSchema"]
                desc = t.description or ""
                if t.name in CONTRACT:
                    if t.name in (
                        "list_functions",
                        "get_function_facts",
                        "get_diff",
                        "export_kb_text",
                    ):
                        assert "several MB" in desc, t.name  # the truth about size
                    continue
                args = {k: values[k] for k in schema.get("required", [])}
                if t.name == "find_functions":  # needs one criterion: the commonest constant
                    args["constant"] = 1
                res = dump(await s.call_tool(t.name, args))
                assert not res.get("isError"), (t.name, res)
                sizes[t.name] = len(res["content"][0]["text"].encode())
        return sizes

    sizes = run(main())
    assert sizes and all(n <= MAX_ANSWER_BYTES for n in sizes.values()), sizes


def test_contract_calls_keep_their_full_shape(demo_kb_master):
    versions, vid, big, _ = _facts(demo_kb_master)

    async def main():
        async with mcp_session(demo_kb_master) as s:
            facts = json.loads(
                (
                    dump(
                        await s.call_tool(
                            "get_function_facts", {"version_id": vid, "func_index": big["index"]}
                        )
                    )
                )["content"][0]["text"]
            )
            diff = json.loads(
                dump(
                    await s.call_tool(
                        "get_diff", {"from_version_id": versions[0]["id"], "to_version_id": vid}
                    )
                )["content"][0]["text"]
            )
            return facts, diff

    facts, diff = run(main())
    assert "truncated" not in facts and "page" not in diff
    assert len(facts["instruction_mnemonics"]) == big_count(demo_kb_master, vid, big["index"])
    assert len(diff["changes"]) == sum(
        diff["summary"][k] for k in ("unchanged", "moved", "modified", "added", "removed")
    )


def big_count(db, vid, index):
    conn = open_ro(db)
    try:
        return len(queries.get_function_facts(conn, vid, index)["instruction_mnemonics"])
    finally:
        conn.close()


def test_changed_means_the_same_rows_in_mcp_and_the_cli(demo_kb_master):
    conn = open_ro(demo_kb_master)
    a, b = (v["id"] for v in queries.list_versions(conn)[:2])
    conn.close()
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "kbtool.cli",
            "diff",
            str(a),
            str(b),
            "--only",
            "changed",
            "--db",
            str(demo_kb_master),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, COLUMNS="200"),
    )
    assert cli.returncode == 0, cli.stderr
    # (classification, the indices shown): `new` has only a to index, `deleted` a from index
    cli_rows = sorted((c, tuple(i for i in (f, t) if i)) for c, f, t in ROW.findall(cli.stdout))

    async def main():
        async with mcp_session(demo_kb_master) as s:
            out = {}
            for words in (["changed"], ["modified", "added", "removed"], ["moved"]):
                res = dump(
                    await s.call_tool(
                        "get_diff",
                        {"from_version_id": a, "to_version_id": b, "only": words, "limit": 5000},
                    )
                )
                out[tuple(words)] = json.loads(res["content"][0]["text"])
            return out

    pages = run(main())
    changed = pages[("changed",)]
    mcp_rows = sorted(
        (
            c["classification"],
            tuple(str(i) for i in (c["from_index"], c["to_index"]) if i is not None),
        )
        for c in changed["changes"]
    )
    assert not changed["page"]["truncated"]
    assert cli_rows and mcp_rows == cli_rows
    assert {c["classification"] for c in changed["changes"]} <= {"modified", "new", "deleted"}
    # the aliases of the CLI's words, and `moved` is not a change of code
    assert pages[("modified", "added", "removed")]["changes"] == changed["changes"]
    assert pages[("moved",)]["page"]["total"] == changed["summary"]["moved"]
