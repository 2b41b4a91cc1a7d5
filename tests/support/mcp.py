"""An MCP SDK stdio client against a real `kbtool mcp` subprocess, for the tests."""

from __future__ import annotations

import asyncio
import json
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client

from kbtool.kb import queries
from kbtool.kb.db import open_ro


def server_env(**extra: str) -> dict[str, str]:
    # 1.x clients replace the environment with `env`, 2.x merge it: pass a complete one.
    env = dict(get_default_environment())
    env.update(extra)
    return env


@asynccontextmanager
async def mcp_session(db: Path):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kbtool.cli", "mcp", "--db", str(db)],
        env=server_env(),
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            session.init_result = init.model_dump(by_alias=True, mode="json")
            yield session


def dump(obj: Any) -> dict[str, Any]:
    """An SDK model as wire JSON (camelCase on every SDK version)."""
    return obj.model_dump(by_alias=True, mode="json", exclude_none=True)


def text_of(result: Any) -> str:
    """The single text block of a successful tool result."""
    d = dump(result)
    assert not d.get("isError"), d
    blocks = d["content"]
    assert len(blocks) == 1 and blocks[0]["type"] == "text", blocks
    return blocks[0]["text"]


async def call(session: ClientSession, tool: str, **args: Any) -> Any:
    return json.loads(text_of(await session.call_tool(tool, args)))


async def call_error(session: ClientSession, tool: str, **args: Any) -> str:
    """The message of a tool error (no traceback, one text block)."""
    d = dump(await session.call_tool(tool, args))
    assert d.get("isError"), d
    text = " ".join(b.get("text", "") for b in d["content"])
    assert "Traceback" not in text and 'File "' not in text, text
    return text


def expected(db: Path, query, *args) -> Any:
    """What the query layer says, as the wire carries it."""
    conn = open_ro(db)
    try:
        return json.loads(json.dumps(query(conn, *args)))
    finally:
        conn.close()


def run(coro) -> Any:
    return asyncio.run(coro)


def unnamed_ids(db: Path, count: int) -> list[str]:
    conn = open_ro(db)
    try:
        vid = queries.latest_version_id(conn)
        return [e["stable_id"] for e in queries.list_functions(conn, vid) if e["name"] is None][
            :count
        ]
    finally:
        conn.close()
