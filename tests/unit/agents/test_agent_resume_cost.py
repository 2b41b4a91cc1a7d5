"""Issue 31, round 2: a resumed pass sends exactly the prompts the interrupted one left
unanswered; the cost estimate reads the provider's own token counts (Anthropic's counter,
the tokens billed for stored answers); a full pass through the real ``anthropic`` SDK."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.services.agent_pass import run_agent_pass
from testkit.llm_server import AnswerKey, FakeLLMServer
from tests.support.paths import ROOT

VID = 2
# f40 (its answer is malformed: asked once, never named) is called by f68 (named from a right
# answer), itself called by f483: the interrupted pass answers f40 and f68, names f68, and
# stops before f483. f40's prompt now shows its caller's name.
CHAIN = (40, 68, 483)
ONLY = range(0, 120)  # the same candidates in every pass (a cap would move on to new ones)


def _env_b(srv) -> dict[str, str]:
    return {
        "PROVIDER_B_API_KEY": "k",
        "PROVIDER_B_BASE_URL": srv.url + "/v1",
        "PROVIDER_B_MODEL": "fake-gpt",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }


def _env_a(srv) -> dict[str, str]:
    return {
        "PROVIDER_A_API_KEY": "k",
        "PROVIDER_A_BASE_URL": srv.url,
        "PROVIDER_A_MODEL": "fake-claude",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }


def _key(db: Path) -> AnswerKey:
    c = open_ro(db)
    try:
        return AnswerKey(
            {f["index"]: f"truth_name_{f['index']}" for f in queries.list_functions(c, VID)}
        )
    finally:
        c.close()


def _resume(db: Path, key: AnswerKey, stop_after: int, reuse: bool) -> tuple[int, int, dict]:
    """(answers stored by a pass interrupted after ``stop_after`` calls, calls the re-run
    sent, the re-run's summary)."""
    conn = open_rw(db, create=False)
    try:
        with FakeLLMServer(key=key) as srv:
            first = run_agent_pass(
                conn,
                VID,
                "provider_b",
                max_functions=0,
                functions=CHAIN,
                env=_env_b(srv),
                concurrency=1,
                cancelled=lambda: len(srv.requests) >= stop_after,
            )
        assert first["cancelled"]
        named = {d["index"] for d in first["details"] if d["kind"] == "write"}
        assert named == {68}  # the caller got its name after f40 was answered
        stored = queries.agent_answer_counts(conn, VID)["answers"]
        with FakeLLMServer(key=key) as srv:
            again = run_agent_pass(
                conn,
                VID,
                "provider_b",
                max_functions=0,
                functions=CHAIN,
                env=_env_b(srv),
                concurrency=2,
                reuse_answers=reuse,
            )
            return stored, len(srv.requests), again
    finally:
        conn.close()


def test_resumed_pass_sends_exactly_what_the_interrupted_one_left_unanswered(demo_kb, tmp_path):
    key = _key(demo_kb)
    assert [key.kind(i) for i in CHAIN[:2]] == ["malformed", "right"]
    copies = [Path(shutil.copy(demo_kb, tmp_path / f"kb{k}.db")) for k in range(2)]
    conn = open_rw(copies[0], create=False)
    with FakeLLMServer(key=key) as srv:  # the same pass, never interrupted
        full = run_agent_pass(
            conn,
            VID,
            "provider_b",
            max_functions=0,
            functions=CHAIN,
            env=_env_b(srv),
            concurrency=1,
        )
        assert full["calls"] == len(srv.requests) >= 4
    conn.close()
    stored, sent, again = _resume(demo_kb, key, 3, reuse=True)
    assert stored == 3 and sent == full["calls"] - stored == again["calls"] > 0
    assert again["cached_answers"] == again["estimate"]["answered"] == 1  # f40; f68 is named
    a, b = open_ro(copies[0]), open_ro(demo_kb)  # and it names what the whole pass named
    names = [{f["index"]: f["name"] for f in queries.list_functions(c, VID)} for c in (a, b)]
    a.close()
    b.close()
    assert names[0] == names[1]
    # asking again (--ask-again): f40's prompt changed (its caller's name), so it is re-sent
    stored2, sent2, _ = _resume(copies[1], key, 3, reuse=False)
    assert stored2 == 3 and sent2 == full["calls"] - stored2 + 1


def test_estimate_reads_anthropic_token_counter_then_billed_tokens(demo_kb):
    from kbtool.agents.costs import FRAMING_TOKENS, estimate_tokens
    from testkit.llm_server import billed_input

    conn = open_rw(demo_kb, create=False)
    key = _key(demo_kb)
    with FakeLLMServer(key=key) as srv:
        first = run_agent_pass(
            conn,
            VID,
            "provider_a",
            max_functions=0,
            functions=ONLY,
            env=_env_a(srv),
            concurrency=2,
            cancelled=lambda: len(srv.requests) >= 30,
        )
        billed = srv.tokens_in
        asked = [r["body"] for r in srv.requests]
        counted = len(srv.count_requests)
    est = first["estimate"]
    assert est["basis"] == "the provider's token counter on 8 prompts" and counted == 8
    # the estimator alone is off on this tokenizer; the sampled ratio fixes the scale
    prompts = [(b["system"], b["messages"][0]["content"]) for b in asked]
    raw = sum(estimate_tokens(s) + estimate_tokens(u) + FRAMING_TOKENS for s, u in prompts)
    fake = sum(billed_input(s, u) for s, u in prompts)
    assert fake == billed and abs(raw / fake - 1) > 0.05
    assert abs(est["token_ratio"] * raw / fake - 1) < 0.10
    with FakeLLMServer(key=key) as srv:  # resumed: the tokens billed so far calibrate it
        again = run_agent_pass(
            conn, VID, "provider_a", max_functions=0, functions=ONLY, env=_env_a(srv), concurrency=2
        )
        assert not srv.count_requests
        billed2 = srv.tokens_in
    est2 = again["estimate"]
    assert re.fullmatch(r"calibrated on \d+ answers the provider billed", est2["basis"])
    assert 0 < again["calls"] <= est2["calls"]  # up to: a malformed first answer skips the second
    assert abs(est2["tokens_in"] / billed2 - 1) < 0.10
    conn.close()


def test_full_pass_through_the_anthropic_sdk_from_the_cli(demo_kb):
    with FakeLLMServer() as srv:
        env = {**_env_a(srv), "PATH": "/usr/bin:/bin"}
        cmd = [
            sys.executable,
            "-m",
            "kbtool.cli",
            "agent",
            str(VID),
            "--db",
            str(demo_kb),
            "--backend",
            "provider_a",
            "--max-functions",
            "12",
            "--json",
            "--price",
            "3,15",
        ]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT, timeout=300)
        sent = len(srv.requests)
        paths = {r["path"] for r in srv.requests}
        tin = srv.tokens_in
    assert p.returncode == 0, p.stderr[-2000:]
    s = json.loads(p.stdout)
    assert s["backend"] == "provider_a" and s["calls"] == sent > 0 and paths == {"/v1/messages"}
    assert s["tokens_in"] == tin and s["estimated_cost_usd"] > 0
    assert "the provider's token counter" in p.stderr and "estimate: up to" in p.stderr
    written = [d for d in s["details"] if d["kind"] == "write" and d["source"] == "llm"]
    assert written and all(d["backend"] == "anthropic" for d in written)
    c = open_ro(demo_kb)
    assert queries.agent_answer_counts(c, VID)["answers"] == sent
    sym = {f["index"]: f for f in queries.list_functions(c, VID)}
    c.close()
    assert all(sym[d["index"]]["name"] == d["name"] for d in written)


@pytest.mark.parametrize("selector", ["provider_a", "provider_b"])
def test_mcp_progress_through_the_sdk_server_with_both_provider_sdks(demo_kb, selector):
    """run_agent_pass sends notifications/progress from the MCP SDK's server (the tool takes
    the SDK's request context), for either provider SDK."""
    pytest.importorskip("mcp.client.stdio")
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from tests.support.mcp import server_env, text_of

    notes: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress, total, message):
        notes.append((progress, total, message))

    async def main(srv):
        env = _env_a(srv) if selector == "provider_a" else _env_b(srv)
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "kbtool.cli", "mcp", "--db", str(demo_kb)],
            env=server_env(**env),
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                res = await s.call_tool(
                    "run_agent_pass",
                    {"version_id": VID, "backend": selector, "max_functions": 5},
                    progress_callback=on_progress,
                )
                return json.loads(text_of(res))

    with FakeLLMServer() as srv:
        summary = asyncio.run(main(srv))
        sent = len(srv.requests)
    assert summary["backend"] == selector and summary["calls"] == sent > 0
    assert (5, 5) in [(p, t) for p, t, _m in notes]
    assert "calls" in (notes[-1][2] or "") and "tokens in" in (notes[-1][2] or "")
