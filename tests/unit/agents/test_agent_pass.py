"""The agent pass service (kbtool.services.agent_pass) and its surfaces: `kbtool agent`, MCP
`agent_backends` / `run_agent_pass`, provider_b through the real openai SDK against a local
fake server. All on the demo KB (two real zstd releases, export and hand names)."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from kbtool.agents import BackendUnavailable, agent_backends
from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.kb.errors import UnknownVersionError
from kbtool.kb.gate import upsert_symbol
from kbtool.services import agent_pass
from kbtool.services.agent_pass import plan_agent_pass, run_agent_pass, would_write
from tests.support.paths import ROOT

CLI = [sys.executable, "-m", "kbtool.cli"]
SUMMARY_KEYS = {
    "backend",
    "considered",
    "proposed",
    "written",
    "rejected_by_verifier",
    "rejected_by_economy",
    "skipped_existing",
    "specialist_proposed",
    "specialist_written",
    "rounds_run",
    "details",
}
EXTRA_KEYS = {"suggested", "cancelled"}  # extra fields (the contract allows them)
OFFLINE = {"PATH": os.environ.get("PATH", "")}  # no provider key: offline is all there is


@pytest.fixture
def kb(demo_kb) -> Path:
    return demo_kb


@pytest.fixture
def conn(kb):
    c = open_rw(kb, create=False)
    yield c
    c.close()


def latest(conn: sqlite3.Connection) -> int:
    return queries.latest_version_id(conn)


def symbols(conn: sqlite3.Connection) -> list[tuple]:
    return conn.execute(
        "SELECT stable_id, name, provenance, confidence, locked, evidence FROM symbols"
        " ORDER BY stable_id"
    ).fetchall()


def table_count(conn: sqlite3.Connection, table: str) -> int:
    return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


def feed(conn: sqlite3.Connection, kind: str) -> list[dict]:
    return [
        {"stable_id": s, "version_id": v, "payload": json.loads(p)}
        for s, v, p in conn.execute(
            "SELECT stable_id, version_id, payload FROM events WHERE kind = ? ORDER BY id", (kind,)
        )
    ]


def offline_writes(conn: sqlite3.Connection, vid: int) -> list[dict]:
    """What an offline pass would write on this KB (a dry run), to pick functions to set up."""
    s = run_agent_pass(conn, vid, "offline", dry_run=True, env=OFFLINE)
    return [d for d in s["details"] if d["kind"] == "write"]


# ---------------------------------------------------------------- the service


def test_summary_has_exactly_the_contract_keys(conn):
    s = run_agent_pass(conn, latest(conn), "offline", env=OFFLINE)
    assert set(s) == SUMMARY_KEYS | EXTRA_KEYS
    assert s["cancelled"] is False
    assert s["backend"] == "offline"
    for k in SUMMARY_KEYS - {"backend", "details"} | {"suggested"}:
        assert isinstance(s[k], int) and s[k] >= 0, k
    assert s["written"] > 0 and s["rounds_run"] == 1
    assert s["proposed"] == (
        s["written"] + s["rejected_by_verifier"] + s["rejected_by_economy"] + s["suggested"]
    )
    assert s["specialist_written"] <= s["written"] and s["specialist_proposed"] <= s["proposed"]
    assert len(s["details"]) == s["proposed"]
    assert {d["kind"] for d in s["details"]} <= {
        "write",
        "suggest",
        "verifier_reject",
        "economy_reject",
    }


def test_writes_are_agent_annotations_with_evidence_and_feed_events(conn):
    vid = latest(conn)
    s = run_agent_pass(conn, vid, "offline", env=OFFLINE)
    writes = [d for d in s["details"] if d["kind"] == "write"]
    for d in writes:
        sym = queries.get_symbol(conn, d["stable_id"])
        assert (sym["name"], sym["provenance"], sym["confidence"]) == (
            d["name"],
            "agent",
            d["confidence"],
        )
        ev = sym["evidence"][0]
        assert ev["backend"] == "offline" and ev["actor"] == "agent:offline"
        assert ev["rule"] and ev["reasons"] and ev["source"] in ("specialist", "heuristic")
    started, done = feed(conn, "agent-pass-started"), feed(conn, "agent-pass-done")
    assert len(started) == len(done) == 1 and started[0]["version_id"] == vid
    assert started[0]["payload"]["backend"] == "offline"
    assert {k: v for k, v in s.items() if k != "details"}.items() <= done[0]["payload"].items()
    named = feed(conn, "named")
    assert [(e["stable_id"], e["payload"]["name"]) for e in named] == [
        (d["stable_id"], d["name"]) for d in writes
    ]
    news = [
        d
        for d in s["details"]
        if d["kind"] not in ("write", "suggest") and d["reason"] != "no change"
    ]
    kept = [d for d in s["details"] if d["kind"] == "suggest"]
    assert kept and [e["stable_id"] for e in feed(conn, "suggested")] == [
        d["stable_id"] for d in kept
    ]
    assert [e["stable_id"] for e in feed(conn, "rejected")] == [d["stable_id"] for d in news]
    run = json.loads(
        conn.execute(
            "SELECT summary FROM analysis_runs WHERE kind = 'agent' AND version_id = ?", (vid,)
        ).fetchone()[0]
    )
    assert run["written"] == s["written"] and run["run"]["backend"] == "offline"


def test_gate_contract_rows_hold_under_a_pass(conn):
    vid = latest(conn)
    picks = offline_writes(conn, vid)
    assert len(picks) >= 6, "the demo KB gives the offline pass enough to name"
    locked, human, low_agent, high_agent, same_agent, low_oracle = picks[:6]
    upsert_symbol(
        conn,
        locked["stable_id"],
        "kept_locked",
        provenance="human",
        confidence=0.2,
        actor="human:test",
        lock=True,
    )
    upsert_symbol(
        conn,
        human["stable_id"],
        "kept_human",
        provenance="human",
        confidence=0.2,
        actor="human:test",
        lock=False,
    )
    upsert_symbol(
        conn,
        low_agent["stable_id"],
        "old_agent_guess",
        provenance="agent",
        confidence=0.01,
        actor="agent:test",
    )
    upsert_symbol(
        conn,
        high_agent["stable_id"],
        "strong_agent_guess",
        provenance="agent",
        confidence=0.99,
        actor="agent:test",
    )
    upsert_symbol(
        conn,
        same_agent["stable_id"],
        "equal_agent_guess",
        provenance="agent",
        confidence=same_agent["confidence"],
        actor="agent:test",
    )
    upsert_symbol(
        conn,
        low_oracle["stable_id"],
        "weak_oracle_name",
        provenance="oracle",
        confidence=0.01,
        actor="oracle:test",
    )

    s = run_agent_pass(conn, vid, "offline", only_unconfident=False, env=OFFLINE)
    name = lambda d: queries.get_symbol(conn, d["stable_id"])["name"]  # noqa: E731
    assert name(locked) == "kept_locked"
    assert name(human) == "kept_human"
    assert name(low_agent) == low_agent["name"]  # strictly higher confidence replaces
    assert name(high_agent) == "strong_agent_guess"
    assert name(same_agent) == "equal_agent_guess"  # equal is not strictly higher
    assert name(low_oracle) == low_oracle["name"]
    kinds = {d["stable_id"]: d for d in s["details"]}
    for p in (locked, human, high_agent, same_agent):
        assert kinds[p["stable_id"]]["kind"] == "economy_reject", p
    assert kinds[locked["stable_id"]]["reason"] == "locked"
    assert queries.get_symbol(conn, locked["stable_id"])["locked"]


def test_reruns_converge(conn):
    vid = latest(conn)
    first = run_agent_pass(conn, vid, "offline", rounds=5, env=OFFLINE)
    assert first["written"] > 0
    before = symbols(conn)
    again = run_agent_pass(conn, vid, "offline", rounds=5, env=OFFLINE)
    assert again["written"] == 0
    assert symbols(conn) == before
    everything = run_agent_pass(conn, vid, "offline", only_unconfident=False, rounds=5, env=OFFLINE)
    assert everything["written"] == 0 and symbols(conn) == before


def test_rounds_use_names_written_earlier_and_stop_at_a_fixpoint(kb, tmp_path):
    one = open_rw(kb, create=False)
    import shutil

    other = tmp_path / "other.db"
    shutil.copy(kb, other)
    many = open_rw(other, create=False)
    vid = latest(one)
    # floor 0: every verified name is written, so later rounds see them (the floor is tested
    # in test_suggestions.py)
    s1 = run_agent_pass(one, vid, "offline", rounds=1, env=OFFLINE, min_confidence=0.0)
    s5 = run_agent_pass(many, vid, "offline", rounds=10, env=OFFLINE, min_confidence=0.0)
    assert s5["written"] >= s1["written"]
    assert 1 <= s5["rounds_run"] < 10  # a fixpoint ends the pass early
    if s5["rounds_run"] > 1:
        assert s5["written"] > s1["written"]
    one.close()
    many.close()


def test_only_unconfident_skips_before_any_backend_call(conn, monkeypatch):
    vid = latest(conn)
    fns = queries.list_functions(conn, vid)
    confident = set()
    for f in fns:
        sym = queries.get_symbol(conn, f["stable_id"])
        if sym and sym["name"] and (sym["locked"] or sym["confidence"] >= 0.5):
            confident.add(f["stable_id"])
    assert confident and len(confident) < len(fns)

    asked: list[str] = []
    real = agent_pass.resolve_backend

    class Recording:
        def __init__(self, inner):
            self.inner, self.name, self.backend, self.model = inner, "offline", "offline", None

        def propose(self, ctx, taken):
            asked.append(ctx["stable_id"])
            return self.inner.propose(ctx, taken)

    monkeypatch.setattr(
        agent_pass, "resolve_backend", lambda sel, env=None, **kw: Recording(real(sel, env, **kw))
    )
    s = run_agent_pass(conn, vid, "offline", env=OFFLINE)
    assert s["skipped_existing"] == len(confident)
    assert s["considered"] == len(fns) - len(confident)
    assert not confident & set(asked)
    asked.clear()
    s_all = run_agent_pass(conn, vid, "offline", only_unconfident=False, env=OFFLINE)
    assert s_all["skipped_existing"] == 0 and s_all["considered"] == len(fns)
    assert confident <= set(asked)


def test_dry_run_writes_nothing_and_decides_as_the_gate(kb, conn, tmp_path):
    vid = latest(conn)
    upsert_symbol(
        conn,
        offline_writes(conn, vid)[0]["stable_id"],
        "x_human",
        provenance="human",
        confidence=0.1,
        actor="human:test",
        lock=False,
    )
    counts = {t: table_count(conn, t) for t in ("annotation_events", "events", "analysis_runs")}
    before = symbols(conn)
    ro = open_ro(kb)
    dry = run_agent_pass(
        ro, vid, "offline", only_unconfident=False, rounds=3, dry_run=True, env=OFFLINE
    )
    ro.close()
    assert symbols(conn) == before
    assert {t: table_count(conn, t) for t in counts} == counts
    real = run_agent_pass(conn, vid, "offline", only_unconfident=False, rounds=3, env=OFFLINE)
    strip = lambda s: [(d["kind"], d["index"], d["name"], d["confidence"]) for d in s["details"]]  # noqa: E731
    assert strip(dry) == strip(real)
    assert {k: v for k, v in dry.items() if k != "details"} == {
        k: v for k, v in real.items() if k != "details"
    }
    assert real["rejected_by_economy"] >= 1


def test_would_write_follows_the_contract_table():
    def sym(p, c, locked=False):
        return {"name": "a", "provenance": p, "confidence": c, "locked": locked}

    assert would_write(None, "b", 0.1) == (True, "unnamed")
    assert not would_write(sym("human", 0.1, True), "b", 1.0)[0]
    assert not would_write(sym("human", 0.1), "b", 1.0)[0]
    assert would_write(sym("oracle", 0.5), "b", 0.6)[0]
    assert not would_write(sym("oracle", 0.5), "b", 0.5)[0]
    assert would_write(sym("agent", 0.5), "b", 0.51)[0]
    assert not would_write(sym("agent", 0.5), "b", 0.5)[0]
    assert would_write(sym("diff-carry", 0.9), "b", 0.1)[0]
    assert not would_write(None, "not an identifier", 0.9)[0]


def test_cost_guard_and_errors(conn):
    vid = latest(conn)
    s = run_agent_pass(conn, vid, "offline", max_functions=3, env=OFFLINE)
    assert s["considered"] == 3
    plan = plan_agent_pass(conn, vid, "offline", env=OFFLINE)
    assert plan.limit is None and plan.estimated_calls == 0
    with pytest.raises(UnknownVersionError):
        run_agent_pass(conn, 999, "offline", env=OFFLINE)
    with pytest.raises(ValueError, match="unknown agent backend"):
        run_agent_pass(conn, vid, "gpt", env=OFFLINE)
    with pytest.raises(BackendUnavailable, match="PROVIDER_B_API_KEY"):
        run_agent_pass(conn, vid, "provider_b", env=OFFLINE)
    with pytest.raises(ValueError, match="rounds"):
        run_agent_pass(conn, vid, "offline", rounds=0, env=OFFLINE)
    assert run_agent_pass(conn, vid, "auto", env=OFFLINE)["backend"] == "offline"


# ---------------------------------------------------------------- CLI


def cli(*args: str, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    for k in ("PROVIDER_A_API_KEY", "PROVIDER_B_API_KEY"):
        if env is None or k not in env:
            full.pop(k, None)
    p = subprocess.run(CLI + list(args), capture_output=True, text=True, env=full, timeout=300)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def test_cli_agent(kb):
    dry = cli("agent", "2", "--db", str(kb), "--backend", "offline", "--dry-run", "--json")
    s = json.loads(dry.stdout)
    assert set(s) == SUMMARY_KEYS | EXTRA_KEYS and s["written"] > 0
    c = open_ro(kb)
    assert queries.coverage(c, 2)["agent_named"] == 0
    c.close()
    out = cli("agent", "2", "--db", str(kb), "--rounds", "2")
    assert "agent pass on version 2 with offline" in out.stdout and "written" in out.stdout
    c = open_ro(kb)
    assert queries.coverage(c, 2)["agent_named"] > 0
    c.close()
    bad = cli("agent", "9", "--db", str(kb), check=False)
    assert bad.returncode == 1 and "unknown version id 9" in bad.stderr
    miss = cli("agent", "2", "--db", str(kb), "--backend", "provider_b", check=False)
    assert miss.returncode == 1 and "PROVIDER_B_API_KEY" in miss.stderr


def test_cli_escapes_untrusted_names(kb, capsys):
    from kbtool.commands.agent import _print_summary

    detail = {
        "kind": "write",
        "index": 1,
        "stable_id": "s",
        "name": "[red]x\x1b[2J",
        "confidence": 0.5,
        "source": "llm",
        "backend": "openai",
        "model": "m",
        "reason": "unnamed",
    }
    summary = {k: 0 for k in SUMMARY_KEYS} | {"backend": "offline", "details": [detail]}
    _print_summary(summary, 1, False)
    out = capsys.readouterr().out
    assert "[red]x" in out and "\x1b[2J" not in out


# ---------------------------------------------------------------- provider_b for real


def test_provider_b_pass_through_the_openai_sdk(kb):
    pytest.importorskip("openai")
    from testkit.llm_server import FakeLLMServer

    script = [("status", 429), ("text", "I think it is memcpy."), ("raw", "{not json")]
    with FakeLLMServer(script=script) as srv:
        env = {
            "PROVIDER_B_API_KEY": "test-key",
            "PROVIDER_B_BASE_URL": srv.url + "/v1",
            "PROVIDER_B_MODEL": "fake-model-b",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }
        p = cli(
            "agent",
            "2",
            "--db",
            str(kb),
            "--backend",
            "provider_b",
            "--max-functions",
            "40",
            "--concurrency",
            "1",
            "--json",
            env=env,
        )
        requests = list(srv.requests)
        billed = (srv.tokens_in, srv.tokens_out)
    s = json.loads(p.stdout)
    assert s["backend"] == "provider_b" and s["considered"] == 40
    est = re.search(r"estimate: up to (\d+) model calls to provider_b \(fake-model-b\)", p.stderr)
    assert est and int(est.group(1)) == 2 * (s["proposed"] - s["specialist_proposed"])
    llm = [d for d in s["details"] if d["source"] == "llm"]
    assert llm and all(d["model"] == "fake-model-b" and d["backend"] == "openai" for d in llm)
    # two prompts per function, except the two whose first answer was malformed; one 429
    # retried by the SDK
    assert len(requests) == 2 * (s["proposed"] - s["specialist_proposed"]) - 2 + 1
    assert (s["tokens_in"], s["tokens_out"]) == billed
    assert s["calls"] + s["call_errors"] == len(requests) - 1
    assert all(
        r["path"] == "/v1/chat/completions" and r["model"] == "fake-model-b" for r in requests
    )
    bad = [d for d in s["details"] if d.get("code") in ("malformed", "provider_error")]
    assert len(bad) == 2 and s["rejected_by_verifier"] >= 2
    written = [d for d in llm if d["kind"] == "write"]
    assert written
    c = open_ro(kb)
    for d in written:
        sym = queries.get_symbol(c, d["stable_id"])
        ev = sym["evidence"][0]
        assert sym["provenance"] == "agent" and sym["name"] == d["name"]
        assert ev["backend"] == "openai" and ev["model"] == "fake-model-b"
        assert ev["actor"] == "agent:provider_b" and sym["confidence"] <= 0.85
    c.close()


# ---------------------------------------------------------------- MCP


def test_mcp_agent_tools(kb):
    pytest.importorskip("mcp.client.stdio")
    import asyncio

    from tests.support.mcp import call, call_error, dump, mcp_session

    async def main():
        async with mcp_session(kb) as s:
            tools = {t.name: dump(t) for t in (await s.list_tools()).tools}
            backends = await call(s, "agent_backends")
            summary = await call(s, "run_agent_pass", version_id=2, backend="offline", rounds=2)
            again = await call(s, "run_agent_pass", version_id=2, backend="offline", rounds=2)
            errors = [
                await call_error(s, "run_agent_pass", version_id=2, backend="gpt"),
                await call_error(s, "run_agent_pass", version_id=999, backend="offline"),
                await call_error(s, "run_agent_pass", version_id=2, backend="provider_b"),
            ]
        return tools, backends, summary, again, errors

    from tests.support.mcp import server_env

    env = server_env()
    if env.get("PROVIDER_B_API_KEY") or os.environ.get("PROVIDER_B_API_KEY"):
        pytest.skip("a real PROVIDER_B_API_KEY is set")
    tools, backends, summary, again, errors = asyncio.run(main())
    schema = tools["run_agent_pass"]["inputSchema"]
    props = schema["properties"]
    assert schema.get("required") == ["version_id"]
    assert props["version_id"]["type"] == "integer"
    assert props["only_unconfident"] == {
        **props["only_unconfident"],
        "type": "boolean",
        "default": True,
    }
    assert props["rounds"]["type"] == "integer" and props["rounds"]["default"] == 1
    assert props["backend"]["default"] == "auto"
    assert props["backend"]["enum"] == [
        "auto",
        "offline",
        "provider_a",
        "provider_a_alias_1",
        "provider_a_alias_2",
        "provider_b",
    ]
    assert tools["agent_backends"]["inputSchema"].get("properties", {}) == {}
    assert backends == agent_backends(env)
    assert [b["name"] for b in backends] == ["offline", "provider_a", "provider_b"]
    for b in backends:
        assert set(b) == {"name", "backend", "aliases", "available", "requires", "default_model"}
    assert set(summary) == SUMMARY_KEYS | EXTRA_KEYS and summary["written"] > 0
    assert again["written"] == 0
    assert "auto" in errors[0] or "offline" in errors[0]
    assert "unknown version id 999" in errors[1]
    assert "PROVIDER_B_API_KEY" in errors[2]
    c = open_ro(kb)
    assert 0 < queries.coverage(c, 2)["agent_named"] <= summary["written"]
    c.close()


# ---------------------------------------------------------------- benchmark


def test_benchmark_smoke(capsys):
    from benchmarks.agent_pass import CORPUS, main

    if not (CORPUS / "zstd-1.5.6.O2.exports.stripped.wasm").exists():
        pytest.skip("ground-truth corpus not present")

    assert main(["--smoke"]) == 0
    out = capsys.readouterr().out
    assert "agent pass" in out and "ms/1k functions" in out
    assert "agree with in-memory rounds 100.0%" in out
