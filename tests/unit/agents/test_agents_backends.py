"""Backend registry, selection and the provider backends driven through the REAL SDKs against
a fake server on 127.0.0.1 (testkit/llm_server.py). Never the internet."""

from __future__ import annotations

import importlib.util

import pytest

from kbtool.agents import (
    BackendUnavailable,
    OfflineBackend,
    agent_backends,
    canonical_selector,
    resolve_backend,
    run_round,
)
from kbtool.agents.prompts import MalformedAnswer, parse_answer, user_prompt
from testkit.llm_server import FakeLLMServer

HAS_A = importlib.util.find_spec("anthropic") is not None
HAS_B = importlib.util.find_spec("openai") is not None
needs_a = pytest.mark.skipif(not HAS_A, reason="anthropic SDK not installed (kbtool[llm])")
needs_b = pytest.mark.skipif(not HAS_B, reason="openai SDK not installed (kbtool[llm])")

# a function no specialist rule names, so the model is asked
CTX = {
    "index": 12,
    "stable_id": "s12",
    "type": "(i32, i32) -> i32",
    "instr_count": 90,
    "strings": ["bad magic number"],
    "callees": [{"index": 3, "name": None, "import": None}],
    "callers": [],
    "mem_ops": {"loads": 4, "stores": 1, "offsets": [0, 4]},
}
ANSWER = (
    '{"explanation": "checks the magic then reads", "name": "read_frame_header", '
    '"summary": "parses a header", "confidence": 0.97, "reasons": ["magic string"], '
    '"evidence": {"strings": ["bad magic number"], "callees": ["f3"]}}'
)


def test_agent_backends_entries_follow_the_contract():
    env = {"PROVIDER_B_API_KEY": "k", "PROVIDER_A_MODEL": "model-x"}
    entries = {e["name"]: e for e in agent_backends(env)}
    assert list(entries) == ["offline", "provider_a", "provider_b"]
    for e in entries.values():
        assert set(e) == {"name", "backend", "aliases", "available", "requires", "default_model"}
    assert entries["offline"]["available"] and entries["offline"]["requires"] == []
    assert entries["offline"]["default_model"] is None
    assert entries["provider_a"]["aliases"] == ["provider_a_alias_1", "provider_a_alias_2"]
    assert entries["provider_a"]["requires"] == ["anthropic", "PROVIDER_A_API_KEY"]
    assert entries["provider_a"]["available"] is False  # no key
    assert entries["provider_a"]["default_model"] == "model-x"
    assert entries["provider_b"]["available"] is HAS_B
    assert entries["provider_b"]["requires"] == ["openai", "PROVIDER_B_API_KEY"]


def test_selection_auto_aliases_and_errors():
    assert isinstance(resolve_backend("auto", {}), OfflineBackend)
    assert canonical_selector("provider_a_alias_2") == "provider_a"
    with pytest.raises(ValueError, match="unknown agent backend"):
        resolve_backend("gpt9", {})
    with pytest.raises(BackendUnavailable, match="PROVIDER_A_API_KEY"):
        resolve_backend("provider_a_alias_1", {})
    with pytest.raises(BackendUnavailable, match="PROVIDER_B_API_KEY"):
        resolve_backend("provider_b", {})


@needs_a
@needs_b
def test_auto_prefers_provider_a_then_provider_b():
    both = {"PROVIDER_A_API_KEY": "a", "PROVIDER_B_API_KEY": "b"}
    assert resolve_backend("auto", both).name == "provider_a"
    assert resolve_backend("auto", {"PROVIDER_B_API_KEY": "b"}).name == "provider_b"


def test_prompt_asks_for_json_explanation_first_and_parser_is_strict():
    text = user_prompt(CTX)
    assert '"bad magic number"' in text and "JSON" in text
    from kbtool.agents.prompts import SYSTEM_PROMPT

    assert SYSTEM_PROMPT.index('"explanation"') < SYSTEM_PROMPT.index('"name"')
    assert parse_answer("```json\n" + ANSWER + "\n```")["name"] == "read_frame_header"
    assert parse_answer("Sure! " + ANSWER)["confidence"] == 0.97
    for bad in (
        "",
        "no json here",
        '{"name": 3}',
        '["read"]',
        '{"name": "x", "confidence": "hi"}',
        '{"name": "x", "reasons": 5}',
    ):
        with pytest.raises(MalformedAnswer):
            parse_answer(bad)


def _env(kind, srv):
    if kind == "a":
        return {
            "PROVIDER_A_API_KEY": "test",
            "PROVIDER_A_BASE_URL": srv.url,
            "PROVIDER_A_MODEL": "fake-claude",
        }
    return {
        "PROVIDER_B_API_KEY": "test",
        "PROVIDER_B_BASE_URL": srv.url + "/v1",
        "PROVIDER_B_MODEL": "fake-gpt",
    }


PROVIDERS = [
    pytest.param("a", "provider_a", "anthropic", "/v1/messages", marks=needs_a),
    pytest.param("b", "provider_b", "openai", "/v1/chat/completions", marks=needs_b),
]


