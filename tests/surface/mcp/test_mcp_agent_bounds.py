"""MCP ``run_agent_pass`` bounds its counts like ``kbtool agent`` (``--rounds`` at most 100,
``--max-functions`` at most 1,000,000): over a real ``kbtool mcp`` process and the SDK's stdio
client, a larger value is a one-line tool error and nothing is written; the schema says the
maximum; values at the bound still run."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp.client.stdio")

from kbtool.kb import queries  # noqa: E402
from kbtool.kb.db import open_ro  # noqa: E402
from tests.support.mcp import call, call_error, dump, mcp_session, run  # noqa: E402


def _token(db) -> object:
    conn = open_ro(db)
    try:
        return queries.change_token(conn)
    finally:
        conn.close()


def test_run_agent_pass_counts_are_bounded_like_the_cli(demo_kb):
    before = _token(demo_kb)

    async def scenario():
        async with mcp_session(demo_kb) as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            props = dump(tools["run_agent_pass"])["inputSchema"]["properties"]
            out = {"props": props}
            out["rounds"] = await call_error(
                s, "run_agent_pass", version_id=2, backend="offline", rounds=10**30
            )
            out["rounds101"] = await call_error(
                s, "run_agent_pass", version_id=2, backend="offline", rounds=101
            )
            out["maxf"] = await call_error(
                s, "run_agent_pass", version_id=2, backend="offline", max_functions=1_000_001
            )
            out["token"] = _token(demo_kb)
            out["ok"] = await call(
                s,
                "run_agent_pass",
                version_id=2,
                backend="offline",
                rounds=100,
                max_functions=1_000_000,
            )
            return out

    out = run(scenario())
    assert out["props"]["rounds"]["maximum"] == 100
    assert out["props"]["max_functions"]["maximum"] == 1_000_000
    for key, word, cap in (
        ("rounds", "rounds", "100"),
        ("rounds101", "rounds", "100"),
        ("maxf", "max_functions", "1,000,000"),
    ):
        err = out[key]
        assert "\n" not in err.strip(), err
        assert f"{word} must be at most {cap}" in err, err
    assert out["token"] == before  # the refusals wrote nothing
    assert out["ok"]["backend"] and out["ok"]["rounds_run"] >= 1
