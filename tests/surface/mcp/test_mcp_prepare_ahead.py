"""A version's function list prepares it for the code tools in the background (issue 30):
``list_functions`` is how an agent opens a version, and its code is what it reads next.
The preparation waits until no request is in flight (:mod:`kbtool.mcp.idle`): run while
requests are served, it took the GIL from them (a 6 ms call took 50-100 ms on ffmpeg).
The tool's answer and signature are those of the tool it wraps; the real stdio client
still lists and calls it (tests/surface/mcp/test_code_mcp.py)."""

from __future__ import annotations

import inspect
import json
import sys
import threading

import pytest

from kbtool.kb.db import open_ro
from kbtool.mcp import idle, server
from kbtool.services import code
from tests.support.codefixtures import code_kb_fixture  # noqa: F401  (fixture)
from tests.support.stdio_guard import script_process

WAIT = 60.0  # a bound on waiting for the background thread (never reached when it works)


@pytest.fixture(name="activity")
def activity_fixture(monkeypatch):
    """A fresh :class:`idle.Activity` the tools use, quiet after 10 ms."""
    act = idle.Activity()
    monkeypatch.setattr(idle, "ACTIVITY", act)
    monkeypatch.setattr(idle, "when_quiet", act.when_quiet)
    monkeypatch.setattr(idle, "QUIET", 0.01)
    return act


def _list_functions(code_kb):
    spec = next(s for s in server.tool_specs(code_kb, RuntimeError) if s.name == "list_functions")
    return spec, server._prepares_ahead(spec.fn, code_kb)


def test_list_functions_prepares_its_version_once_quiet(code_kb, activity):
    code.clear_cache()
    spec, tool = _list_functions(code_kb)
    assert inspect.signature(tool) == inspect.signature(spec.fn)
    conn = open_ro(code_kb)
    try:
        assert not code.is_cached(conn, 2)
        activity.set_in_flight(1)  # the list_functions request itself, being served
        assert tool(version_id=2) == spec.fn(version_id=2)
        activity.set_in_flight(2)  # the client asks again before it answered
        activity.set_in_flight(1)
        # many quiet periods long, with a request in flight: nothing starts
        threading.Event().wait(0.3)
        assert activity.pending() == 1
        assert not code.is_cached(conn, 2)
        activity.set_in_flight(0)
        done = threading.Event()
        activity.when_quiet("probe", done.set)  # runs after the preparation (one thread)
        assert done.wait(WAIT)
        assert code.is_cached(conn, 2)
    finally:
        conn.close()
        code.clear_cache()


def test_asked_twice_it_prepares_once(code_kb, activity):
    calls: list[int] = []
    activity.set_in_flight(1)
    for _ in range(3):
        activity.when_quiet("same", lambda: calls.append(1))
    assert activity.pending() == 1
    done = threading.Event()
    activity.when_quiet("probe", done.set)
    activity.set_in_flight(0)
    assert done.wait(WAIT)
    assert calls == [1]
    assert sys.getswitchinterval() == pytest.approx(0.005)  # put back after the work


_ECHO_SERVER = r"""
import json, sys
from kbtool.mcp import linebound
from kbtool.mcp.idle import ACTIVITY
with linebound.guarded_stdio():
    for line in sys.stdin:
        msg = json.loads(line)
        answer = {"jsonrpc": "2.0", "id": msg["id"], "result": {"seen": ACTIVITY.in_flight}}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
"""


def test_the_stdio_guard_counts_the_requests_in_flight():
    """What the server sees while it serves a request: one in flight (two at most, when the
    guard has not yet seen the previous answer go out), never a growing count."""
    proc = script_process(_ECHO_SERVER)
    try:
        seen = []
        for i in range(6):
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": "ping"}).encode())
            proc.stdin.write(b"\n")
            proc.stdin.flush()
            answer = json.loads(proc.stdout.readline())
            assert answer["id"] == i
            seen.append(answer["result"]["seen"])
        assert all(s in (1, 2) for s in seen), seen
    finally:
        proc.stdin.close()
        proc.wait(timeout=WAIT)


_UNANSWERED_SERVER = r"""
import json, sys
from kbtool.mcp import linebound
from kbtool.mcp.idle import ACTIVITY
with linebound.guarded_stdio():
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("id") == 2:  # request 1 is never answered, as a cancelled one may not be
            answer = {"jsonrpc": "2.0", "id": 2, "result": {"seen": ACTIVITY.in_flight}}
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
"""


def test_a_cancelled_request_is_no_longer_counted_in_flight():
    """Else background work would wait for an answer that never comes."""
    proc = script_process(_UNANSWERED_SERVER)
    try:
        lines = [
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
            {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        ]
        for msg in lines:
            proc.stdin.write(json.dumps(msg).encode() + b"\n")
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        assert answer == {"jsonrpc": "2.0", "id": 2, "result": {"seen": 1}}
    finally:
        proc.stdin.close()
        try:  # at end of input the guard waits for the answers still due: none is
            proc.wait(timeout=WAIT)
        finally:
            proc.kill()
