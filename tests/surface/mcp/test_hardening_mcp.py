"""Hardening (issue 11, points 4, 5, 8 and 11) over MCP: strict, bounded arguments are tool
errors (never "internal error", never a boolean taken as 1.0), oversized inputs never reach
the KB, a read-only KB is a one-line tool error. Through the SDK's stdio client against a
real ``kbtool mcp`` process, on every supported SDK (CI also runs mcp 1.2.1)."""

from __future__ import annotations

import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

pytest.importorskip("mcp.client.stdio")

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from kbtool.kb.db import open_ro  # noqa: E402
from tests.support.mcp import call, call_error, dump, run, server_env, unnamed_ids  # noqa: E402
from tests.support.paths import run_ok as _run  # noqa: E402

BIG = 2**63


@asynccontextmanager
async def session_on(db: Path):
    extra = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kbtool.cli", "mcp", "--db", str(db)],
        env=server_env(**extra),
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


def events(db: Path) -> tuple[int, int]:
    conn = open_ro(db)
    try:
        return tuple(
            conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(LENGTH(COALESCE(new, '')) + LENGTH(COALESCE(evidence, ''))), 0)"
                " FROM annotation_events"
            ).fetchone()
        )
    finally:
        conn.close()


def assert_clear(message: str, *words: str) -> None:
    assert "internal error" not in message, message
    for w in words:
        assert w in message, message


def test_arguments_are_strict_and_bounded(demo_kb):
    sid = unnamed_ids(demo_kb, 1)[0]
    before = events(demo_kb)

    async def main():
        async with session_on(demo_kb) as s:
            for bad in (True, False, "0.9", float("inf")):
                msg = await call_error(
                    s, "propose_symbol", stable_id=sid, name="by_bool", confidence=bad
                )
                assert_clear(msg, "confidence")
            for vid in (10**30, BIG, -1, True, 1.5, "1"):
                for tool, args in (
                    ("coverage", {"version_id": vid}),
                    ("list_functions", {"version_id": vid}),
                    ("get_function_facts", {"version_id": 1, "func_index": vid}),
                    ("get_diff", {"from_version_id": 1, "to_version_id": vid}),
                    ("export_kb_text", {"version_id": vid}),
                ):
                    if vid == "1" and tool != "coverage":
                        continue  # a numeric string may be parsed as JSON by the SDK: check once
                    try:
                        msg = await call_error(s, tool, **args)
                    except AssertionError:
                        assert vid == "1", (tool, vid)  # lenient SDKs turn "1" into 1: fine
                        continue
                    assert_clear(msg)
            msg = await call_error(s, "search_symbols", query="x", limit=True)
            assert_clear(msg, "limit")
            msg = await call_error(s, "search_symbols", query="x", limit=-1)
            assert_clear(msg, "limit")
            msg = await call_error(s, "list_functions", version_id=1, include_imports=1)
            assert_clear(msg, "include_imports")
            # a JSON integer is a fine confidence; the gate records it as 1.0
            ok = await call(s, "propose_symbol", stable_id=sid, name="by_int", confidence=1)
            assert ok["written"] is True
            sym = await call(s, "get_symbol", stable_id=sid)
            assert sym["name"] == "by_int" and sym["confidence"] == 1.0

    run(main())
    assert events(demo_kb)[0] == before[0] + 1  # only the valid proposal left an event


def test_oversized_inputs_never_reach_the_kb(demo_kb):
    sid = unnamed_ids(demo_kb, 1)[0]
    before = events(demo_kb)
    size_before = demo_kb.stat().st_size

    async def main():
        async with session_on(demo_kb) as s:
            for args in (
                {"name": "n" * (1 << 20)},
                {"name": "ok", "summary": "s" * (1 << 20)},
                {"name": "ok", "stable_id": "f" * 100_000},
            ):
                msg = await call_error(s, "propose_symbol", **{"stable_id": sid, **args})
                assert_clear(msg)
                assert len(msg) < 4096  # the error does not echo the input back
            msg = await call_error(s, "search_symbols", query="q" * 100_000)
            assert_clear(msg, "query")
            msg = await call_error(s, "get_symbol", stable_id="f" * 100_000)
            assert_clear(msg, "stable_id")

    run(main())
    assert events(demo_kb) == before
    assert demo_kb.stat().st_size == size_before


def test_summary_with_terminal_escapes_is_cleaned_and_the_name_kept(demo_kb):
    sid = unnamed_ids(demo_kb, 1)[0]

    async def main():
        async with session_on(demo_kb) as s:
            d = await call(
                s,
                "propose_symbol",
                stable_id=sid,
                name="titled",
                summary="\x1b]0;TITLE\x07\x1b[2J",
                confidence=0.9,
            )
            assert d["written"] is True, d
            sym = await call(s, "get_symbol", stable_id=sid)
            assert sym["name"] == "titled" and sym["summary"] == "]0;TITLE[2J"
            d = await call(
                s,
                "propose_symbol",
                stable_id=sid,
                name="multi_line",
                summary="line one\n\tline two",
                confidence=0.95,
            )
            assert d["written"] is True

    run(main())


def test_unknown_version_bounds_are_checked_before_sqlite(demo_kb):
    """The largest valid integer passes validation and is an ordinary unknown id."""

    async def main():
        async with session_on(demo_kb) as s:
            msg = await call_error(s, "coverage", version_id=BIG - 1)
            assert_clear(msg, "unknown version id")

    run(main())


def test_propose_on_a_read_only_kb_is_a_one_line_tool_error(demo_kb):
    if os.geteuid() == 0:
        if not _run(["chattr", "+i", str(demo_kb)]):
            pytest.skip("chattr +i not available here")
    else:
        demo_kb.chmod(0o444)
    sid = unnamed_ids(demo_kb, 1)[0]
    before = demo_kb.read_bytes()

    async def main():
        async with session_on(demo_kb) as s:
            result = dump(
                await s.call_tool("propose_symbol", {"stable_id": sid, "name": "ro_name"})
            )
            assert result.get("isError"), result
            text = " ".join(b.get("text", "") for b in result["content"])
            assert_clear(text, "read-only")
            facts = await call(s, "list_versions")  # reads still work
            assert len(facts) == 2

    try:
        run(main())
    finally:
        if os.geteuid() == 0:
            _run(["chattr", "-i", str(demo_kb)])
    assert demo_kb.read_bytes() == before