@pytest.mark.parametrize(("kind", "selector", "backend", "path"), PROVIDERS)
def test_provider_success_records_backend_and_model(kind, selector, backend, path):
    with FakeLLMServer([("text", ANSWER), ("text", ANSWER)]) as srv:
        be = resolve_backend(selector, _env(kind, srv), max_retries=0)
        (rv,) = run_round(be, [CTX], set())
    p = rv.proposal
    assert rv.verdict.ok and p.name == "read_frame_header" and p.source == "llm"
    # calibrated, not the model's 0.97: two prompts agree and both claims are in the facts
    assert p.confidence == 0.8 and p.rule == "llm_agreed_evidenced"
    assert p.calibration["agree"] is True and len(p.calibration["verified"]) == 2
    assert be.meter.calls == 2 and be.meter.tokens_in == srv.tokens_in > 100
    ev = p.evidence()
    assert ev["backend"] == backend and ev["model"] == srv.requests[0]["model"]
    assert ev["model"] == ("fake-claude" if kind == "a" else "fake-gpt")
    assert any("model_confidence=0.97" in r for r in ev["reasons"])
    assert [r["path"] for r in srv.requests] == [path, path]
    assert "bad magic number" in str(srv.requests[0]["body"]["messages"])


@pytest.mark.parametrize(("kind", "selector", "backend", "path"), PROVIDERS)
def test_provider_retries_429_then_succeeds(kind, selector, backend, path):
    with FakeLLMServer([("status", 429), ("text", ANSWER)]) as srv:
        be = resolve_backend(selector, _env(kind, srv), max_retries=2, opinions=1)
        (rv,) = run_round(be, [CTX], set())
    assert rv.verdict.ok and rv.proposal.name == "read_frame_header"
    assert len(srv.requests) == 2


@pytest.mark.parametrize(("kind", "selector", "backend", "path"), PROVIDERS)
def test_provider_500_and_malformed_bodies_are_counted_rejects(kind, selector, backend, path):
    script = [
        ("status", 500),
        ("status", 500),
        ("raw", "<html>oops"),
        ("text", "I think it parses headers."),
        ("text", '{"name": "func_7"}'),
    ]
    ctxs = [{**CTX, "index": i} for i in range(4)]
    with FakeLLMServer(script) as srv:
        be = resolve_backend(selector, _env(kind, srv), max_retries=1, opinions=1)
        got = run_round(be, ctxs, set(), concurrency=1)
    codes = [rv.verdict.code for rv in got]
    assert codes == ["provider_error", "provider_error", "malformed", "generic"]
    assert all(rv.proposal.model for rv in got)
    assert "500" in got[0].proposal.error or "Internal" in got[0].proposal.error


@needs_a
def test_provider_a_honours_sdk_base_url_variable():
    with FakeLLMServer([("text", ANSWER)]) as srv:
        be = resolve_backend(
            "provider_a_alias_1", {"PROVIDER_A_API_KEY": "k", "ANTHROPIC_BASE_URL": srv.url}
        )
        (rv,) = run_round(be, [CTX], set())
    assert rv.proposal.name == "read_frame_header" and be.name == "provider_a"
    assert srv.requests and srv.requests[0]["path"] == "/v1/messages"


@needs_b
def test_provider_timeout_is_a_reject_not_a_hang():
    with FakeLLMServer([("sleep", 2.0)]) as srv:
        be = resolve_backend("provider_b", _env("b", srv), timeout=0.3, max_retries=0)
        (rv,) = run_round(be, [CTX], set())
    assert rv.verdict.code == "provider_error" and "DeadlineExceeded" in rv.proposal.error


@needs_b
def test_specialist_answers_known_families_without_a_model_call():
    wrapper = {
        "index": 3,
        "type": "(i32, i32) -> i32",
        "instr_count": 6,
        "strings": [],
        "call_indirect": 0,
        "loops": 0,
        "mem_ops": {"loads": 0, "stores": 0},
        "callees": [{"index": 0, "name": "fd_close", "import": "wasi_snapshot_preview1.fd_close"}],
    }
    with FakeLLMServer() as srv:
        be = resolve_backend("provider_b", _env("b", srv), max_retries=0)
        got = run_round(be, [wrapper, CTX, {**CTX, "index": 13}], {"fd_close"}, concurrency=3)
    assert [rv.proposal.source for rv in got] == ["specialist", "llm", "llm"]
    assert got[0].proposal.name == "__wasi_fd_close" and got[0].proposal.backend == "openai"
    assert len(srv.requests) == 4  # two prompts each; the specialist case made no call
    # both llm answers are canned "fake_named_<index>" names: distinct, verified
    assert [rv.verdict.ok for rv in got] == [True, True, True]


@needs_b
def test_same_name_twice_in_a_round_is_rejected_the_second_time():
    with FakeLLMServer([("text", ANSWER), ("text", ANSWER)]) as srv:
        be = resolve_backend("provider_b", _env("b", srv), max_retries=0, opinions=1)
        got = run_round(be, [CTX, {**CTX, "index": 13}], set(), concurrency=1)
    assert [rv.verdict.code for rv in got] == ["ok", "taken"]


def test_parse_answer_never_crashes_on_junk():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=300, deadline=None)
    @given(st.one_of(st.text(max_size=300), st.from_regex(r"\{.{0,80}\}", fullmatch=True)))
    def check(text):
        try:
            ans = parse_answer(text)
        except MalformedAnswer:
            return
        assert isinstance(ans["name"], str) and isinstance(ans["confidence"], float)

    check()


def test_parse_answer_rejects_deep_nesting_cleanly():
    with pytest.raises(MalformedAnswer):
        parse_answer("{" + '"a":[' * 5000 + "]" * 5000 + "}")
