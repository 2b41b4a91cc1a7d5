"""A big MCP answer (an unpaged whole answer: ffmpeg's whole ``get_diff`` is 5.7 MB) is
written all ASCII, every other character as a ``\\uXXXX`` escape: the same JSON value, and
the SDK's stdio client, which joins the line from 64 KB reads, then holds it at one byte
per character instead of two or four (issue 30). Small answers stay readable UTF-8."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from kbtool.kb import gate, queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.mcp import registry, server
from tests.support.diff_kb import two_versions_kb
from tests.support.mcp import server_env, text_of

HOSTILE = "naïve 日本 𝔣 \u202e \x85 \u2028 del\x7f end"
SUMMARY = "naïve 日本 𝔣 — «quoted» end"  # what the gate keeps: no control or bidi characters
SMALL_BOUND = "64"  # KBTOOL_MCP_ASCII_FROM: every answer of the tests below is larger


def test_a_large_answer_is_the_ascii_json_of_the_same_value():
    value = {
        "pad": "x" * registry.LARGE,
        "changes": [{"name": HOSTILE, "score": 0.9116, "review": False, "provenance": None}],
    }
    text = registry.as_json(value)
    assert text.isascii()
    assert json.loads(text) == value
    assert text == json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    assert "\\ud835\\udd23" in text and "\\u007f" in text  # U+1D523 as a pair; DEL escaped
    # a small answer is as before: UTF-8 as is, only the unsafe characters escaped
    assert registry.as_json({"name": "naïve 日本 𝔣"}) == '{"name":"naïve 日本 𝔣"}'


_ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()))  # lone surrogates too


@settings(max_examples=200, deadline=None)
@given(st.recursive(_ANY_TEXT | st.integers() | st.none(), lambda x: st.lists(x, max_size=4)))
def test_ascii_json_writes_what_json_dumps_writes_with_ensure_ascii(value):
    compact = {"separators": (",", ":")}
    text = registry.ascii_json(json.dumps(value, ensure_ascii=False, **compact))
    assert text == json.dumps(value, ensure_ascii=True, **compact)


def _kb_with_hostile_summary(tmp_path: Path) -> tuple[Path, str]:
    db = two_versions_kb(tmp_path)
    conn = open_rw(db)
    try:
        sid = queries.list_functions(conn, 2)[0]["stable_id"]
        decision = gate.human_rename(conn, sid, "decode_text", actor="test", summary=SUMMARY)
        assert decision["written"], decision
    finally:
        conn.close()
    return db, sid


def _raw_answer(db: Path, tool: str, args: dict, **env: str) -> bytes:
    """The answer line a real ``kbtool mcp`` writes for one tools/call."""
    init = {"protocolVersion": "2024-11-05", "capabilities": {}}
    init["clientInfo"] = {"name": "test", "version": "1"}
    lines = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call"},
    ]
    lines[2]["params"] = {"name": tool, "arguments": args}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbtool.cli", "mcp", "--db", str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **env},
    )
    try:
        proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in lines))
        proc.stdin.flush()
        answers = [proc.stdout.readline() for _ in range(2)]
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert proc.returncode == 0, proc.stderr.read()
    assert json.loads(answers[1])["id"] == 1
    return answers[1]


def test_the_server_writes_a_large_answer_in_ascii_bytes(tmp_path):
    db, sid = _kb_with_hostile_summary(tmp_path)
    spec = next(s for s in server.tool_specs(db, RuntimeError) if s.name == "get_symbol")
    expected = json.loads(spec.fn(stable_id=sid))
    assert "日本 𝔣" in expected["summary"]  # the KB kept the characters beyond ASCII

    line = _raw_answer(db, "get_symbol", {"stable_id": sid}, KBTOOL_MCP_ASCII_FROM=SMALL_BOUND)
    assert line.isascii()
    text = json.loads(line)["result"]["content"][0]["text"]
    assert json.loads(text) == expected

    # under the bound (the default is 1 MiB) the same answer is readable UTF-8, as before
    plain = _raw_answer(db, "get_symbol", {"stable_id": sid})
    assert "日本 𝔣".encode() in plain
    assert json.loads(json.loads(plain)["result"]["content"][0]["text"]) == expected


def test_the_sdk_client_reads_an_ascii_answer_as_the_same_value(tmp_path):
    db, sid = _kb_with_hostile_summary(tmp_path)
    conn = open_ro(db)
    try:
        record = queries.get_symbol(conn, sid)
    finally:
        conn.close()
    assert record["summary"] and not record["summary"].isascii()

    async def go() -> tuple[str, str]:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "kbtool.cli", "mcp", "--db", str(db)],
            env=server_env(KBTOOL_MCP_ASCII_FROM=SMALL_BOUND),
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                symbol = text_of(await session.call_tool("get_symbol", {"stable_id": sid}))
                diff = text_of(
                    await session.call_tool("get_diff", {"from_version_id": 1, "to_version_id": 2})
                )
                return symbol, diff

    symbol, diff = asyncio.run(go())
    assert symbol.isascii() and json.loads(symbol)["summary"] == record["summary"]
    assert diff.isascii() and any(c["name"] == "decode_text" for c in json.loads(diff)["changes"])
