"""A whole answer longer than one MCP message may carry is refused with a one-line error that
says how to page (the TypeScript SDK's stdio client ends the session on a message over
10 MiB); the session goes on, pages still answer, and a stand-in made for the refused answer
is not kept."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from kbtool.mcp import registry, server, splice
from tests.support.diff_kb import two_versions_kb
from tests.support.mcp import call, call_error, server_env


def test_wire_bytes_is_the_literal_the_line_carries():
    texts = [
        json.dumps({"a": 'quote " and \\ back', "n": list(range(40))}),
        "plain\ttext\nwith lines\n" * 30,
        json.dumps({"label": "na\u00efve"}, ensure_ascii=False),
    ]
    for text in texts:
        assert splice.wire_bytes(text) == len(splice.literal(registry.ascii_json(text))) or (
            not text.isascii() and splice.wire_bytes(text) >= len(text.encode()) + 2
        )


def test_a_too_long_whole_answer_is_refused_and_its_stand_in_dropped(tmp_path, monkeypatch):
    db = two_versions_kb(tmp_path)
    spec = next(s for s in server.tool_specs(db, RuntimeError) if s.name == "get_diff")
    whole = spec.fn(from_version_id=1, to_version_id=2)
    size = len(splice.literal(whole))
    page = spec.fn(from_version_id=1, to_version_id=2, limit=1)
    assert len(splice.literal(page)) < size - 1
    monkeypatch.setattr(registry, "MAX_ANSWER", size)  # exactly the bound: answered
    assert spec.fn(from_version_id=1, to_version_id=2) == whole
    monkeypatch.setattr(registry, "MAX_ANSWER", size - 1)
    with pytest.raises(RuntimeError) as err:
        spec.fn(from_version_id=1, to_version_id=2)
    message = str(err.value)
    assert "\n" not in message and "get_diff" in message and "offset" in message
    assert "KBTOOL_MCP_MAX_ANSWER" in message
    page = json.loads(spec.fn(from_version_id=1, to_version_id=2, limit=1))
    assert len(page["changes"]) == 1 and page["page"]["total"] >= 2

    # under the stdio guard the answer would have gone out as a stand-in: none is left behind
    monkeypatch.setattr(splice, "SPLICE_FROM", 10)
    monkeypatch.setattr(splice, "ACTIVE", threading.Event())
    splice.ACTIVE.set()
    before = dict(splice._PENDING)
    with pytest.raises(RuntimeError):
        spec.fn(from_version_id=1, to_version_id=2)
    assert splice._PENDING == before


def test_a_real_server_refuses_the_whole_answer_and_goes_on_serving(tmp_path):
    db = two_versions_kb(tmp_path)
    spec = next(s for s in server.tool_specs(db, RuntimeError) if s.name == "get_diff")
    bound = str(len(splice.literal(spec.fn(from_version_id=1, to_version_id=2))) - 1)
    kept = {k: v for k, v in os.environ.items() if k.startswith("KBTOOL_")}
    env = server_env(**kept, KBTOOL_MCP_MAX_ANSWER=bound, KBTOOL_MCP_SPLICE_FROM="64")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "kbtool.cli", "mcp", "--db", str(db)], env=env
    )

    async def run() -> None:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                diff = {"from_version_id": 1, "to_version_id": 2}
                message = await call_error(session, "get_diff", **diff)
                assert "\n" not in message.strip() and "KBTOOL_MCP_MAX_ANSWER" in message
                page = await call(session, "get_diff", **diff, limit=1)
                assert len(page["changes"]) == 1
                assert await call(session, "list_versions")  # the session goes on

    asyncio.run(run())
