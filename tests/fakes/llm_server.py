"""A tiny local HTTP server speaking just enough of two LLM APIs for tests and benchmarks.

``POST /v1/messages`` (Anthropic Messages API) and ``POST /v1/chat/completions`` (OpenAI chat
completions). Binds 127.0.0.1 on a free port; never talks to the internet. Each request
consumes the next action of ``script`` (then ``"canned"`` forever):

* ``"canned"``: a well-formed answer whose text is the JSON object the prompt asks for; the
  name comes from the offline proposer run on the facts in the prompt (plumbing, not a model);
* ``("status", code)``: that HTTP error with the API's error body and ``retry-after-ms: 1``;
* ``("raw", text)``: status 200 with a body that is not the API's JSON;
* ``("text", text)``: a well-formed API envelope whose answer text is ``text``;
* ``("sleep", seconds)``: wait, then answer canned (for timeouts).

``requests`` records every request (path, model, body) for assertions.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_FACTS = re.compile(r"Facts about the function \(JSON\):\n(.*?)\n\nAnswer", re.DOTALL)


def canned_answer(prompt: str) -> str:
    """The answer text for a prompt: explanation first, then a name from offline rules."""
    from kbtool.agents.offline import propose_offline

    m = _FACTS.search(prompt)
    ctx = json.loads(m.group(1)) if m else {"index": -1}
    p = propose_offline(ctx, min_confidence=0.0) if m else None
    name = p.name if p else f"fake_named_{ctx.get('index')}"
    return json.dumps(
        {
            "explanation": "canned answer from the fake server",
            "name": name,
            "summary": "canned",
            "confidence": 0.99,
            "reasons": ["canned"],
        }
    )


class FakeLLMServer:
    """Context manager running the fake server in a thread; ``url`` is ``http://127.0.0.1:N``."""

    def __init__(self, script: list[Any] | None = None) -> None:
        self.script = list(script or [])
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                owner._handle(self)

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next(self) -> Any:
        with self._lock:
            return self.script.pop(0) if self.script else "canned"

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        n = int(h.headers.get("content-length") or 0)
        raw = h.rfile.read(n) if n else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {}
        path = h.path.split("?", 1)[0]
        with self._lock:
            self.requests.append({"path": path, "model": body.get("model"), "body": body})
        kind = (
            "messages"
            if path.endswith("/messages")
            else ("chat" if path.endswith("/chat/completions") else None)
        )
        if kind is None:
            return self._send(h, 404, {"error": {"message": "no such route"}})
        action = self._next()
        if isinstance(action, tuple) and action[0] == "sleep":
            time.sleep(float(action[1]))
            action = "canned"
        if isinstance(action, tuple) and action[0] == "status":
            code = int(action[1])
            err = {"type": "error", "error": {"type": "api_error", "message": f"fake {code}"}}
            return self._send(h, code, err, {"retry-after-ms": "1", "retry-after": "0"})
        if isinstance(action, tuple) and action[0] == "raw":
            return self._send_bytes(h, 200, str(action[1]).encode(), "application/json")
        if isinstance(action, tuple) and action[0] == "text":
            text = str(action[1])
        else:
            text = canned_answer(_prompt_of(kind, body))
        model = body.get("model") or "fake-model"
        if kind == "messages":
            payload = {
                "id": "msg_fake",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
        else:
            payload = {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": 0,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": text},
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        return self._send(h, 200, payload)

    def _send(self, h, code: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send_bytes(h, code, json.dumps(obj).encode(), "application/json", headers)

    @staticmethod
    def _send_bytes(h, code, data: bytes, ctype: str, headers=None) -> None:
        h.send_response(code)
        h.send_header("content-type", ctype)
        h.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (timeout test) is expected; other errors still print."""
        import sys

        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


def _prompt_of(kind: str, body: dict[str, Any]) -> str:
    msgs = body.get("messages") or []
    for m in reversed(msgs):
        if m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, list):
                return "".join(part.get("text", "") for part in c if isinstance(part, dict))
            return str(c or "")
    return ""
