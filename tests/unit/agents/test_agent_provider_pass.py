"""Issue 31: prompts with the C, callees first, calibrated provider confidence, passes that
resume, a circuit breaker, costs, knowledge writes, MCP progress (real SDKs, local fakes)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from kbtool.agents.backends import proposal_from_answer
from kbtool.agents.order import bottom_up_levels
from kbtool.agents.prompts import build_prompt, parse_answer
from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.services.agent_pass import run_agent_pass
from testkit.llm_server import AnswerKey, FakeLLMServer

C = "\n".join(
    ["int32_t f7(int32_t p0) {", "  int32_t l1 = f3(p0, 16);"]
    + [f"  l1 = l1 + {k};" for k in range(200)]
    + ["  return l1;", "}"]
)
CTX = {
    "index": 7,
    "stable_id": "0123456789abcdef",
    "type": "(i32) -> i32",
    "strings": ["bad magic number"],
    "constants": [16],
    "callees": [
        {"index": 3, "name": "read_header", "import": None, "type": "(i32, i32) -> i32"},
        {"index": 4, "name": None, "import": None, "type": "(i32) -> ()"},
    ],
    "callers": [{"index": 9, "name": "main", "type": "(i32, i32) -> i32"}],
    "c_raw": C,
    "c_names": {"3": "f3", "4": "f4", "9": "f9"},
    "data": ["s_bad_magic"],
}


def test_prompt_carries_code_callees_strings_and_nothing_unusable():
    p = build_prompt(CTX, 100_000)
    assert "read_header (i32, i32) -> i32" in p.text and "f4 (unnamed) (i32) -> ()" in p.text
    assert "main (i32, i32) -> i32" in p.text and '"bad magic number"' in p.text
    assert "s_bad_magic" in p.text and "```c" in p.text
    assert "read_header(" in p.text  # the callee's placeholder f3 shows its name in the C
    assert "0123456789abcdef" not in p.text and "stable_id" not in p.text
    assert "cut to fit" not in p.text and p.dropped == []
    small = build_prompt(CTX, 600)
    assert small.tokens <= 600 and "C lines" in small.dropped
    assert "more lines cut to fit the prompt */" in small.text
    assert "read_header" in small.text  # callees outlive the C's tail
    b = build_prompt(CTX, 100_000, variant="b")
    assert b.text.index("```c") < b.text.index("Calls (names")
    assert b.key("openai", "m") != p.key("openai", "m") != p.key("openai", "other")


def test_bottom_up_levels_put_callees_first_and_cycles_together():
    ctxs = [
        {"index": 0, "callees": [{"index": 1}]},
        {"index": 1, "callees": [{"index": 2}]},
        {"index": 2, "callees": [{"index": 1}, {"index": 3}]},
        {"index": 3, "callees": []},
        {"index": 4, "callees": [{"index": 99}]},
    ]
    assert bottom_up_levels(ctxs) == [[3, 4], [1, 2], [0]]


def test_calibration_comes_from_checks_not_from_the_model():
    base = {"index": 7, "stable_id": "s", "backend": "openai", "model": "m", "source": "llm"}
    c = build_prompt(CTX, 100_000) and ""

    def ans(evidence, conf=7.5):
        text = json.dumps(
            {
                "explanation": "x",
                "name": "check_magic",
                "summary": "s",
                "confidence": conf,
                "evidence": evidence,
            }
        )
        return parse_answer(text)

    good = {"strings": ["bad magic number"], "callees": ["read_header"]}
    p = proposal_from_answer(ans(good), base, ctx=CTX, agree=True, c=c)
    assert (p.confidence, p.rule) == (0.85, "llm_agreed_evidenced")  # +consistency (magic)
    p = proposal_from_answer(ans(good, 0.1), base, ctx=CTX, agree=False, c=c)
    assert p.confidence == 0.2 and p.calibration["model_confidence"] == 0.1
    lie = {"strings": ["cannot open file"], "callees": ["read_header"]}
    p = proposal_from_answer(ans(lie, 0.99), base, ctx=CTX, agree=True, c=c)
    assert p.confidence == 0.1 and "string 'cannot open file'" in p.calibration["false"][0]
    odd = {**CTX, "c_raw": C + "\nint x = 001 + 0X1F + 08;"}  # numbers a C text may hold
    p = proposal_from_answer(ans({"constants": [31]}), base, ctx=odd, agree=True, c=odd["c_raw"])
    assert p.calibration["verified"] == ["constant 31"]
    p = proposal_from_answer(ans({}), base, ctx=CTX, agree=True, c=c)
    assert p.rule == "llm_agreed_bare" and p.confidence < 0.5


def _env(srv) -> dict[str, str]:
    return {
        "PROVIDER_B_API_KEY": "k",
        "PROVIDER_B_BASE_URL": srv.url + "/v1",
        "PROVIDER_B_MODEL": "fake-gpt",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }


def _truth(conn, vid):
    return {f["index"]: f"truth_name_{f['index']}" for f in queries.list_functions(conn, vid)}


def test_interrupted_pass_resumes_sending_only_unanswered_prompts(demo_kb):
    conn = open_rw(demo_kb, create=False)
    vid = 2
    key = AnswerKey(_truth(conn, vid))
    with FakeLLMServer(key=key) as srv:
        seen: list[int] = []

        def stop() -> bool:  # interrupt after 15 answered calls
            return len(srv.requests) >= 15

        first = run_agent_pass(
            conn, vid, "provider_b", max_functions=30, env=_env(srv), cancelled=stop, concurrency=1
        )
        sent1 = len(srv.requests)
        stored = queries.agent_answer_counts(conn, vid)["answers"]
        assert first["cancelled"] and stored == sent1 == first["calls"]
        seen.append(sent1)
    with FakeLLMServer(key=key) as srv:
        again = run_agent_pass(
            conn, vid, "provider_b", max_functions=30, env=_env(srv), concurrency=2
        )
        sent2 = len(srv.requests)
    with FakeLLMServer(key=key) as srv:  # the suggestions again: every answer is stored
        third = run_agent_pass(conn, vid, "provider_b", max_functions=30, env=_env(srv))
        assert len(srv.requests) == third["calls"]
    assert again["cached_answers"] > 0 and sent2 == again["calls"]
    est = again["estimate"]
    assert est["answered"] > 0 and sent2 <= est["prompts"] - est["answered"]
    assert third["cached_answers"] > 0
    conn.close()


def test_circuit_breaker_stops_calling_after_repeated_failures(demo_kb):
    conn = open_rw(demo_kb, create=False)
    with FakeLLMServer([("status", 500)] * 50) as srv:
        s = run_agent_pass(
            conn, 2, "provider_b", max_functions=30, env=_env(srv), retries=0, concurrency=1
        )
        assert len(srv.requests) == 5
    assert s["circuit_open"] is True and s["call_errors"] == 5
    assert not [d for d in s["details"] if d["kind"] == "write" and d["source"] == "llm"]
    conn.close()


def test_written_answer_brings_comment_locals_and_prototype(demo_kb):
    conn = open_rw(demo_kb, create=False)
    answer = json.dumps(
        {
            "explanation": "e",
            "name": "zstd_thing",
            "summary": "Does the thing.",
            "confidence": 0.9,
            "evidence": {},
            "locals": {"p0": "ctx"},
            "prototype": "int zstd_thing(int ctx)",
        }
    )
    idx = next(
        r["index"]
        for r in queries.agent_rows(conn, 2)
        if not r["imported"] and r["type_sig"].startswith("(i32) ->") and r["instr_count"] > 80
    )
    with FakeLLMServer([("text", answer)] * 2) as srv:
        s = run_agent_pass(
            conn, 2, "provider_b", functions={idx}, env=_env(srv), min_confidence=0.3, concurrency=1
        )
    (w,) = [d for d in s["details"] if d["kind"] == "write"]
    from kbtool.services.knowledge import function_knowledge

    k = function_knowledge(conn, w["stable_id"])
    assert k["comment"]["text"] == "Does the thing." and k["comment"]["provenance"] == "agent"
    assert k["locals"] and k["locals"][0]["name"] == "ctx"
    conn.close()


def test_cli_settings_are_checked_with_one_line_errors(demo_kb):
    cmd = [sys.executable, "-m", "kbtool.cli", "agent", "2", "--db", str(demo_kb)]
    env = {**os.environ, "PROVIDER_B_API_KEY": "k", "KBTOOL_AGENT_CONCURRENCY": "lots"}
    p = subprocess.run(cmd + ["--backend", "provider_b"], capture_output=True, text=True, env=env)
    assert p.returncode != 0 and "KBTOOL_AGENT_CONCURRENCY must be a whole number" in p.stderr
    assert "Traceback" not in p.stderr
    p = subprocess.run(
        cmd + ["--backend", "provider_b", "--price", "cheap"],
        capture_output=True,
        text=True,
        env={**os.environ, "PROVIDER_B_API_KEY": "k"},
    )
    assert p.returncode != 0 and "IN,OUT" in p.stderr and "Traceback" not in p.stderr


def test_mcp_run_agent_pass_reports_progress_through_the_sdk_client(demo_kb):
    pytest.importorskip("mcp.client.stdio")
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from tests.support.mcp import server_env, text_of

    notes: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress, total, message):
        notes.append((progress, total, message))

    async def main(srv):
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "kbtool.cli", "mcp", "--db", str(demo_kb)],
            env=server_env(**_env(srv)),
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                res = await s.call_tool(
                    "run_agent_pass",
                    {"version_id": 2, "backend": "provider_b", "max_functions": 6},
                    progress_callback=on_progress,
                )
                return json.loads(text_of(res))

    with FakeLLMServer() as srv:
        summary = asyncio.run(main(srv))
        sent = len(srv.requests)
    assert summary["backend"] == "provider_b" and summary["calls"] == sent > 0
    assert summary["tokens_in"] > 0 and "estimated_cost_usd" in summary
    assert (6, 6) in [(p, t) for p, t, _m in notes] and "calls" in (notes[-1][2] or "")
    c = open_ro(demo_kb)
    assert queries.agent_answer_counts(c, 2)["answers"] == sent
    c.close()
