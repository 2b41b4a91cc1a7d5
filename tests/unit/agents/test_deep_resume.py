"""`kbtool deep --backend provider_b` keeps each answer as it arrives: killed (SIGKILL) half
way and run again, it sends only the prompts that have no answer (real ``openai`` SDK against
the local fake server, `kbtool` in a real subprocess)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_ro
from testkit.llm_server import FakeLLMServer
from tests.support.paths import ROOT

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("openai") is None, reason="the openai SDK is not installed"
)
VID = 2


def _env(srv: FakeLLMServer) -> dict[str, str]:
    return {
        **os.environ,
        "PROVIDER_B_API_KEY": "k",
        "PROVIDER_B_BASE_URL": srv.url + "/v1",
        "PROVIDER_B_MODEL": "fake-gpt",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }


def _deep_cmd(db: Path, functions: list[int]) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "kbtool.cli",
        "deep",
        str(VID),
        "--backend",
        "provider_b",
        "--json",
        "--db",
        str(db),
    ]
    for i in functions:
        cmd += ["-f", str(i)]
    return cmd


def _state(db: Path) -> tuple[int, set[int]]:
    """(deep answers kept, functions with a deep record of the version)."""
    c = open_ro(db)
    try:
        n = c.execute("SELECT COUNT(*) FROM agent_answers WHERE variant = 'deep'").fetchone()[0]
        return n, set(queries.deep_done(c, VID))
    finally:
        c.close()


def _agent_names(db: Path, funcs: list[int]) -> dict[int, str]:
    c = open_ro(db)
    try:
        return {
            f["index"]: f["name"]
            for f in queries.list_functions(c, VID, False)
            if f["index"] in funcs and f["provenance"] == "agent"
        }
    finally:
        c.close()


def test_killed_deep_run_resends_only_unanswered_prompts(demo_kb, tmp_path):
    c = open_ro(demo_kb)
    funcs = [f["index"] for f in queries.list_functions(c, VID, False)][:16]
    c.close()
    whole = Path(shutil.copy(demo_kb, tmp_path / "whole.db"))
    with FakeLLMServer() as srv:  # the same run, never interrupted
        p = subprocess.run(
            _deep_cmd(whole, funcs),
            env=_env(srv),
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=300,
        )
        assert p.returncode == 0, p.stderr[-2000:]
        assert len(srv.requests) == len(funcs)
    cmd = _deep_cmd(demo_kb, funcs)
    with FakeLLMServer(delay=0.15) as srv:
        proc = subprocess.Popen(
            cmd, env=_env(srv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT
        )
        deadline = time.monotonic() + 120
        while len(srv.requests) < 7 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        sent1 = len(srv.requests)
    kept, done = _state(demo_kb)
    assert 0 < kept <= sent1 < len(funcs), (kept, sent1)
    assert len(done & set(funcs)) <= kept  # a record is written only after its answer is kept

    with FakeLLMServer() as srv:
        p = subprocess.run(
            cmd, env=_env(srv), capture_output=True, text=True, cwd=ROOT, timeout=300
        )
        sent2 = len(srv.requests)
    assert p.returncode == 0, p.stderr[-2000:]
    res = json.loads(p.stdout)
    assert sent2 == len(funcs) - kept  # exactly the prompts without a kept answer
    todo = len(funcs) - len(done & set(funcs))
    assert res["understood_by_provider"] == todo  # kept answers replayed, not lost
    kept2, done2 = _state(demo_kb)
    assert kept2 == len(funcs) and set(funcs) <= done2
    # the functions the killed run recorded are named from their kept answers: the same
    # names as the uninterrupted run
    assert _agent_names(demo_kb, funcs) == _agent_names(whole, funcs) != {}
