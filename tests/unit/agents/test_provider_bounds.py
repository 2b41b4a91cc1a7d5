"""Provider calls have a total deadline and a maximum response size (issue #24.6), through the
real ``anthropic`` / ``openai`` SDKs against servers on 127.0.0.1: one trickles its body a
byte at a time (each read is quick, the whole never ends in time), one sends a body over
the limit (with and without ``content-length``)."""

from __future__ import annotations

import importlib.util
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from kbtool.agents.backends import resolve_backend
from kbtool.agents.rounds import run_round
from kbtool.agents.sdk_client import (
    DeadlineExceeded,
    ResponseTooLarge,
    bounds_from_env,
)

needs_a = pytest.mark.skipif(importlib.util.find_spec("anthropic") is None, reason="anthropic")
needs_b = pytest.mark.skipif(importlib.util.find_spec("openai") is None, reason="openai")
PROVIDERS = [pytest.param("a", marks=needs_a), pytest.param("b", marks=needs_b)]
CTX = {
    "index": 12,
    "stable_id": "s12",
    "type": "(i32) -> i32",
    "strings": ["x"],
    "callees": [],
    "callers": [],
    "mnemonics": ["i32.add", "end"],
}


def _answer(path: str) -> bytes:
    text = json.dumps(
        {
            "explanation": "e",
            "name": "parse_thing",
            "summary": "s",
            "confidence": 0.9,
            "reasons": ["r"],
        }
    )
    if path.endswith("/messages"):
        body = {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "model": "x",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    else:
        body = {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "x",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": text},
                }
            ],
        }
    return json.dumps(body).encode()


class Server:
    """``mode``: ``trickle`` (a valid answer, one byte every ``gap`` seconds), ``big`` (a
    valid answer padded to ``size`` bytes, with content-length) or ``big-chunked`` (the same
    size, chunked, no content-length)."""

    def __init__(self, mode: str, *, gap: float = 0.25, size: int = 0) -> None:
        self.mode, self.gap, self.size = mode, gap, size
        self.requests = 0
        self.bytes_sent = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("content-length") or 0))
                owner.requests += 1
                try:
                    owner.answer(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def answer(self, h: BaseHTTPRequestHandler) -> None:
        body = _answer(h.path)
        if self.mode.startswith("big"):
            body = body + b" " * max(0, self.size - len(body))  # JSON allows trailing spaces
        h.send_response(200)
        h.send_header("content-type", "application/json")
        if self.mode == "big-chunked":
            h.send_header("transfer-encoding", "chunked")
            h.end_headers()
            for i in range(0, len(body), 65536):
                part = body[i : i + 65536]
                h.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                self.bytes_sent += len(part)
            h.wfile.write(b"0\r\n\r\n")
            return
        h.send_header("content-length", str(len(body)))
        h.end_headers()
        if self.mode == "trickle":
            for i in range(len(body)):
                h.wfile.write(body[i : i + 1])
                h.wfile.flush()
                self.bytes_sent += 1
                time.sleep(self.gap)
        else:
            h.wfile.write(body)

    def __enter__(self) -> Server:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _client(kind: str, srv: Server, **kw: Any) -> Any:
    env = (
        {"PROVIDER_A_API_KEY": "k", "PROVIDER_A_BASE_URL": srv.url}
        if kind == "a"
        else {"PROVIDER_B_API_KEY": "k", "PROVIDER_B_BASE_URL": srv.url + "/v1"}
    )
    if kind == "a":
        from kbtool.agents.provider_a import MessagesClient

        return MessagesClient(env, **kw)
    from kbtool.agents.provider_b import ChatClient

    return ChatClient(env, **kw)


@pytest.mark.parametrize("kind", PROVIDERS)
def test_a_trickling_server_is_cut_at_the_deadline(kind):
    # every read returns within 0.25 s, so a per-read timeout never fires: only a total
    # deadline ends the call
    with Server("trickle", gap=0.25) as srv:
        client = _client(kind, srv, timeout=1.5, max_retries=2)
        with pytest.raises(DeadlineExceeded) as err:
            client.complete("system", "user")
        assert err.value.kind == "deadline"
        assert srv.requests == 1  # no retry after the deadline
        sent = srv.bytes_sent
    assert sent < len(_answer("/v1/messages"))  # the answer never completed


@pytest.mark.parametrize("kind", PROVIDERS)
@pytest.mark.parametrize("mode", ["big", "big-chunked"])
def test_an_oversized_body_is_refused(kind, mode):
    with Server(mode, size=3 * 1024 * 1024) as srv:
        client = _client(kind, srv, max_bytes=1024 * 1024, max_retries=2)
        with pytest.raises(ResponseTooLarge) as err:
            client.complete("system", "user")
        assert err.value.kind == "size" and srv.requests == 1  # not retried


@pytest.mark.parametrize("kind", PROVIDERS)
def test_a_body_within_the_limit_answers(kind):
    with Server("big", size=200_000) as srv:
        client = _client(kind, srv, max_bytes=1024 * 1024)
        assert json.loads(client.complete("s", "u"))["name"] == "parse_thing"


@pytest.mark.parametrize("kind", PROVIDERS)
def test_a_cut_call_is_a_provider_error_reject_in_a_pass(kind):
    with Server("trickle", gap=0.25) as srv:
        env = (
            {"PROVIDER_A_API_KEY": "k", "PROVIDER_A_BASE_URL": srv.url}
            if kind == "a"
            else {"PROVIDER_B_API_KEY": "k", "PROVIDER_B_BASE_URL": srv.url + "/v1"}
        )
        env["KBTOOL_AGENT_TIMEOUT"] = "1"
        be = resolve_backend("provider_a" if kind == "a" else "provider_b", env)
        (rv,) = run_round(be, [CTX], set())
    assert rv.verdict.code == "provider_error" and "DeadlineExceeded" in rv.proposal.error


def test_bounds_from_the_environment():
    assert bounds_from_env({}) == (120.0, 4 * 1024 * 1024)
    assert bounds_from_env({"KBTOOL_AGENT_TIMEOUT": "2.5", "KBTOOL_AGENT_MAX_BYTES": "1000"}) == (
        2.5,
        1000,
    )
    for bad in (
        {"KBTOOL_AGENT_TIMEOUT": "soon"},
        {"KBTOOL_AGENT_MAX_BYTES": "-1"},
        {"KBTOOL_AGENT_TIMEOUT": "0"},
    ):
        with pytest.raises(ValueError) as err:
            bounds_from_env(bad)
        assert "\n" not in str(err.value) and "positive number" in str(err.value)
