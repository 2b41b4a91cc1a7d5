"""`kbtool deep --backend provider_a|provider_b`: the provider writes the understanding (real
SDKs against a fake server on 127.0.0.1), its name goes through the verifier and the gate,
hostile text is stored without control characters, a bad answer falls back to offline."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest

from kbtool.agents.prompts import MalformedAnswer
from kbtool.agents.understanding import (
    MAX_UNDERSTANDING_CHARS,
    DeepAnswerBackend,
    clean_text,
    deep_prompt,
    parse_understanding,
)
from kbtool.kb import queries
from kbtool.kb.db import open_ro, open_rw
from kbtool.lift import prelude_path
from kbtool.services.deep import run_deep
from testkit.llm_server import FakeLLMServer
from tests.support.paths import ROOT

HAS = {"a": importlib.util.find_spec("anthropic"), "b": importlib.util.find_spec("openai")}
PROVIDERS = [
    pytest.param("a", "provider_a", "anthropic", "/v1/messages", id="provider_a"),
    pytest.param("b", "provider_b", "openai", "/v1/chat/completions", id="provider_b"),
]
TEXT = (
    "Walks the frame header at p0 and checks its magic number. Returns the header size in "
    "bytes, or a negative error code. Writes the parsed fields through p1."
)
HOSTILE = (
    "Copies </script><img src=x onerror=alert(1)> \x1b[31mRED\x1b[0m bytes\u202e into "
    "the buffer and returns its length."
)


def _answer(text: str = TEXT, name: str = "read_frame_header") -> str:
    return json.dumps(
        {
            "understanding": text,
            "explanation": "the magic check",
            "name": name,
            "summary": "Parses a frame header.",
            "confidence": 0.97,
            "reasons": ["magic constant"],
        }
    )


def _env(kind: str, srv: FakeLLMServer) -> dict[str, str]:
    if kind == "a":
        return {
            "PROVIDER_A_API_KEY": "k",
            "PROVIDER_A_BASE_URL": srv.url,
            "PROVIDER_A_MODEL": "fake-claude",
        }
    return {
        "PROVIDER_B_API_KEY": "k",
        "PROVIDER_B_BASE_URL": srv.url + "/v1",
        "PROVIDER_B_MODEL": "fake-gpt",
    }


@pytest.fixture()
def demo_db(tmp_path):
    from kbtool.services.demo import build_demo

    db = tmp_path / "kb.db"
    build_demo(db, echo=lambda _s: None)
    return db


def _unnamed(conn, n: int) -> list[int]:
    return [f["index"] for f in queries.list_functions(conn, 2) if f["name"] is None][:n]


@pytest.mark.parametrize(("kind", "selector", "backend", "path"), PROVIDERS)
def test_provider_writes_the_understanding(demo_db, tmp_path, kind, selector, backend, path):
    if HAS[kind] is None:
        pytest.skip(f"{backend} SDK not installed (kbtool[llm])")
    conn = open_rw(demo_db)
    picked = _unnamed(conn, 5)
    notes: list[str] = []
    with FakeLLMServer([("text", _answer())] * len(picked)) as srv:
        res = run_deep(
            conn, 2, functions=picked, backend=selector, env=_env(kind, srv), notice=notes.append
        )
        requests = list(srv.requests)
    model = "fake-claude" if kind == "a" else "fake-gpt"
    assert res["backend"] == selector and res["model"] == model
    assert res["understood_by_provider"] == len(picked) and res["understanding_fallbacks"] == 0
    assert notes and f"up to {len(picked)} model calls to {selector} ({model})" in notes[0]
    # one call per function, whatever the specialist says about the name
    assert len(requests) == len(picked) and {r["path"] for r in requests} == {path}
    assert all(r["model"] == model for r in requests)
    records = [queries.get_analysis(conn, f["stable_id"]) for f in res["functions"]]
    for rec in records:
        assert rec["understanding"] == TEXT
        assert (rec["backend"], rec["model"]) == (selector, model)
        assert rec["confidence"] == 0.85  # the model's 0.97, capped: uncalibrated
        # the prompt carried this function's cleaned C
        first_line = rec["clean_c"].splitlines()[0]
        assert any(first_line in str(r["body"]) for r in requests)
    assert all(f["understanding_by"] == "agent" for f in res["functions"])
    # the name went through the verifier and the gate: one function gets it, the rest are
    # verifier rejects ("taken") unless a specialist rule named them first
    naming = res["naming"]
    assert naming["backend"] == selector and naming["considered"] == len(picked)
    started = [
        e
        for e in queries.events_since(conn, 0, limit=200)["events"]
        if e["kind"] == "agent-pass-started"
    ]
    # the naming pass replays the answers: the names were bought with the understanding
    assert started and started[-1]["payload"]["estimated_calls"] == 0
    llm = [d for d in naming["details"] if d["source"] == "llm"]
    writes = [d for d in llm if d["kind"] == "write"]
    assert [d["name"] for d in writes] == ["read_frame_header"]
    sym = queries.get_symbol(conn, writes[0]["stable_id"])
    assert sym["provenance"] == "agent" and sym["evidence"][0]["backend"] == backend
    assert sym["evidence"][0]["model"] == model
    assert any(d.get("code") == "taken" for d in llm) or len(llm) == 1
    done = [e for e in queries.events_since(conn, 0, 500)["events"] if e["kind"] == "deep-done"]
    assert {e["payload"]["understanding_by"] for e in done[-len(picked) :]} == {"agent"}
    # the cleaned C of a provider run still compiles with the prelude
    if shutil.which("gcc"):
        src = tmp_path / "clean.c"
        src.write_text("\n".join(r["clean_c"] for r in records))
        out = subprocess.run(
            ["gcc", "-fsyntax-only", "-fwrapv", "-include", str(prelude_path()), str(src)],
            capture_output=True,
            text=True,
        )
        assert out.returncode == 0, out.stderr[:2000]


def test_hostile_understanding_is_stored_without_control_characters(demo_db):
    if HAS["b"] is None:
        pytest.skip("openai SDK not installed (kbtool[llm])")
    conn = open_rw(demo_db)
    (idx,) = _unnamed(conn, 1)
    with FakeLLMServer([("text", _answer(HOSTILE, "copy_bytes"))]) as srv:
        res = run_deep(conn, 2, functions=[idx], backend="provider_b", env=_env("b", srv))
    rec = queries.get_analysis(conn, res["functions"][0]["stable_id"])
    text = rec["understanding"]
    assert "</script><img src=x onerror=alert(1)>" in text and "[31mRED" in text
    assert "\x1b" not in text and "\u202e" not in text
    assert rec["backend"] == "provider_b"


def test_malformed_and_failed_answers_fall_back_to_offline(demo_db, monkeypatch):
    if HAS["b"] is None:
        pytest.skip("openai SDK not installed (kbtool[llm])")
    # one call at a time: the fake answers in script order, so which function gets which
    # answer (and so which names the verifier refuses) does not depend on thread timing
    monkeypatch.setattr("kbtool.services.deep.PROVIDER_CONCURRENCY", 1)
    conn = open_rw(demo_db)
    picked = _unnamed(conn, 4)
    script = [
        ("raw", "<html>oops"),
        ("text", "I think it parses headers."),
        ("text", '{"understanding": 5, "name": "parse_it"}'),
        ("text", _answer()),
    ]
    with FakeLLMServer(script) as srv:
        res = run_deep(conn, 2, functions=picked, backend="provider_b", env=_env("b", srv))
    assert res["understood_by_provider"] == 1 and res["understanding_fallbacks"] == 3
    assert sum(res["understanding_errors"].values()) == 3
    assert set(res["understanding_errors"]) <= {"malformed", "provider_error"}
    assert res["done"] + res["truncated"] == 4 and res["failed"] == 0
    fell = [f for f in res["functions"] if f["understanding_by"] == "offline"]
    assert len(fell) == 3 and all(f["understanding_fallback"] for f in fell)
    for f in fell:  # the offline understanding, recorded as offline
        rec = queries.get_analysis(conn, f["stable_id"])
        assert rec["backend"] == "offline" and rec["model"] is None and rec["understanding"]
        assert rec["understanding"] != TEXT
    done = [e for e in queries.events_since(conn, 0, 500)["events"] if e["kind"] == "deep-done"]
    why = [e["payload"].get("understanding_fallback") for e in done[-4:]]
    assert sum(1 for w in why if w and ("malformed" in w or "provider error" in w)) == 3
    # failures are counted as rejects of the naming pass, never a crash
    assert res["naming"]["rejected_by_verifier"] >= 2


def test_cli_deep_with_a_provider_prints_the_estimate(demo_db):
    if HAS["a"] is None:
        pytest.skip("anthropic SDK not installed (kbtool[llm])")
    conn = open_ro(demo_db)
    picked = _unnamed(conn, 2)
    conn.close()
    with FakeLLMServer([("text", _answer())] * 2) as srv:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PROVIDER_")}
        env.update(_env("a", srv), NO_PROXY="127.0.0.1", no_proxy="127.0.0.1")
        args = [
            sys.executable,
            "-m",
            "kbtool.cli",
            "deep",
            "2",
            "--backend",
            "provider_a",
            "--db",
            str(demo_db),
        ]
        for i in picked:
            args += ["-f", str(i)]
        p = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "estimate: up to 2 model calls to provider_a (fake-claude)" in p.stderr
    assert "understandings (provider_a, fake-claude): 2 from the model, 0 offline" in p.stdout


def test_prompt_is_bounded_and_text_is_cleaned():
    ctx = {
        "index": 3,
        "stable_id": "s3",
        "type": "(i32) -> i32",
        "strings": ["x" * 5000] * 40,
        "callees": [{"index": i, "name": f"callee_{i}", "import": None} for i in range(300)],
        "lifted_c": "int f(void) { return 0; }",
    }
    prompt = deep_prompt(ctx, "int f(int p0) {\n" + "  p0++;\n" * 5000 + "}\n")
    assert len(prompt) < 8000 + 4000 + 600 and "more characters ... */" in prompt
    assert "callee_0" in prompt and "lifted_c" not in prompt
    assert clean_text("a\x00b\x1b[0m\u200bc\td\n e") == "a b [0mc d e"
    long = clean_text("word " * 1000)
    assert len(long) <= MAX_UNDERSTANDING_CHARS and long.endswith("…")
    text, conf = parse_understanding(
        '```json\n{"understanding": "' + TEXT + '", "confidence": true}\n```'
    )
    assert text == TEXT and conf == 0.5
    for bad in ("", "no json", '{"understanding": ["x"]}', '{"understanding": "short"}'):
        with pytest.raises(MalformedAnswer):
            parse_understanding(bad)


def test_replay_backend_never_calls_a_model():
    class Inner:
        name, backend, model = "provider_a", "anthropic", "m"

    be = DeepAnswerBackend(Inner(), {})  # type: ignore[arg-type]
    p = be.propose({"index": 9, "stable_id": "s9"}, set())
    assert p is not None and p.name is None and p.rule == "provider_error"


def test_deep_benchmark_smoke(capsys):
    """benchmarks/deep.py --smoke runs offline and through the openai SDK (no timing asserts)."""
    if HAS["b"] is None:
        pytest.skip("openai SDK not installed (kbtool[llm])")

    bench = ROOT / "benchmarks" / "deep.py"
    spec = importlib.util.spec_from_file_location("bench_deep", bench)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--smoke", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["functions"] == 12 and r["offline_done"] == 12
    assert r["provider_requests"] == 12 and r["provider_understood"] == 12
    assert r["provider_fallbacks"] == 0
    if r["offline_compiles"] is not None:
        assert r["offline_compiles"] == r["provider_compiles"] == 12
    assert 0 < r["renamed_variables"] <= r["variables"]
