"""kbtool.agents: tokens, verifier, contexts and their bounds (pure, no network)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kbtool.agents import (
    Proposal,
    bound_context,
    callers_of,
    context_from_facts,
    is_generic_name,
    refresh_names,
    split_tokens,
    verify,
)
from kbtool.agents.tokens import is_c_identifier, looks_like_symbol, token_scores
from tests.support.paths import ROOT

DEMO = ROOT / "kbtool" / "demo" / "zstd-1.5.5.wasm"


def test_split_tokens_handles_snake_camel_and_acronyms():
    assert split_tokens("ZSTD_compressBegin_usingDict") == [
        "zstd",
        "compress",
        "begin",
        "using",
        "dict",
    ]
    assert split_tokens("HTTPServerInit2") == ["http", "server", "init", "2"]
    assert split_tokens("__wasi_fd_write") == ["wasi", "fd", "write"]
    assert token_scores("get_error_string", "ERR_getErrorString") == (3, 3, 4)


@pytest.mark.parametrize(
    "name",
    ["func_12", "sub_4a", "unknown", "f3", "fn12", "wasm_function_7", "__", "x1", "FUNC_0x1f"],
)
def test_generic_names_detected(name):
    assert is_generic_name(name)


@pytest.mark.parametrize(
    "name", ["fd_write", "ZSTD_isError", "memcpy", "subtract", "unknown_field_reader"]
)
def test_real_names_not_generic(name):
    assert not is_generic_name(name)


def test_identifier_and_symbol_shapes():
    assert is_c_identifier("_a1") and not is_c_identifier("1a") and not is_c_identifier("int")
    assert not is_c_identifier("a-b") and not is_c_identifier("x" * 200)
    assert looks_like_symbol("ZSTD_compress") and looks_like_symbol("readFrame")
    assert not looks_like_symbol("Error") and not looks_like_symbol("invalid")


def _p(name, conf=0.5, **kw):
    return Proposal(index=1, name=name, confidence=conf, **kw)


CTX = {
    "index": 1,
    "type": "(i32) -> ()",
    "callees": [],
    "mem_ops": {"loads": 1, "stores": 0},
    "mnemonics": ["local.get", "i32.load", "drop", "end"],
}


def test_verifier_reasons():
    assert verify(_p("parse_header"), CTX).ok
    assert verify(_p(None, error="malformed answer: x"), CTX).code == "malformed"
    assert verify(_p("3parse"), CTX).code == "not_identifier"
    assert verify(_p("a b"), CTX).code == "not_identifier"
    assert verify(_p("func_12"), CTX).code == "generic"
    assert verify(_p("parse_header", conf=1.5), CTX).code == "bad_confidence"
    assert verify(_p("parse_header", conf=float("nan")), CTX).code == "bad_confidence"
    assert verify(_p("parse_header"), CTX, {"parse_header"}).code == "taken"
    own = {**CTX, "existing": {"name": "parse_header", "confidence": 0.2}}
    assert verify(_p("parse_header"), own, {"parse_header"}).ok


def test_verifier_rejects_names_that_contradict_facts():
    # claims allocation, calls nothing, returns nothing
    assert verify(_p("buffer_alloc"), CTX).code == "inconsistent"
    assert verify(_p("is_ready"), CTX).code == "inconsistent"
    assert verify(_p("log_message"), CTX).code == "inconsistent"
    assert verify(_p("reset_state"), CTX).code == "inconsistent"
    # the same names fit once the facts allow them
    calls = {**CTX, "type": "(i32) -> i32", "callees": [{"index": 3, "name": None}]}
    for n in ("buffer_alloc", "is_ready", "log_message", "reset_state"):
        assert verify(_p(n), calls).ok, n


def test_bound_context_caps_size_without_mutating():
    ctx = {
        "index": 7,
        "type": "(i32) -> i32",
        "strings": [f"message number {i} " * 20 for i in range(100)],
        "constants": list(range(500)),
        "lifted_c": "int f(void) {\n" + "  x++;\n" * 5000,
        "callees": [{"index": i, "name": f"callee_{i}", "import": None} for i in range(200)],
    }
    snap = json.dumps(ctx)
    small = bound_context(ctx, 3000)
    assert json.dumps(ctx) == snap
    assert len(json.dumps(small)) <= 3000
    assert small["index"] == 7 and small["type"] == "(i32) -> i32"
    assert "truncated" in small and small["strings"][0].startswith("message number 0")
    full = bound_context({"index": 1, "strings": ["a"]}, 3000)
    assert full == {"index": 1, "strings": ["a"]}


@pytest.fixture(scope="module")
def demo_analysis():
    from kbtool.wasm import analyze_module

    return analyze_module(DEMO.read_bytes())


def test_context_from_facts_and_refresh(demo_analysis):
    fns = demo_analysis.functions
    callers = callers_of(fns)
    names = {f.index: f.import_field for f in fns if f.imported}
    wrapper = next(
        f for f in fns if not f.imported and len(set(f.calls)) == 1 and fns[f.calls[0]].imported
    )
    ctx = context_from_facts(fns, wrapper.index, names, callers, stable_id="sid")
    assert ctx["stable_id"] == "sid" and ctx["type"] == wrapper.type_sig
    assert ctx["imports_called"] == [fns[wrapper.calls[0]].import_name]
    assert ctx["callees"][0]["name"] == fns[wrapper.calls[0]].import_field
    assert ctx["mnemonics"][-1] == "end"
    json.dumps(ctx)  # plain JSON-ready dict
    caller = ctx["callers"][0]["index"]
    again = refresh_names(ctx, {caller: "my_caller"})
    assert again["callers"][0]["name"] == "my_caller" and ctx["callers"][0]["name"] is None


def test_agents_package_is_pure():
    code = (
        "import sys, kbtool.agents, kbtool.agents.backends, kbtool.agents.rounds;"
        "bad=[m for m in ('sqlite3','kbtool.kb','textual','starlette','uvicorn','mcp','typer',"
        "'anthropic','openai') if m in sys.modules]; print(bad)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"


def test_should_consider_follows_only_unconfident():
    from kbtool.agents import should_consider

    assert should_consider(None) and should_consider({"name": None})
    assert should_consider({"name": "a", "confidence": 0.49, "locked": False})
    assert not should_consider({"name": "a", "confidence": 0.5, "locked": False})
    assert not should_consider({"name": "a", "confidence": 0.1, "locked": True})
    assert should_consider({"name": "a", "confidence": 0.9, "locked": True}, only_unconfident=False)


def test_pass_summary_has_exactly_the_contract_keys():
    from kbtool.agents import PassSummary, Verdict

    s = PassSummary("offline")
    p = _p("parse_header", source="specialist")
    s.record_proposal(p)
    s.record_write(p)
    q = _p("func_1")
    s.record_proposal(q)
    s.record_verifier_reject(q, Verdict.reject("generic", "placeholder"))
    s.record_economy_reject(_p("other_name"), "confidence not above oracle 0.9")
    d = s.to_dict()
    assert list(d) == [
        "backend", "considered", "proposed", "written", "rejected_by_verifier",
        "rejected_by_economy", "skipped_existing", "specialist_proposed", "specialist_written",
        "rounds_run", "suggested", "cancelled", "details",
    ]  # fmt: skip
    assert (d["proposed"], d["written"], d["specialist_proposed"], d["specialist_written"]) == (
        2, 1, 1, 1,
    )  # fmt: skip
    assert [x["kind"] for x in d["details"]] == ["write", "verifier_reject", "economy_reject"]
    assert d["details"][1]["code"] == "generic"
